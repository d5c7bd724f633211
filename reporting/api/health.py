"""``/api/repositories/{owner}/{name}/health``: the figures of the repository's health page
(``reporting.health``), for whoever may read the repository's runs. A repository the caller may not
see answers 404, word for word as one that is not registered."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.http import HttpRequest
from ninja import Field, Path, Schema

from access.auth import READ_RUNS
from access.routes import ApiRouter
from amtp_site.problems import Problem
from reporting import health
from repositories.models import Repository

PART = r"^[A-Za-z0-9_.-]+$"  # one side of owner/name (repositories.names)
NOT_REGISTERED = "repository {name!r} is not registered in AMTP"

router = ApiRouter(tags=["repositories"])


class PointOut(Schema):
    run_id: uuid.UUID
    kind: str = Field(description="generation, maintenance or check")
    finished_at: datetime
    tests: int = Field(description="Tests in the run's verification report, skipped ones too.")
    passing: int = Field(description="Passed as written: passed + flaky.")
    passed: int = Field(description="Passed at the first try.")
    flaky: int = Field(description="Passed only on a retry.")
    healed: int = Field(description="Passed after AMTP repaired the test once.")
    quarantined: int = Field(description="Still failing after the repair: fixme or dropped.")
    failed: int = Field(description="Still failing in a run that quarantines nothing (a check).")
    skipped: int = Field(description="Skipped by the test itself (test.fixme, test.skip).")


class MaintenanceRunOut(Schema):
    run_id: uuid.UUID
    status: str
    trigger: str
    created_at: datetime
    finished_at: datetime | None
    pr_url: str = Field(description="The maintenance pull request; empty when none was opened.")


class RepositoryTestOut(Schema):
    """A test of the repository: the file it is in and its title."""

    file: str
    title: str


class QuarantinedOut(RepositoryTestOut):
    since: datetime = Field(description="The end of the run that quarantined it first.")
    at_least: bool = Field(description="It was quarantined before the window, too.")
    reason: str
    run_id: uuid.UUID = Field(description="The run that quarantined it first.")


class FlakyOut(RepositoryTestOut):
    times: int = Field(description="Runs in which it passed only on a retry.")
    runs: int = Field(description="Runs that ran it (not skipped).")
    last_seen: datetime


class HealthOut(Schema):
    repository: str
    since: datetime = Field(description=f"Start of the window: {health.WINDOW_DAYS} days.")
    points: list[PointOut] = Field(
        description=f"One per ended run with a verified report, oldest first; the newest "
        f"{health.MAX_POINTS} at most."
    )
    maintenance_runs: list[MaintenanceRunOut] = Field(
        description=f"The newest {health.MAX_MAINTENANCE} maintenance runs, newest first."
    )
    quarantined_now: int = Field(description="Tests still quarantined.")
    oldest_quarantined: QuarantinedOut | None = Field(
        description="The test quarantined the longest that still is; null if none."
    )
    flaky: list[FlakyOut] = Field(
        description=f"Most often flaky first; {health.MAX_FLAKY} at most."
    )


def _visible(request: HttpRequest, full_name: str) -> Repository:
    repositories = request.auth.restrict(Repository.objects.all(), READ_RUNS, via="pk")
    found = repositories.filter(full_name=full_name).first()
    if found is None:
        raise Problem(404, "not-found", NOT_REGISTERED.format(name=full_name))
    return found


@router.read(
    "/{owner}/{name}/health",
    HealthOut,
    READ_RUNS,
    url_name="repository_health",
    summary="A repository's test health",
)
def get_health(
    request: HttpRequest,
    owner: str = Path(..., max_length=100, pattern=PART),
    name: str = Path(..., max_length=100, pattern=PART),
):
    """Tests per ended run over the window (passing, healed, quarantined ...), the last
    maintenance runs, the oldest test still quarantined and the flakiest tests: what the
    repository's health page in admin shows. Needs what reading its runs needs."""
    found = health.repository_health(_visible(request, f"{owner}/{name}"))
    return {
        "repository": found.repository,
        "since": found.since,
        "points": [{**vars(p), "passing": p.passing} for p in found.points],
        "maintenance_runs": found.maintenance,
        "quarantined_now": len(found.quarantined),
        "oldest_quarantined": found.oldest_quarantined,
        "flaky": found.flaky,
    }
