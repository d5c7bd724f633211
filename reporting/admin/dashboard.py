"""The operations dashboard (``/admin/dashboard/``): the last 30 days of runs per status, stage
durations, test pass rates and cost per run, as server-drawn SVG charts (``charts.py``) over
the daily rollups (``reporting.dashboard``), for the repositories the user may see."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse

from reporting import dashboard
from reporting.admin.charts import Series, bar_chart
from repositories import access
from runs.admin.display import STATUS_COLOURS, human_duration

VIEW = ("runs.view_run", "runs.change_run")


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 60 else human_duration(timedelta(seconds=value))


def _usd(value: float) -> str:
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def _rate(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 1) if whole else None


def charts(days: list[dashboard.Day], stages: list[dict]) -> dict:
    labels = [day.day.strftime("%m-%d") for day in days]
    statuses = [
        Series(status, STATUS_COLOURS[status], [day.runs[status] for day in days])
        for status in dashboard.ENDED
    ]
    rates = [
        Series("first attempt", "#2563eb", [_rate(d.first_attempt, d.tests) for d in days]),
        Series("after healing", "#0f766e", [_rate(d.passed, d.tests) for d in days]),
    ]
    cost = [d.cost_per_run for d in days]
    durations = [
        Series(q, colour, [s[q] for s in stages])
        for q, colour in (("p50", "#2563eb"), ("p95", "#b45309"))
    ]
    return {
        "runs_chart": bar_chart("amtp-chart-runs", labels, statuses, stacked=True),
        "stages_chart": bar_chart(
            "amtp-chart-stages", [s["label"] for s in stages], durations, fmt=_seconds
        ),
        "rates_chart": bar_chart(
            "amtp-chart-rates", labels, rates, fmt=lambda v: f"{v:g}%", top=100
        ),
        "cost_chart": bar_chart(
            "amtp-chart-cost",
            labels,
            [Series("cost per run", "#7c3aed", [None if c is None else float(c) for c in cost])],
            fmt=_usd,
        ),
    }


def summary(days: list[dashboard.Day]) -> dict:
    runs = sum(sum(day.runs.values()) for day in days)
    tests = sum(day.tests for day in days)
    costed = sum(day.runs_costed for day in days)
    spent = sum((day.cost_usd for day in days), Decimal(0))
    return {
        "runs": runs,
        "tests": tests,
        "first_attempt_rate": _rate(sum(d.first_attempt for d in days), tests),
        "pass_rate": _rate(sum(d.passed for d in days), tests),
        "cost_usd": spent,
        "cost_per_run": spent / costed if costed else None,
        "runs_cost_unknown": sum(day.runs_cost_unknown for day in days),
    }


def dashboard_view(request):
    if not request.user.has_perm("runs.view_run"):  # on some repository at least
        raise PermissionDenied
    ids = access.repository_ids(request.user, VIEW)
    start, end = dashboard.window()
    days = dashboard.days(ids, start, end)
    stages = dashboard.stage_durations(ids, start, end)
    context = {
        **admin.site.each_context(request),
        "title": "Dashboard: the last 30 days",
        "start": start,
        "end": end,
        "summary": summary(days),
        "stages": stages,
        "repositories": dashboard.by_repository(ids, start, end),
        **charts(days, stages),
    }
    return TemplateResponse(request, "admin/runs/dashboard.html", context)
