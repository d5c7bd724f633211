"""The API's one pagination: newest first, by an opaque ``cursor`` (keyset) or, for older
clients, ``?limit=&offset=``.

``{"items": [...], "count": n, "count_exact": bool, "next_cursor": str | null}``. Pass
``next_cursor`` back as ``?cursor=`` for the next page: the page starts right after the last
item seen, by ``(created_at, primary key)``, so it costs the same at page 1 and page 20,000,
and rows added meanwhile neither shift nor repeat items. ``count`` is exact up to
``amtp_site.lists.EXACT_COUNT_UP_TO`` rows and PostgreSQL's estimate above (``count_exact``).
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from datetime import UTC

from django.db.models import Q, QuerySet
from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination
from pydantic import AwareDatetime, BaseModel, ConfigDict, ValidationError

from amtp_site import lists
from amtp_site.problems import Problem, field_error

MAX_LIMIT = 200
MAX_OFFSET = 1_000_000_000
MAX_CURSOR_LENGTH = 200
BAD_CURSOR = "not a cursor this API gave out (pass next_cursor back unchanged)"
CURSOR_AND_OFFSET = "give either cursor or offset, not both"


class Position(BaseModel):
    """What a cursor holds: the last item's creation time and key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    t: AwareDatetime
    k: uuid.UUID

    def encode(self) -> str:
        text = json.dumps({"t": self.t.isoformat(), "k": str(self.k)}, separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, cursor: str) -> Position:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            position = cls.model_validate_json(raw)
            return cls(t=position.t.astimezone(UTC), k=position.k)
        except (binascii.Error, ValueError, ValidationError, OverflowError) as exc:
            raise _problem("cursor", BAD_CURSOR) from exc


def _problem(field: str, detail: str) -> Problem:
    return Problem(
        422,
        "validation-error",
        f"{field}: {detail}",
        errors=[field_error(field, detail, location="query", type="invalid")],
    )


class Page(LimitOffsetPagination):
    """Keyset pagination on ``(created_at, pk)``, newest first; offsets kept for old clients."""

    KEY = "created_at"

    class Input(Schema):
        limit: int = Field(50, ge=1, le=MAX_LIMIT)
        offset: int = Field(
            0, ge=0, le=MAX_OFFSET, description="Deprecated: use cursor (slow on deep pages)."
        )
        cursor: str | None = Field(
            None,
            min_length=1,
            max_length=MAX_CURSOR_LENGTH,
            pattern=r"^[A-Za-z0-9_-]+$",
            description="The previous page's next_cursor: the page after it.",
        )

    class Output(Schema):
        items: list
        count: int = Field(description="Exact up to 1,000; above, PostgreSQL's estimate.")
        count_exact: bool = Field(description="False when count is an estimate.")
        next_cursor: str | None = Field(
            description="Pass as ?cursor= for the next page; null on the last page."
        )

    def __init__(self, **kwargs) -> None:
        super().__init__(max_limit=MAX_LIMIT, **kwargs)

    def paginate_queryset(self, queryset: QuerySet, pagination: Input, request, **params):
        key = self.KEY
        queryset = queryset.order_by(f"-{key}", "-pk")
        total, exact = lists.count(queryset)
        limit, offset = pagination.limit, pagination.offset
        if pagination.cursor is not None:
            if offset:
                raise _problem("offset", CURSOR_AND_OFFSET)
            after = Position.decode(pagination.cursor)
            queryset = queryset.filter(
                Q(**{f"{key}__lt": after.t}) | Q(**{key: after.t, "pk__lt": after.k}),
                **{f"{key}__lte": after.t},  # lets the index start at the cursor
            )
        items = list(lists.page(queryset, offset, limit + 1))
        last = items[limit - 1] if len(items) > limit else None
        return {
            "items": items[:limit],
            "count": total,
            "count_exact": exact,
            "next_cursor": Position(t=getattr(last, key), k=last.pk).encode() if last else None,
        }
