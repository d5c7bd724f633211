"""A repository's health page (``/admin/repositories/repository/<pk>/health/``): its tests over
time (``health_chart``), last maintenance runs, oldest quarantined test and flakiest tests,
from ``reporting.health``. Whoever may see the repository's runs may see it (the viewer role
does); a repository one may not see answers 404, as one that does not exist."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse

from reporting import health
from reporting.admin.health_chart import health_chart
from repositories import access
from repositories.models import Repository
from runs.admin import display as show

VIEW = ("runs.view_run", "runs.change_run")


def describe(found: health.Health) -> str:
    """The chart in one sentence: its span and the latest run's figures."""
    if not found.points:
        return f"No ended run of {found.repository} with a verification report since {found.since:%Y-%m-%d}."
    first, last = found.points[0], found.points[-1]
    return (
        f"{len(found.points)} runs of {found.repository} from {first.finished_at:%Y-%m-%d} to "
        f"{last.finished_at:%Y-%m-%d}. The latest, a {last.kind} run, had {last.tests} tests: "
        f"{last.passing} passing, {last.healed} healed, {last.quarantined} quarantined, "
        f"{last.failed} failed, {last.skipped} skipped."
    )


def health_view(request, pk: int):
    if not request.user.has_perm("runs.view_run"):  # on some repository at least
        raise PermissionDenied
    repositories = access.restrict(Repository.objects.all(), request.user, VIEW, via="pk")
    repository = get_object_or_404(repositories, pk=pk)
    found = health.repository_health(repository)
    description = describe(found)
    context = {
        **admin.site.each_context(request),
        "title": f"Health of {repository.full_name}",
        "repository": repository,
        "health": found,
        "description": description,
        "chart": health_chart(found.points, description),
        "maintenance": [
            (run, show.badge(run.status), show.pull_request(run.pr_number, run.pr_url))
            for run in found.maintenance
        ],
        "window_days": health.WINDOW_DAYS,
        "max_points": health.MAX_POINTS,
    }
    return TemplateResponse(request, "admin/runs/health.html", context)
