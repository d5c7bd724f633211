"""The indexes that keep big lists fast (amtp_site.lists): one per filter, in page order."""

from __future__ import annotations

from django.contrib.postgres.indexes import OpClass
from django.db import models
from django.db.models.functions import Upper


def newest_first(
    table: str, key: str, *columns: str | None, include: tuple[str, ...] = ()
) -> list[models.Index]:
    """``(column, created_at DESC, key DESC) INCLUDE (include...)`` per column (None: no
    column): a filtered list, its deep pages and its cursor pages read the index in page
    order, and a second filter on an included column is checked in the index itself (an
    index-only scan of keys, amtp_site.lists.page), without reading the rows it rejects."""
    return [
        models.Index(
            fields=[*([column] if column else []), "-created_at", f"-{key}"],
            include=[name for name in include if name != column],
            name=f"{table}_{column or 'newest'}_page"[:30],
        )
        for column in columns
    ]


def prefix_search(table: str, *columns: str) -> list[models.Index]:
    """``UPPER(column) text_pattern_ops`` (PostgreSQL stores it as ``upper(column::text)``,
    the expression of Django's ``istartswith``): answers the admin search."""
    return [
        models.Index(
            OpClass(Upper(column), name="text_pattern_ops"),
            name=f"{table}_{column}_prefix"[:30],
        )
        for column in columns
    ]
