"""A repository's test health: the counts of each ended run's verification report over time,
its last maintenance runs, the oldest test still quarantined and the flakiest tests. Read from
``run_health`` (one small row per run, filled by PostgreSQL as runs end: ``reporting.models``),
never from the report blobs, and bounded: the newest ``MAX_POINTS`` runs of the last
``WINDOW_DAYS`` days, whatever the repository's history holds.

A test is one (file, title). Its state follows the newest run that ran it: ``quarantined``
puts it in quarantine, ``passed``, ``flaky`` or ``healed`` take it out; ``skipped`` (how
Playwright reports a ``test.fixme``, which is what a quarantined test becomes once its pull
request is merged) and ``failed`` (a check run quarantines nothing) leave it as it was. A
maintenance run re-verifies every test the repository holds, so a quarantined test missing from
one has been deleted. Quarantined "since" is the first run of the current quarantine; when that
is the window's first run and older runs exist, it is "at least" since then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils import timezone

from reporting.models import RunHealth
from repositories.models import Repository
from runs.models import Run, RunKind

WINDOW_DAYS = 90
MAX_POINTS = 200
MAX_FLAKY = 20
MAX_MAINTENANCE = 10
PASSING = ("passed", "flaky", "healed")
COUNTS = ("tests", "passed", "flaky", "healed", "quarantined", "failed", "skipped")


@dataclass(frozen=True)
class Point:
    run_id: str
    kind: str
    finished_at: datetime
    tests: int
    passed: int
    flaky: int
    healed: int
    quarantined: int
    failed: int
    skipped: int

    @property
    def passing(self) -> int:
        """Passed as written, on the first attempt or on a retry."""
        return self.passed + self.flaky


@dataclass(frozen=True)
class Quarantined:
    file: str
    title: str
    since: datetime
    at_least: bool  # quarantined before the window's first run, too
    reason: str
    run_id: str  # the run that quarantined it first


@dataclass(frozen=True)
class Flaky:
    file: str
    title: str
    times: int  # runs in which it passed only on a retry
    runs: int  # runs that ran it (not skipped)
    last_seen: datetime


@dataclass
class Health:
    repository: str
    since: datetime
    points: list[Point] = field(default_factory=list)
    maintenance: list[Run] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)  # oldest first
    flaky: list[Flaky] = field(default_factory=list)

    @property
    def oldest_quarantined(self) -> Quarantined | None:
        return self.quarantined[0] if self.quarantined else None


def _points(repository: Repository, since: datetime) -> tuple[list[Point], list[list]]:
    rows = (
        RunHealth.objects.filter(repository=repository, finished_at__gte=since)
        .order_by("-finished_at", "-run_id")
        .values_list("run_id", "kind", "finished_at", *COUNTS, "outcomes")[:MAX_POINTS]
    )
    rows = list(reversed(rows))
    points = [Point(str(row[0]), *row[1:-1]) for row in rows]
    return points, [_well_formed(row[-1]) for row in rows]


def _quarantine(points: list[Point], outcomes: list[list], older: bool) -> list[Quarantined]:
    held: dict[tuple[str, str], Quarantined] = {}
    for point, tests in zip(points, outcomes, strict=True):
        seen = set()
        for file, title, status, reason in tests:
            key = (file, title)
            seen.add(key)
            if status == "quarantined":
                first = held.get(key)
                since = first.since if first else point.finished_at
                run_id = first.run_id if first else point.run_id
                at_least = older and since == points[0].finished_at
                held[key] = Quarantined(file, title, since, at_least, reason, run_id)
            elif status in PASSING:
                held.pop(key, None)
        if point.kind == RunKind.MAINTENANCE:
            held = {key: q for key, q in held.items() if key in seen}
    return sorted(held.values(), key=lambda q: (q.since, q.file, q.title))


def _flaky(points: list[Point], outcomes: list[list]) -> list[Flaky]:
    times: dict[tuple[str, str], int] = {}
    runs: dict[tuple[str, str], int] = {}
    last: dict[tuple[str, str], datetime] = {}
    for point, tests in zip(points, outcomes, strict=True):
        for file, title, status, _ in tests:
            key = (file, title)
            if status != "skipped":
                runs[key] = runs.get(key, 0) + 1
            if status == "flaky":
                times[key] = times.get(key, 0) + 1
                last[key] = point.finished_at
    ranked = sorted(times, key=lambda k: (-times[k], -last[k].timestamp(), k))
    return [Flaky(k[0], k[1], times[k], runs[k], last[k]) for k in ranked[:MAX_FLAKY]]


def _well_formed(tests) -> list[list]:
    """One run's outcomes as [file, title, status, reason] of text; anything else dropped
    (PostgreSQL writes the table from the contract's fields, but it is still data)."""
    if type(tests) is not list:
        return []
    return [
        o
        for o in tests
        if type(o) is list
        and len(o) == 4
        and type(o[0]) is str
        and type(o[1]) is str
        and type(o[2]) is str
        and type(o[3]) is str
    ]


def maintenance_runs(repository: Repository) -> list[Run]:
    """The repository's newest maintenance runs, finished or not, with what their rows show."""
    return list(
        Run.objects.filter(repository=repository, kind=RunKind.MAINTENANCE)
        .order_by("-created_at", "-run_id")
        .only("run_id", "status", "trigger", "created_at", "finished_at", "pr_url", "pr_number")[
            :MAX_MAINTENANCE
        ]
    )


def repository_health(repository: Repository, *, now: datetime | None = None) -> Health:
    """The repository's health over the window ending ``now``: three bounded queries."""
    since = (now or timezone.now()) - timedelta(days=WINDOW_DAYS)
    points, outcomes = _points(repository, since)
    older = bool(points) and (
        RunHealth.objects.filter(
            repository=repository, finished_at__lt=points[0].finished_at
        ).exists()
    )
    return Health(
        repository=repository.full_name,
        since=since,
        points=points,
        maintenance=maintenance_runs(repository),
        quarantined=_quarantine(points, outcomes, older),
        flaky=_flaky(points, outcomes),
    )
