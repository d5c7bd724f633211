"""Small HTML pieces shared by the runs and approvals admin: badges, durations, links.

Everything goes through ``format_html`` so values from runs (refs, error messages, URLs that
came from a repository host) are escaped.
"""

from __future__ import annotations

import collections
import re
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.contrib import admin
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

# Background colours per status (run, stage and approval statuses share one palette).
STATUS_COLOURS = {
    "pending": "#6b7280",
    "running": "#2563eb",
    "awaiting_approval": "#b45309",
    "passed": "#15803d",
    "approved": "#15803d",
    "failed": "#b91c1c",
    "rejected": "#b91c1c",
    "skipped": "#94a3b8",
    "cancelled": "#4b5563",
    # verification: the report's status and each test's
    "verified": "#15803d",
    "unverified": "#b91c1c",
    "not_executed": "#94a3b8",
    "healed": "#0f766e",
    "flaky": "#b45309",
    "quarantined": "#7c3aed",
}
LINKED_SCHEMES = ("http", "https")
EMPTY = "—"


def short_id(key) -> str:
    """The start of a UUID key: enough to tell rows apart, and what the admin search takes."""
    return str(key)[:8]


def short_id_column(key: str, description: str, ordering: str | None = None):
    """A list column of the ``short_id`` of each row's ``key``."""

    @admin.display(description=description, ordering=ordering)
    def column(self, row):
        return short_id(getattr(row, key))

    return column


def badge_column(field: str):
    """A list column of each row's ``field`` (a status) as a ``badge``, sorted by it."""

    @admin.display(description=field, ordering=field)
    def column(self, row):
        return badge(getattr(row, field))

    return column


class RunColumns:
    """The run and repository columns of an admin list of rows that belong to a run."""

    @admin.display(description="run", ordering="run")
    def run_link(self, row):
        url = reverse("admin:runs_run_change", args=[row.run_id])
        return format_html('<a href="{}">{}</a>', url, short_id(row.run_id))

    @admin.display(description="repository", ordering="run__repo_full_name")
    def repository(self, row):
        return row.run.repo_full_name


def badge(status: str) -> SafeString:
    colour = STATUS_COLOURS.get(status, "#6b7280")
    # Inline style: the badge must look right on every admin page, including ones whose
    # templates we do not override (changelists, recent actions).
    return format_html(
        '<span class="amtp-badge amtp-badge-{}" style="background:{};color:#fff;'
        "padding:2px 8px;border-radius:10px;font-size:11px;font-weight:600;"
        'white-space:nowrap">{}</span>',
        status,
        colour,
        status.replace("_", " "),
    )


def human_duration(delta: timedelta | None) -> str:
    if delta is None:
        return EMPTY
    seconds = max(int(delta.total_seconds()), 0)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def age(when: datetime | None, now: datetime | None = None) -> str:
    if when is None:
        return EMPTY
    return f"{human_duration((now or timezone.now()) - when)} ago"


def elapsed(started: datetime | None, finished: datetime | None, is_open: bool) -> str:
    """Duration of something finished, or time so far (marked ``…``) of something running."""
    if started and finished:
        return human_duration(finished - started)
    if started and is_open:
        return f"{human_duration(timezone.now() - started)}…"
    return EMPTY


def external_link(url: str, text: str = "") -> SafeString | str:
    """A link for http(s) URLs only; anything else (``file://`` pull requests of the local
    host, or a hostile ``javascript:``) is shown as text."""
    text = text or url
    if url and urlsplit(url).scheme.lower() in LINKED_SCHEMES:
        return format_html(
            '<a href="{}" target="_blank" rel="noopener noreferrer">{}</a>', url, text
        )
    return format_html('<span title="{}">{}</span>', url, text) if url else EMPTY


def pull_request(number: int | None, url: str) -> SafeString | str:
    text = f"#{number}" if number else ""
    return external_link(url, text) if url else text or EMPTY


_ROLE = re.compile(r"^\s*- (\w+)", re.M)


def app_map(content: dict | None) -> dict | None:
    """The app map for the run page: per page a status badge and the roles it shows."""
    if content is None:
        return None
    pages = []
    for page in content["pages"]:
        roles = collections.Counter(_ROLE.findall(page["snapshot"]))
        shown = ", ".join(f"{n} {role}" for role, n in roles.most_common(6))
        ok = 200 <= page["status"] < 400
        pages.append({**page, "roles": shown, "badge": badge("passed" if ok else "failed")})
    return {**content, "pages": pages}


def verification(report: dict | None) -> dict | None:
    """The verification report for the run page: badges on it and on each test."""
    if report is None:
        return None
    tests = [{**test, "badge": badge(test["status"])} for test in report["tests"]]
    totals = {k: v for k, v in report["totals"].items() if k != "tests" and v}
    calls = [{**call, "badge": badge(call["status"])} for call in report.get("test_data") or []]
    shown = {"badge": badge(report["status"]), "tests": tests, "counts": totals}
    return {**report, **shown, "test_data": calls}


def coverage(content: dict | None) -> dict | None:
    """The coverage map for the run page: what exploration saw on each row (a badge and the
    path), what found it, and what a row that is not covered is instead."""
    if content is None:
        return None
    rows = []
    for row in content["rows"]:
        found = f"source ({row['kind']})" if row["in_source"] else "exploration only"
        state = ROW_STATES.get(row.get("state") or "", "not covered")
        rows.append({**row, "live": _live(row), "found_by": found, "state_label": state})
    return {**content, "rows": rows}


ROW_STATES = {
    "empty_write": "not covered: tests wrote here only with an empty body",
    "anonymous_write": "not covered: tests wrote here only without signing in",
    "login_redirect": "not covered: only the login was seen here",
    "not_found": "not covered: the app answers 404 here",
    "not_covered": "not covered",
}


def _live(row: dict) -> SafeString | str:
    state, status, path = row.get("live_state"), row["live_status"], row["live_path"]
    if not state:
        return "—"
    if state == "login_redirect":
        return format_html("{} <code>{}</code> showed the login", badge("login"), path)
    return format_html(
        "{} {} <code>{}</code>", badge("passed" if state == "answered" else "failed"), status, path
    )
