"""The API's one pagination: ``?limit=&offset=`` with bounds a database can honour."""

from __future__ import annotations

from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination

MAX_LIMIT = 200
MAX_OFFSET = 1_000_000_000


class Page(LimitOffsetPagination):
    """``{"items": [...], "count": total}``; newest first (the models' default ordering)."""

    class Input(Schema):
        limit: int = Field(50, ge=1, le=MAX_LIMIT)
        offset: int = Field(0, ge=0, le=MAX_OFFSET)

    def __init__(self, **kwargs) -> None:
        super().__init__(max_limit=MAX_LIMIT, **kwargs)
