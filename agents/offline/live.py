"""What the offline rules take from the app map: the pages the running app showed.

The app map (``app_map`` of the Test Case Generator's input, verbatim or as its bounded
rendering) is model-facing data from a hostile app: every path goes through the same route
rule as the source's (``clean_route``), every name through ``ui_text``, and the snapshot is
only read, line by line, for roles and accessible names (``- heading "Notes" [level=1]``).
The shapes of the JSON answers it saw (``apis``) are checked again (``api_shape.py``) before an
API test asserts them.

A page is *live* when it answered 2xx. What a live page contributes:

- its main heading (the first level-1 heading, else the first heading), which replaces the
  heading the source suggested: the app's own text wins over a guess from a template; none
  for a record's page (``/notes/1/edit``) whose form a trial sent and whose text the app then
  showed, since the heading may have shown the record the trial changed;
- the first text fields and the first button it shows, by role and accessible name, so a
  page test checks what the user sees, with locators that exist;
- its path, when the source did not reveal it (a client-side router built at run time) or
  only as a pattern (``/notes/{id}``: the live path is a real sample value).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .api_shape import clean_apis
from .common import ACCOUNT, clean_route, params, ui_text

_LINE = re.compile(r'^\s*- (\w+)(?: ("(?:[^"\\]|\\.)*"))?(.*)$')
_LEVEL = re.compile(r"\[level=(\d)\]")
FIELD_ROLES = ("textbox", "searchbox", "combobox", "spinbutton")
MAX_FIELDS, MAX_LIVE_PAGES = 3, 500


@dataclass
class LivePage:
    path: str
    heading: str | None = None
    title: str | None = None
    shows: list[tuple[str, str]] = field(default_factory=list)  # (role, name): fields, button
    # Nothing rendered when explored (a shell whose scripts come from hosts the sandbox
    # refused: Swagger UI from a CDN): no body to see, only the status and the title.
    blank: bool = False
    # Where opening it sent the browser (``redirected_to``): what it showed is that page's.
    redirect: str | None = None


def named_elements(snapshot: str, account: bool = False) -> list[tuple[str, str, int]]:
    """(role, accessible name, heading level or 0) of each named element, in order;
    ``account``: a name may hold the signed-in account's place (``ACCOUNT``) once."""
    out = []
    for line in snapshot.splitlines()[:2000]:
        match = _LINE.match(line)
        if not match or not match.group(2):
            continue
        try:
            name = json.loads(match.group(2))
        except ValueError:
            continue
        level = _LEVEL.search(match.group(3) or "")
        if not isinstance(name, str):
            continue
        if account and name.count(ACCOUNT) == 1:  # checked as text with a word in its place
            text = ui_text(name.replace(ACCOUNT, _HELD))
            text = text.replace(_HELD, ACCOUNT) if text and _HELD in text else None
        else:
            text = ui_text(name)
        if text:
            out.append((match.group(1), text, int(level.group(1)) if level else 0))
    return out


_HELD = "Amtpaccountword"


_SHOWN = re.compile(r'^\s*- \w+(?: "|:\s*\S)', re.M)  # a named element or a text


def _page(raw: dict, path: str) -> LivePage:
    snapshot = raw.get("snapshot") if isinstance(raw.get("snapshot"), str) else ""
    named = named_elements(snapshot)
    greeted = named_elements(snapshot, account=True)  # "Hi, {account}!": the test's own
    headings = [(level or 9, name) for role, name, level in greeted if role == "heading"]
    fields = [(role, name) for role, name, _ in named if role in FIELD_ROLES]
    buttons = [("button", name) for role, name, _ in named if role == "button"]
    return LivePage(
        path=path,
        heading=min(headings, key=lambda h: h[0])[1] if headings else None,
        title=ui_text(raw.get("title")) if isinstance(raw.get("title"), str) else None,
        shows=list(dict.fromkeys(fields))[:MAX_FIELDS] + buttons[:1],
        blank=not _SHOWN.search(snapshot),
        redirect=_redirect(raw.get("redirected_to"), path),
    )


