"""The ExploreApp stage's inputs from the run, its repository and settings."""

from __future__ import annotations

import contextlib
from urllib.parse import urlsplit

from django.conf import settings

import schemas
from agents.offline.common import clean_route, params
from repositories import targets
from runs.models import Artifact, ArtifactKind, Run
from verification.boot import service as boot
from verification.coverage import dicts, source_routes
from verification.errors import ERRORS_ONLY, TargetAnswersErrors
from verification.exploration.explore import Bounds, explore
from verification.exploration.writes import api_key_probe, write_paths
from verification.login import login_for, throwaway
from verification.service import runner_from_settings, target_url_of
from verification.session import LiveApp

APP_MAP_SCHEMA = "exploration/app_map"
ANSWERED_ERRORS = " answered an error"  # in the stage's note: the run page shows it as a warning
NO_TARGET = "no target URL: nothing to explore (set the repository's preview URL)"
NO_BROWSER_APP = "a mobile app: nothing for a browser to explore"


def exploration_skip_reason(run: Run) -> str:
    """Why ``run`` has nothing to explore ("" when it has)."""
    if run.target_framework != "playwright":
        return NO_BROWSER_APP
    if target_url_of(run) or boot.boots_app(run):
        return ""
    return boot.not_booted_reason(run) or NO_TARGET


def app_map(run: Run, app: LiveApp | None = None) -> dict:
    """The validated ``app_map`` content for ``run``'s target app (``app``: the app AMTP
    started for it, restarted when it crashes; the map's ``crashes`` record each crash)."""
    target_url = target_url_of(run)
    bounds = Bounds.from_settings()
    crawl = Artifact.objects.filter(run=run, kind=ArtifactKind.REPO_CRAWLER_OUTPUT).first()
    first = urlsplit(target_url).path or "/"
    with (
        login_for(run.repository) as login,  # logged in when the repository says how
        _signup(login is None) as signup,  # else signed up, when the app lets anyone
    ):
        content = explore(
            target_url,
            allow_hosts=[*run.repository.allowed_hosts, *run.allowed_hosts],
            runner=runner_from_settings(),
            bounds=bounds,
            shots_dir=settings.AMTP_VERIFY_EVIDENCE_DIR / str(run.run_id),
            start_paths=start_paths(crawl.content if crawl else {}, first, bounds.max_pages),
            writes=write_paths(crawl.content if crawl else {}),
            api_key=api_key_probe(crawl.content if crawl else {}),
            login=login,
            signup=signup,
            tag=run.run_id.hex[:10],  # the run's test data is told apart by it
            app=app,
        )
    content = schemas.validate(APP_MAP_SCHEMA, content)
    stop_if_errors_only(content)
    return content


def stop_if_errors_only(content: dict) -> None:
    """TargetAnswersErrors when every page the exploration visited answered a server error
    (5xx): the app is up but failing, and generating and verifying tests against it would
    spend minutes and tokens to fail the same way (VerifyTests' rule, applied first)."""
    statuses = {page["status"] for page in content["pages"]}
    if not statuses or min(statuses) < 500:
        return
    url = targets.display(content["target_url"])
    what = f"every page the exploration visited ({len(content['pages'])})"
    shown = ", ".join(str(s) for s in sorted(statuses))
    raise TargetAnswersErrors(
        ERRORS_ONLY.format(what=what, statuses=shown, url=url), url=url, statuses=sorted(statuses)
    )


def _signup(wanted: bool):
    """A throwaway account (scrubbed within the block) when one may sign up, else none."""
    return throwaway() if wanted and settings.AMTP_EXPLORE_SIGN_UP else contextlib.nullcontext()


def start_paths(crawl: dict, first: str, limit: int) -> list[str]:
    """Where exploration starts: the target URL's own path, then the pages and GET routes
    the crawl found in the source (static paths only: a parameter has no value to visit;
    what the source took for JSON last, since the browser tells whether it renders a page),
    at most ``limit``. The links the pages show lead to routes only the running app reveals."""
    stack = crawl.get("detected_stack")
    stack = stack if isinstance(stack, dict) else {}
    found = [(False, p.get("route")) for p in dicts(stack.get("pages"))]
    found += [
        (r.get("json") is True or "/api/" in f"{r.get('path')}/", r.get("path"))
        for r in dicts(stack.get("routes"))
        if str(r.get("method", "")).upper() == "GET"
    ]
    paths = [first]
    for _json, raw in sorted(found, key=lambda item: item[0]):
        route = clean_route(raw) if isinstance(raw, str) else None
        if route and not params(route) and route not in paths:
            paths.append(route)
    return paths[:limit]


