"""The coverage map of a run: the app's routes found in the repository × reached by
exploration × exercised by the generated tests.

Pure and Django-free: computed from the artifacts whenever a surface shows it (run page, API,
pull request body), so it needs no table of its own. Source routes are cleaned with the offline
rules' ``clean_route`` (so ``/notes/:id``, ``/notes/<int:id>``, ``[id]`` and ``{id}`` all become
``/notes/{id}``) and kept in a segment trie, so matching a concrete path costs its depth, not
the number of routes. A test exercises a route when it navigates there (``page.goto``,
``request.get/post/…``, Maestro's ``openLink``); once the tests were verified, only a test that
passed (at once, after a heal, or flaky) counts: a quarantined or dropped one does not. Nor
does a test that could not have reached its route: a write with an empty body, a write without
credentials on an app behind a login, a page that showed the login instead of itself (each is
the row's ``state``, so the map says why). Every
input is untrusted (a model may have written the crawl and the tests); whatever cannot be read
as a same-origin path is ignored. The answer is bounded: ``MAX_ROWS`` rows, the rest counted.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from agents.offline.common import RouteTrie, clean_route
from verification.coverage_tests import Test, Write, tests_of

MAX_ROWS = 200
# Routes, pages and screens read from the crawl; the rest are counted, not mapped. The offline
# rules record 2,000 at most; a model's crawl could list any number.
MAX_SOURCE_ITEMS = 5_000
MAX_TESTS_PER_ROW = 5
MAX_NOT_COVERED = 20  # routes named in ``not_covered``
HEADLINE_CHARS = 300
MAX_PATH = 500
PASSING = frozenset({"passed", "healed", "flaky"})
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f\\{}]")
_DEEP_LINK = re.compile(r"^[a-z][a-z0-9+.\-]*://", re.I)


@dataclass
class Row:
    route: str  # "/notes/{id}"; a concrete path for live-only rows; "" for a screen with no route
    kind: str  # page | api | screen | live
    name: str = ""  # a screen's name
    methods: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)  # a route-less screen's tab label and title
    root: bool = False  # the screen the app launches to
    live_path: str = ""
    live_status: int | None = None
    live_state: str = ""  # answered | login_redirect | not_found | error; "" when not reached
    uncounted: str = ""  # why a test that went there did not count (a state below)
    tests: list[str] = field(default_factory=list)

    @property
    def state(self) -> str:
        """covered, or why not: a test tried but could not reach it (empty_write,
        anonymous_write, login_redirect), the live app has no such page (not_found) or
        showed the login (login_redirect), or nothing went there (not_covered)."""
        if self.tests:
            return "covered"
        if self.uncounted:
            return self.uncounted
        if self.live_state in ("login_redirect", "not_found"):
            return self.live_state
        return "not_covered"

    def out(self) -> dict:
        return {
            "route": self.route,
            "kind": self.kind,
            "name": self.name,
            "methods": sorted(self.methods),
            "in_source": self.kind != "live",
            "live_path": self.live_path,
            "live_status": self.live_status,
            "live_state": self.live_state,
            "state": self.state,
            "tests": self.tests[:MAX_TESTS_PER_ROW],
            "more_tests": max(0, len(self.tests) - MAX_TESTS_PER_ROW),
            "covered": bool(self.tests),
        }


class Routes:
    """The source routes by key, and the trie that finds the one a concrete path belongs to."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}
        self.trie = RouteTrie()
        self.left_off = 0  # source items past MAX_SOURCE_ITEMS
        self.screens: dict[str, Row] = {}  # the rows of screens, by key

    def add(self, route: str, kind: str) -> Row:
        row = self.rows.get(route)
        if row is None:
            row = self.rows[route] = Row(route, kind)
            self.trie.add(route)
        elif kind == "page" and row.kind == "api":
            row.kind = "page"  # a page is what a reader looks for first
        return row

    def match(self, path: str) -> str | None:
        return self.trie.match(path)


def route_key(raw: object) -> str | None:
    """A route found in source → its key (``/notes/{id}``, no trailing slash), or None."""
    route = clean_route(raw) if isinstance(raw, str) else None
    return None if route is None else _tidy(unquote(route))


def concrete_path(target: object, origin: str = "") -> str | None:
    """A navigation target or an app map path → a same-origin path without query, fragment,
    dot segments or trailing slash; None for anything else (another host, ``//evil``,
    ``javascript:``, overlong, control characters)."""
    if not isinstance(target, str) or len(target) > MAX_PATH:
        return None
    text = target.strip()
    if "://" in text[:12]:
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https") or not origin or parts.netloc != origin:
            return None
        text = parts.path or "/"
    if not text.startswith("/") or text.startswith("//"):
        return None
    text = unquote(text.split("#", 1)[0].split("?", 1)[0])
    if _BAD_CHARS.search(text):
        return None
    return _tidy(text)