def _redirect(value: object, path: str) -> str | None:
    """Where a page redirected: a route other than its own, else None."""
    target = clean_route(value) if isinstance(value, str) and "?" not in value else None
    return target if target and target == value and target != path.split("#")[0] else None


# A client-side hash route (``#/active``, ``#!/done``): a route of the app, as exploration
# recorded it (a fragment that is not a route is no page of the map).
_HASH = re.compile(r"#!?/[A-Za-z0-9._~\-/]{0,100}")


def live_path(raw: str) -> str | None:
    """A path of the map as a route: ``clean_route``'s, with its hash route kept
    (``/#/active``); None for a query string or an unusable path."""
    if "?" in raw:
        return None
    base, sep, fragment = raw.partition("#")
    path = clean_route(base)
    if not sep or not path:
        return path
    return f"{path}#{fragment}" if _HASH.fullmatch(sep + fragment) else None


def live_pages(app_map: object) -> dict[str, LivePage]:
    """Path → what the page showed, for the app map's pages that answered 2xx (at most
    MAX_LIVE_PAGES; query strings and unusable paths skipped). A path the rendering left
    out (``pages_not_shown``) is live too, without what it showed."""
    if not isinstance(app_map, dict):
        return {}
    out: dict[str, LivePage] = {}
    pages = app_map.get("pages") if isinstance(app_map.get("pages"), list) else []
    for raw in pages:
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
            continue
        status = raw.get("status")
        path = live_path(raw["path"])
        if path and not params(path) and isinstance(status, int) and 200 <= status < 300:
            out.setdefault(path, _page(raw, path))
    more = app_map.get("pages_not_shown")
    for raw in more if isinstance(more, list) else []:
        path = live_path(raw) if isinstance(raw, str) else None
        if path and not params(path):
            out.setdefault(path, LivePage(path))
    for path in _changed_records(app_map):
        if path in out:  # its heading showed the record, which the trial then changed
            out[path].heading = None
    return dict(list(out.items())[:MAX_LIVE_PAGES])


def _changed_records(app_map: dict) -> set[str]:
    """Record pages (a numeric segment: ``/notes/1/edit``) whose form a trial sent and whose
    submitted text the app then showed: what they showed before may be gone."""
    trials = app_map.get("trials") if isinstance(app_map.get("trials"), list) else []
    return {
        t["path"]
        for t in trials[:20]
        if isinstance(t, dict)
        and isinstance(t.get("path"), str)
        and t.get("shows_value") is True
        and re.search(r"/\d+(/|$)", t["path"])
    }


def absent_paths(app_map: object) -> set[str]:
    """The paths whose page answered 404 when the app was explored (a project whose URLconf
    has no ``/``): a test that expects them to render would fail for sure."""
    pages = app_map.get("pages") if isinstance(app_map, dict) else None
    out = set()
    for raw in pages[:MAX_LIVE_PAGES] if isinstance(pages, list) else []:
        if isinstance(raw, dict) and raw.get("status") == 404 and isinstance(raw.get("path"), str):
            if path := clean_route(raw["path"]):
                out.add(path)
    return out


def behind_login(app_map: object) -> set[str]:
    """The paths that sent the browser to a login when the app was explored without a
    session (``behind_login`` of the map's view): a test opening one would see the login, so
    none is tested as the page asked for (nor titled by the login's heading)."""
    found = app_map.get("behind_login") if isinstance(app_map, dict) else None
    paths = (
        (clean_route(p) for p in found[:MAX_LIVE_PAGES] if isinstance(p, str) and "?" not in p)
        if isinstance(found, list)
        else ()
    )
    return {path for path in paths if path}


def login_page(app_map: object) -> str | None:
    """The login the paths of ``behind_login`` sent the browser to (``login_page`` of the
    map's view: a path, no query), else None."""
    found = app_map.get("login_page") if isinstance(app_map, dict) else None
    path = clean_route(found) if isinstance(found, str) and "?" not in found else None
    return path if path and path == found and not params(path) else None