def app_view(content: dict | None, crawl: dict | None = None) -> dict | None:
    """What the agents get of an ``app_map`` (``app_map`` of their input schemas): the pages
    as they rendered, the forms' trials and the JSON answers' shapes, without what only operators need (screenshots, settings, sandbox); the paths that sent the browser to a login
    (``behind_login``: never shown as the pages they were asked for). The
    pages no route of the ``crawl``'s source covers come first (in the order visited), so a
    rendering cut to the context budget keeps what only the running app can tell."""
    if not content:
        return None
    routes = source_routes((crawl or {}).get("detected_stack"))
    # A page that sent the browser to a login showed the login: it is not that page.
    walled = [page["path"] for page in content["pages"] if page.get("login_redirect")]
    shown = [page for page in content["pages"] if not page.get("login_redirect")]
    hidden = [routes.match(page["path"].split("?")[0]) is None for page in shown]
    pages = [
        {
            "path": page["path"],
            "status": page["status"],
            "title": page["title"],
            "snapshot": page["snapshot"],
            "links": page["links"],
            "forms": [_form_view(form) for form in page["forms"]],
            **({"redirected_to": page["redirected_to"]} if page.get("redirected_to") else {}),
        }
        for page in shown
    ]
    pages = [p for p, h in zip(pages, hidden, strict=True) if h] + [
        p for p, h in zip(pages, hidden, strict=True) if not h
    ]
    return {
        "target_url": content["target_url"],
        "pages": pages,
        "unvisited": content["unvisited"],
        "unknown_path_status": content.get("unknown_path_status", 0),
        "trials": content.get("trials", []),
        "interactions": content.get("interactions", []),
        "apis": content.get("apis", []),
        **({"writes": content["writes"]} if content.get("writes") else {}),
        **({"behind_login": walled[:100]} if walled else {}),
        **({"credential": content["credential"]} if content.get("credential") else {}),
        **({"signup": _signup_view(signup)} if (signup := content.get("signup")) else {}),
        **({"login_page": login} if (login := _login_page(content["pages"])) else {}),
    }


def _form_view(form: dict) -> dict:
    fields = [{k: field[k] for k in ("label", "type", "required")} for field in form["fields"]]
    return {"method": form["method"], "submit": form["submit"], "fields": fields}


def _signup_view(signup: dict) -> dict:
    """How exploration signed up and in (no values): the forms it used, by their labels."""
    login = signup.get("login_form")
    return {
        "path": signup["path"],
        "form": _form_view(signup["form"]),
        "login_path": signup["login_path"],
        **({"login_form": _form_view(login)} if login else {}),
        "signed_in": signup["signed_in"],
    }


def _login_page(pages: list[dict]) -> str:
    """The path (no query) the first page behind a login sent the browser to, else ""."""
    found = next((page["login_redirect"] for page in pages if page.get("login_redirect")), "")
    return urlsplit(found).path if found.startswith("/") and not found.startswith("//") else ""


def exploration_note(content: dict) -> str:
    """The stage's note: what was found, and why it stopped early."""
    pages = content["pages"]
    forms = sum(len(page["forms"]) for page in pages)
    failing = sum(1 for page in pages if not 200 <= page["status"] < 400)
    note = f"{len(pages)} page(s), {forms} form(s)"
    if tried := content.get("trials"):
        note += f", {len(tried)} tried"
    if acted := content.get("interactions"):
        note += f", {len(acted)} action(s) outside forms"
    if failing:
        note += f", {failing}{ANSWERED_ERRORS}"
    if walled := sum(1 for page in pages if page.get("login_redirect")):
        note += f", {walled} behind a login"
    if signup := content.get("signup"):
        note += (
            "; signed up and explored signed in"
            if signup["signed_in"]
            else (
                f"; sign-up at {signup['path']} did not sign in: {signup['error'] or 'no reason'}"
            )
        )
    if crashes := content.get("crashes"):
        shown = ", ".join(crash["request"] for crash in crashes)
        note += f"; the app crashed on {shown} and was restarted"
    if content["stopped"]:
        note += f"; {content['stopped']}, {content['unvisited']} link(s) not visited"
    return note
