"""The ExploreApp stage's inputs from the run, its repository and settings."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings

import schemas
from runs.exploration.explore import Bounds, explore
from runs.models import Run
from runs.verification.login import login_for
from runs.verification.service import runner_from_settings, target_url_of

APP_MAP_SCHEMA = "exploration/app_map"
NO_TARGET = "no target URL: nothing to explore (set the repository's preview URL)"
NO_BROWSER_APP = "a mobile app: nothing for a browser to explore"


def exploration_skip_reason(run: Run) -> str:
    """Why ``run`` has nothing to explore ("" when it has)."""
    if run.target_framework != "playwright":
        return NO_BROWSER_APP
    return "" if target_url_of(run) else NO_TARGET


def app_map(run: Run) -> dict:
    """The validated ``app_map`` content for ``run``'s target app."""
    target_url = target_url_of(run)
    with login_for(run.repository) as login:  # logged in when the repository says how
        content = explore(
            target_url,
            allow_hosts=list(run.repository.allowed_hosts),
            runner=runner_from_settings(),
            bounds=Bounds.from_settings(),
            shots_dir=settings.AMTP_VERIFY_EVIDENCE_DIR / str(run.run_id),
            start_paths=[urlsplit(target_url).path or "/"],
            login=login,
        )
    return schemas.validate(APP_MAP_SCHEMA, content)


def exploration_note(content: dict) -> str:
    """The stage's note: what was found, and why it stopped early."""
    pages = content["pages"]
    forms = sum(len(page["forms"]) for page in pages)
    failing = sum(1 for page in pages if not 200 <= page["status"] < 400)
    note = f"{len(pages)} page(s), {forms} form(s)"
    if failing:
        note += f", {failing} answered an error"
    if content["stopped"]:
        note += f"; {content['stopped']}, {content['unvisited']} link(s) not visited"
    return note