def api_shapes(app_map: object) -> dict[str, dict]:
    """Static path → what a GET of it answered as JSON (``status`` and ``body`` shape), for the
    app map's ``apis`` records that pass the same checks as the worker's."""
    if not isinstance(app_map, dict):
        return {}
    found = clean_apis(app_map.get("apis"), lambda p: clean_route(p) == p and not params(p))
    return {r["path"]: r for r in found if r.get("auth", "none") == "none"}


_SAYS = re.compile(r"[^<>&\"'`\\]{2,120}")
_FIELD = re.compile(r"^[\w\[\].-]{1,80}$")
_AFTER = re.compile(r"^/([^/\\\s]\S{0,498})?$")


def write_answers(app_map: object) -> dict[tuple[str, str, str], dict]:
    """(method, path, payload) → what the app answered that write when explored (the map's
    ``writes``: status, path after, message), each checked again: a model may have seen it."""
    found = app_map.get("writes") if isinstance(app_map, dict) else None
    out: dict[tuple[str, str], dict] = {}
    for raw in found[:20] if isinstance(found, list) else []:
        raw = raw if isinstance(raw, dict) else {}
        method, path, status = raw.get("method"), raw.get("path"), raw.get("status")
        if not isinstance(method, str) or not isinstance(path, str) or clean_route(path) != path:
            continue
        # A server error is the app's bug, never an answer to expect: the write keeps the test
        # that fails on it (and is quarantined as a real failure).
        if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 499:
            continue
        after, says = raw.get("path_after"), raw.get("message")
        payload = raw.get("payload", "empty")
        if payload not in ("empty", "form", "credentials", "signed_out", *ACCOUNT_PAYLOADS):
            continue
        names = raw.get("fields") if payload not in ("empty", "credentials") else []
        names = (
            [n for n in names[:20] if isinstance(n, str) and _FIELD.match(n)]
            if isinstance(names, list)
            else []
        )
        if payload in ("form", *ACCOUNT_PAYLOADS) and not names:
            continue
        record = {
            "status": status,
            "path_after": after if isinstance(after, str) and _AFTER.match(after) else "",
            "message": says if isinstance(says, str) and _SAYS.fullmatch(says) else "",
            "fields": names,
        }
        if payload in ACCOUNT_PAYLOADS:
            kinds = raw.get("kinds") if isinstance(raw.get("kinds"), list) else []
            up = raw.get("signed_up_to")
            if [k for k in kinds if k in _KINDS] != kinds or len(kinds) != len(names):
                continue
            record |= {
                "kinds": kinds,
                "signed_up_to": up if isinstance(up, str) and _AFTER.match(up) else "",
            }
        key = payload if payload in ("credentials", "signed_out", *ACCOUNT_PAYLOADS) else "empty"
        out.setdefault((method.upper(), path, key), record)
    return out


ACCOUNT_PAYLOADS = ("taken", "no_password", "wrong_password")
_KINDS = ("username", "email", "password")


def api_probes(app_map: object) -> dict[str, list[dict]]:
    """Static path → what a GET of it answered when asked with a credential the app cannot
    have issued (the ``apis`` records whose ``auth`` is not ``none``: always a refusal)."""
    if not isinstance(app_map, dict):
        return {}
    found = clean_apis(app_map.get("apis"), lambda p: clean_route(p) == p and not params(p))
    out: dict[str, list[dict]] = {}
    for record in found:
        if record.get("auth", "none") != "none":
            out.setdefault(record["path"], []).append(record)
    return out


def unknown_path_status(app_map: object) -> int:
    """What a path that cannot exist answered when the app was explored (0: not probed)."""
    value = app_map.get("unknown_path_status") if isinstance(app_map, dict) else None
    return value if isinstance(value, int) and 0 <= value <= 599 else 0
