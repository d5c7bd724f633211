"""The dashboard's figures and ``/api/costs``' sums, read from the daily rollups only
(``run_days``, ``stage_days``: ``reporting.models``), so they cost the same at a thousand
runs as at a million: a few thousand rollup rows for 30 days of 50 repositories.

Every read takes the repository ids the caller may see (``repositories.access``; None: all),
so nobody sees another repository's runs in a sum. Days are UTC days on which runs ended.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from django.db.models import F, Sum
from django.utils import timezone

from reporting.models import RunDay, StageDay
from runs.models import RunStatus, StageName

DAYS = 30
ENDED = (RunStatus.PASSED, RunStatus.FAILED, RunStatus.CANCELLED)
BUCKET_BASE = 1.25  # stage_days' buckets: (1.25^(b-1), 1.25^b] seconds
SUMS = (
    "runs",
    "duration_s",
    "cost_usd",
    "runs_cost_unknown",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "tests",
    "tests_first_attempt",
    "tests_passed",
)


def window(days: int = DAYS, today: date | None = None) -> tuple[date, date]:
    """The last ``days`` UTC days, today included."""
    end = today or timezone.now().date()
    return end - timedelta(days=days - 1), end


def _visible(queryset, ids):
    return queryset if ids is None else queryset.filter(repository_id__in=sorted(ids))


def _sums(queryset, *keys: str) -> list[dict]:
    return list(
        queryset.values(*keys).order_by(*keys).annotate(**{f"{n}_sum": Sum(n) for n in SUMS})
    )


def by_day(ids, start: date, end: date) -> list[dict]:
    """Per day and status: every sum of run_days."""
    days = _visible(RunDay.objects.filter(day__range=(start, end)), ids)
    return _sums(days, "day", "status")


def by_repository_day(ids, start: date, end: date, repository: str | None = None) -> list[dict]:
    """Per repository and day (all statuses): runs, tokens and cost."""
    days = _visible(RunDay.objects.filter(day__range=(start, end)), ids)
    if repository is not None:
        days = days.filter(repository__full_name=repository)
    return _sums(
        days.annotate(repository_name=F("repository__full_name")), "repository_name", "day"
    )


def percentile(buckets: list[tuple[int, int]], q: float) -> float | None:
    """The ``q`` quantile (seconds) of a histogram [(bucket, count)] in bucket order: the
    geometric middle of the bucket it falls in."""
    total = sum(count for _, count in buckets)
    if not total:
        return None
    rank, seen = math.ceil(q * total), 0
    for bucket, count in buckets:
        seen += count
        if seen >= rank:
            return BUCKET_BASE ** (bucket - 0.5)
    return None  # not reached: seen ends at total


def stage_durations(ids, start: date, end: date) -> list[dict]:
    """Per stage in pipeline order: how many ended (passed or failed), p50 and p95 seconds."""
    stages = StageDay.objects.filter(day__range=(start, end))
    stages = stages.filter(repository=None) if ids is None else _visible(stages, ids)
    found: dict[str, list[tuple[int, int]]] = {}
    for row in (
        stages.values("stage", "bucket").order_by("stage", "bucket").annotate(n=Sum("stages"))
    ):
        found.setdefault(row["stage"], []).append((row["bucket"], row["n"]))
    return [
        {
            "stage": stage,
            "label": stage.label,
            "count": sum(n for _, n in found.get(stage, [])),
            "p50": percentile(found.get(stage, []), 0.5),
            "p95": percentile(found.get(stage, []), 0.95),
        }
        for stage in StageName
    ]


@dataclass
class Day:
    day: date
    runs: dict[str, int]  # per ended status
    tests: int = 0
    first_attempt: int = 0
    passed: int = 0
    cost_usd: Decimal = Decimal(0)
    runs_costed: int = 0  # runs whose cost is known
    runs_cost_unknown: int = 0

    @property
    def first_attempt_rate(self) -> float | None:
        return self.first_attempt / self.tests if self.tests else None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.tests if self.tests else None

    @property
    def cost_per_run(self) -> Decimal | None:
        return self.cost_usd / self.runs_costed if self.runs_costed else None


def days(ids, start: date, end: date) -> list[Day]:
    """Each day of the window (empty ones too), oldest first."""
    table = {
        start + timedelta(days=i): Day(start + timedelta(days=i), dict.fromkeys(ENDED, 0))
        for i in range((end - start).days + 1)
    }
    for row in by_day(ids, start, end):
        day = table[row["day"]]
        day.runs[row["status"]] = row["runs_sum"]
        day.tests += row["tests_sum"]
        day.first_attempt += row["tests_first_attempt_sum"]
        day.passed += row["tests_passed_sum"]
        day.cost_usd += row["cost_usd_sum"]
        day.runs_costed += row["runs_sum"] - row["runs_cost_unknown_sum"]
        day.runs_cost_unknown += row["runs_cost_unknown_sum"]
    return list(table.values())


def by_repository(ids, start: date, end: date) -> list[dict]:
    """Per repository over the window (all statuses): runs, tokens and cost."""
    days = _visible(RunDay.objects.filter(day__range=(start, end)), ids)
    return _sums(days.annotate(repository_name=F("repository__full_name")), "repository_name")