def _tidy(path: str) -> str:
    path = posixpath.normpath(path)
    return "/" + path.lstrip("/") if path.startswith("//") else path


def deep_link_path(link: object) -> str | None:
    """``acmehabits://habit/1`` → ``/habit/1`` (a custom scheme's host is its first segment)."""
    if not isinstance(link, str) or not _DEEP_LINK.match(link):
        return None
    if link.lower().startswith(("http://", "https://")):
        return None  # a web URL in a flow: matched as a path by the caller
    return concrete_path("/" + link.split("://", 1)[1])


def source_routes(stack: object) -> Routes:
    """The routes, pages and screens of a ``detected_stack`` (model-written ones too)."""
    routes = Routes()
    stack = stack if isinstance(stack, dict) else {}
    lists, budget = [dicts(stack.get(k)) for k in ("pages", "routes", "screens")], MAX_SOURCE_ITEMS
    for n, found in enumerate(lists):
        lists[n], budget = found[:budget], max(0, budget - len(found))
        routes.left_off += len(found) - len(lists[n])
    pages, items, screens = lists
    for item in pages:
        if key := route_key(item.get("route")):
            routes.add(key, "page")
    for item in items:
        key, method = route_key(item.get("path")), item.get("method")
        if key is None or not isinstance(method, str):
            continue
        api = item.get("json") is True or "api" in key.split("/") or method.upper() != "GET"
        routes.add(key, "api" if api else "page").methods.add(method.upper()[:10])
    for item in screens:
        _add_screen(routes, item)
    return routes


def _add_screen(routes: Routes, item: dict) -> None:
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        return
    key = route_key(item["route"]) if isinstance(item.get("route"), str) else None
    if key is None:
        key = f"screen:{name.strip()[:100]}"  # matched by the labels a flow taps, not by path
        if key in routes.rows:
            return
        row = routes.rows[key] = Row("", "screen")
    else:
        row = routes.add(key, "screen")
        row.kind = "screen"
    routes.screens[key] = row
    row.name = " ".join(name.split())[:100]
    row.root = item.get("root") is True
    row.labels |= {
        v.strip() for k in ("tab_label", "title", "name") if isinstance(v := item.get(k), str)
    }


def dicts(items: object) -> list[dict]:
    """The objects of a JSON list (an artifact's, read as untrusted): [] for anything else."""
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def coverage_map(
    crawl: dict | None,
    app_map: dict | None,
    code: dict | None,
    report: dict | None,
    *,
    session: bool = False,
) -> dict:
    """The run's coverage map. ``crawl`` is the crawler's output (its ``detected_stack`` is
    all that is read), ``app_map`` the ExploreApp artifact, ``code`` the Test Engineer's
    output and ``report`` the verification report; any may be None (not made yet). Without
    ``code`` it answers which routes the source has and which the live app showed.
    ``session``: the tests ran signed in (a login recipe, or the sign-up exploration made)."""
    routes = source_routes((crawl or {}).get("detected_stack"))
    origin = urlsplit(str((app_map or report or {}).get("target_url") or "")).netloc
    wall = _reach(routes, app_map, origin)
    verified = bool(report) and report.get("status") == "verified"
    for test in tests_of(code, report):
        if test.status in PASSING or not (verified or test.status):
            _exercise(routes, test, origin, wall=wall, session=session)
    return _summary(routes, verified, _basis(report))


def _basis(report: dict | None) -> str:
    """What the map counted, in a sentence for the run page."""
    if report and report.get("status") == "verified":
        return "Only tests that passed against the app count (quarantined and dropped ones do not)."
    if report:
        why = " ".join(str(report.get("reason") or "").split())[:200]
        why = f" ({why.rstrip('.')})" if why else ""
        return f"The tests did not run against the app{why}: a written test counts."
    return "No tests have run against the app yet: a written test counts."


