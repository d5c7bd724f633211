"""``/api/costs``: tokens and cost summed per repository and per day, from the daily rollup
(``reporting.dashboard``), over the repositories the caller may read runs of."""

from __future__ import annotations

from datetime import date

from django.http import HttpRequest
from ninja import Field, Query, Schema
from pydantic import model_validator

from access.auth import READ_RUNS
from access.routes import ApiRouter
from reporting import dashboard
from runs.api_schemas import NO_CONTROL

MAX_DAYS = 366
RANGE_BACKWARDS = "from: must be on or before to"
RANGE_TOO_LONG = f"from: a range is at most {MAX_DAYS} days; ask for several"

router = ApiRouter(tags=["costs"])


class CostFilters(Schema):
    repository: str | None = Field(
        None, max_length=200, pattern=NO_CONTROL, description="owner/name (default: all)"
    )
    from_: date | None = Field(
        None, alias="from", description="First UTC day (default: 29 days before `to`)."
    )
    to: date | None = Field(None, description="Last UTC day (default: today).")

    @model_validator(mode="after")
    def _range(self):
        self.to = self.to or dashboard.window()[1]
        self.from_ = self.from_ or dashboard.window(today=self.to)[0]
        if self.from_ > self.to:
            raise ValueError(RANGE_BACKWARDS)
        if (self.to - self.from_).days >= MAX_DAYS:
            raise ValueError(RANGE_TOO_LONG)
        return self


class CostDayOut(Schema):
    repository: str
    day: date
    runs: int = Field(description="Runs that ended that day (UTC).")
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float = Field(description="Of the runs whose every model has a known price.")
    runs_cost_unknown: int = Field(description="Runs left out of cost_usd: a model unpriced.")


class CostsOut(Schema):
    from_: date = Field(alias="from")
    to: date
    days: list[CostDayOut]
    total: CostDayOut | None = Field(description="All the days (repository '*'); null if none.")


OUT = [name for name in CostDayOut.model_fields if name not in ("repository", "day")]


def _row(row: dict, repository: str, day: date) -> dict:
    return {"repository": repository, "day": day, **{n: row[f"{n}_sum"] for n in OUT}}


@router.read(
    "",
    CostsOut,
    READ_RUNS,
    url_name="costs",
    summary="Costs per repository and day",
    by_alias=True,
)
def get_costs(request: HttpRequest, filters: Query[CostFilters]):
    """Tokens the vendors reported and their cost in USD, per repository and UTC day the runs
    ended, oldest first; only repositories the caller may read runs of."""
    ids = request.auth.repository_ids(READ_RUNS)
    rows = dashboard.by_repository_day(ids, filters.from_, filters.to, filters.repository)
    days = [_row(row, row["repository_name"], row["day"]) for row in rows]
    total = None
    if rows:
        summed = {key: sum(row[key] for row in rows) for key in rows[0] if key.endswith("_sum")}
        total = _row(summed, "*", filters.to)
    return {"from": filters.from_, "to": filters.to, "days": days, "total": total}
