"""Lists that stay fast on big tables (1,000,000 runs): counts that never scan the whole
table, pages that do not read the rows they skip, and an admin search an index can answer.

- ``count``: exact up to ``EXACT_COUNT_UP_TO`` rows (a ``COUNT`` over a ``LIMIT``ed subquery,
  so it reads at most that many index entries), PostgreSQL's planner estimate above it.
- ``page``: ``OFFSET`` in a subquery of primary keys only (an index-only scan), then the page's
  rows by key (a "deferred join").
- ``EstimatedCountPaginator``: both, for the admin's change lists.
- ``PrefixSearchMixin``: admin search by the start of a text column (a ``text_pattern_ops``
  index on ``UPPER(column)``) or of a UUID (a range of the key's own index).
"""

from __future__ import annotations

import json
import uuid
from functools import cached_property

from django.core.paginator import EmptyPage, PageNotAnInteger, Paginator
from django.db import connections
from django.db.models import Q, QuerySet
from django.utils.text import smart_split, unescape_string_literal

EXACT_COUNT_UP_TO = 1_000  # a search reads up to this many rows to count them
HEX = frozenset("0123456789abcdef")


def estimated_count(queryset: QuerySet) -> int:
    """The planner's row estimate for ``queryset`` (``EXPLAIN``: for an unfiltered table it
    is ``pg_class.reltuples`` scaled to the table's current size)."""
    sql, params = queryset.order_by().values("pk").query.sql_with_params()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return int(plan[0]["Plan"]["Plan Rows"])


def count(queryset: QuerySet, exact_up_to: int | None = None) -> tuple[int, bool]:
    """``(rows, exact)``: exact when there are at most ``exact_up_to`` rows, else the
    planner's estimate (never below ``exact_up_to + 1``)."""
    bound = EXACT_COUNT_UP_TO if exact_up_to is None else exact_up_to
    rows = queryset.order_by().values("pk")[: bound + 1].count()
    if rows <= bound:
        return rows, True
    return max(estimated_count(queryset), bound + 1), False


def page(queryset: QuerySet, offset: int, limit: int) -> QuerySet:
    """Rows ``offset`` to ``offset + limit`` of the ordered ``queryset``, found in a subquery
    of keys first (an index-only scan of an index ending in the key and including the other
    filters' columns), so the rows skipped or filtered out are never read."""
    keys = queryset.values("pk")[offset : offset + limit]
    return queryset.filter(pk__in=keys)


class EstimatedCountPaginator(Paginator):
    """The admin's paginator without ``COUNT(*)`` over a big table: ``count`` is exact up to
    ``EXACT_COUNT_UP_TO`` and estimated above (``count_exact`` says which; the pagination
    template writes "about"), and deep pages use ``page``."""

    @cached_property
    def _counted(self) -> tuple[int, bool]:
        return count(self.object_list)

    @cached_property
    def count(self) -> int:
        return self._counted[0]

    @property
    def count_exact(self) -> bool:
        return self._counted[1]

    def validate_number(self, number):
        """Beyond an estimated count there may still be rows: any page number from 1 is valid (an empty page past the last row)."""
        if self.count_exact:
            return super().validate_number(number)
        number = self._int(number)
        if number < 1:
            raise EmptyPage(self.error_messages["min_page"])
        return number

    def _int(self, number) -> int:
        try:
            return int(number)
        except (TypeError, ValueError) as exc:
            raise PageNotAnInteger(self.error_messages["invalid_page"]) from exc

    def page(self, number):
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        # No clamping to an estimated count: a page is whatever rows are there.
        return self._get_page(page(self.object_list, bottom, self.per_page), number, self)


def uuid_prefix_range(term: str) -> tuple[uuid.UUID, uuid.UUID] | None:
    """The UUIDs that start with ``term`` (hex digits, dashes ignored), or None."""
    digits = term.replace("-", "").lower()
    if not 4 <= len(digits) <= 32 or not set(digits) <= HEX:
        return None
    return uuid.UUID(digits.ljust(32, "0")), uuid.UUID(digits.ljust(32, "f"))


class PrefixSearchMixin:
    """Admin search where every word must start one of ``search_fields`` (case-insensitive)
    or one of the UUIDs of ``uuid_search_fields``. ``icontains`` cannot use a B-tree index
    and scans the whole table; a prefix can (see the ``*_upper`` indexes)."""

    uuid_search_fields: tuple[str, ...] = ()

    def get_search_results(self, request, queryset, search_term):
        for word in smart_split(search_term):
            if word[:1] in "\"'" and word[-1:] == word[:1] and len(word) > 1:
                word = unescape_string_literal(word)
            match = Q()
            for field in self.get_search_fields(request):
                match |= Q(**{f"{field}__istartswith": word})
            span = uuid_prefix_range(word)
            for field in self.uuid_search_fields if span else ():
                match |= Q(**{f"{field}__range": span})
            queryset = queryset.filter(match)
        return queryset, False