def _reach(routes: Routes, app_map: dict | None, origin: str) -> bool:
    """Each page of the app map onto its route; a page that answered and matches no source
    route is a route of its own (the live app revealed it). True when the app is behind a
    login (a page showed the login, or answered 401/403)."""
    wall = False
    for page in dicts((app_map or {}).get("pages")):
        path, status = concrete_path(page.get("path"), origin), page.get("status")
        if path is None or not isinstance(status, int):
            continue
        login = bool(page.get("login_redirect"))
        wall = wall or login or status in (401, 403)
        key = routes.match(path)
        if key is None:
            if not 200 <= status < 400 or login:
                continue  # a broken link, or the login page under another name
            key = path
            routes.add(key, "live")
        row, state = routes.rows[key], _live_state(status, login)
        if row.live_state != "answered" and (not row.live_state or state == "answered"):
            row.live_path, row.live_status, row.live_state = path, status, state
        if state == "answered" and row.kind == "api" and _html(page):
            row.kind = "page"  # the browser showed a page there, whatever the crawl guessed
    return wall


def _live_state(status: int, login: bool) -> str:
    if login:
        return "login_redirect"
    if 200 <= status < 400:
        return "answered"
    return "not_found" if status in (404, 410) else "error"


def _html(page: dict) -> bool:
    return bool(page.get("title") or page.get("links") or page.get("forms"))


def _exercise(routes: Routes, test: Test, origin: str, *, wall: bool, session: bool) -> None:
    keys: dict[str, str] = {}  # route → "" (counts) or why it does not
    for target in test.targets:
        path = deep_link_path(target) if _DEEP_LINK.match(target) and test.mobile else None
        path = path or concrete_path(target, origin)
        if path is None or (key := routes.match(path)) is None:
            continue
        why = _uncounted(routes.rows[key], test.writes.get(target), wall=wall, session=session)
        keys[key] = "" if keys.get(key) == "" else why
    for key, row in routes.screens.items() if test.mobile else ():
        if (row.root and test.launches) or (not row.route and row.labels & test.taps):
            keys[key] = ""
    for key, why in keys.items():
        if why:
            routes.rows[key].uncounted = why
        else:
            routes.rows[key].tests.append(test.title)


def _uncounted(row: Row, write: Write | None, *, wall: bool, session: bool) -> str:
    """Why a navigation to ``row`` could not have reached it ("" when it could)."""
    if write is not None and write.verb != "DELETE" and not write.body:
        return "empty_write"
    if write is not None and wall and not (session or write.auth):
        return "anonymous_write"
    if write is None and row.live_state == "login_redirect" and not session:
        return "login_redirect"
    if write is None and row.live_state == "not_found":
        return "not_found"  # the app has no such page: a test that passed there saw none
    return ""


def _summary(routes: Routes, verified: bool, basis: str) -> dict:
    rows = sorted(routes.rows.values(), key=lambda r: (bool(r.tests), r.route or r.name))
    missing = [r for r in rows if not r.tests]
    states = [r.state for r in missing]
    totals = {
        "routes": len(rows),
        "in_source": sum(1 for r in rows if r.kind != "live"),
        "reached": sum(1 for r in rows if r.live_state == "answered"),
        "live_only": sum(1 for r in rows if r.kind == "live"),
        "covered": len(rows) - len(missing),
        "not_covered": len(missing),
        "login_redirect": states.count("login_redirect"),
        "not_found": states.count("not_found"),
        "uncounted_writes": states.count("empty_write") + states.count("anonymous_write"),
        "source_left_off": routes.left_off,
    }
    labels = [_label(r) for r in missing[:50]]
    return {
        "headline": headline(totals["covered"], len(rows), labels, routes.left_off),
        "verified": verified,
        "basis": basis,
        "totals": totals,
        "not_covered": [_label(r) for r in missing[:MAX_NOT_COVERED]],
        "rows": [r.out() for r in rows[:MAX_ROWS]],
        "rows_left_off": max(0, len(rows) - MAX_ROWS),
    }


def _label(row: Row) -> str:
    return row.route or f"{row.name} (screen)"


def headline(covered: int, total: int, missing: list[str], left_off: int = 0) -> str:
    """``14 of 17 routes covered; not covered: /admin/export, …`` within HEADLINE_CHARS."""
    if not total:
        return "no routes found in the repository or reached in the app"
    text = f"{covered} of {total} routes covered"
    if left_off:
        text += f" ({left_off} more found in the source, past the map's limit)"
    if not missing:
        return text
    text += "; not covered: "
    shown: list[str] = []
    for label in missing:
        label = label if len(label) <= 100 else label[:99] + "…"
        if len(text) + len(", ".join([*shown, label])) > HEADLINE_CHARS - 20:
            break
        shown.append(label)
    text += ", ".join(shown)
    left = total - covered - len(shown)
    return text + ((", " if shown else "") + f"… ({left} more)" if left > 0 else "")
