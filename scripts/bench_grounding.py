"""Benchmark tests grounded in the live app: first-attempt and after-healing pass rates and
route coverage, with the offline provider (docs/benchmarks.md).

For each app (demo/web, the Flask notes service, the single-page app of tests/fixtures/spa,
the notes app with accounts of tests/journey_app.py),
served on loopback: the offline crawl of its repository, ExploreApp against the live app
(the sandboxed browser, the settings' default bounds), the offline test cases from both (the
crawl and the app map), the offline spec files, then VerifyTests (one healing round).

- first attempt: tests whose first execution passed (no retry, no heal; Playwright's
  ``flaky``, a pass on a retry, does not count);
- after healing: passed, flaky or healed;
- routes covered: routes of the app's route list that a generated test opens
  (``page.goto('<path>')`` or ``request.<method>('<path>')``), split into the ones written in
  the source, the ones only the live app reveals and the ones behind a login. The SPA's list
  is ``tests/fixtures/spa/routes.json``; the others' are below.

    .venv/bin/python scripts/bench_grounding.py [--depths standard] [--apps spa]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from bench_verify import offline_files, verified  # sets up Django
from django.conf import settings

from agents import spec_blocks
from repositories.credentials import Credentials
from repositories.login import Recipe
from runs.demo.app import DemoTasks, serving
from runs.demo.content import DEMO_WEB
from tests.journey_app import JOURNEY_REPO, JourneyApp
from tests.journey_app import PASSWORD as JOURNEY_PASSWORD
from tests.journey_app import USERNAME as JOURNEY_USER
from tests.offline_checks import crawl as offline_crawl
from tests.spa_app import FIXTURE, TEST_EMAIL, TEST_PASSWORD, SpaApp, spa_repository
from tests.verify_apps import NOTES_REPO, NotesApp
from verification.exploration.explore import Bounds, explore
from verification.exploration.service import start_paths
from verification.exploration.writes import api_key_probe, write_paths
from verification.login import Login, signup_of, throwaway
from verification.service import runner_from_settings

KINDS = ("source", "live-only", "login")
# A generated test opening a path of the app: a page, or an API request.
_OPENS = re.compile(
    r"\b(?:page\.goto|request\.(?:get|post|put|patch|delete|head|fetch))\(\s*"
    r"(?P<q>['\"`])(?P<path>/[^'\"`]*)(?P=q)"
)

_FLOW_ID = re.compile(r"^(?:tc_)?(?:flow|journey)_\w*:")


def _route(path: str, login: bool = False, in_source: bool = True) -> dict:
    return {"path": path, "in_source": in_source, "login": login}


# How to sign in to the SPA: its fixed test account (tests/fixtures/spa/README.md).
SPA_LOGIN = Login(
    Recipe(
        path="/login",
        username_label="Email",
        password_label="Password",
        submit="Sign in",
        success="Sign out",  # the nav offers it once signed in
    ),
    Credentials(TEST_EMAIL, TEST_PASSWORD),
)

# The notes app with accounts signs its test account in as flaskr does (tests/journey_app.py).
JOURNEY_LOGIN = Login(
    Recipe(
        path="/login",
        username_label="Username",
        password_label="Password",
        submit="Log in",
        success="Log out",
    ),
    Credentials(JOURNEY_USER, JOURNEY_PASSWORD),
)


@dataclass(frozen=True)
class App:
    key: str  # for --apps
    name: str
    repo: dict[str, str]
    server: type
    routes: list[dict]
    login: Login | None = None  # None: the app has no login


def apps() -> list[App]:
    spa_routes = json.loads((FIXTURE / "routes.json").read_text())["routes"]
    demo_routes = [_route(p) for p in ("/", "/tasks", "/tasks/{taskId}", "/about")]
    account_routes = [_route(p) for p in ("/", "/register", "/login")] + [
        _route(p, login=True) for p in ("/notes/new", "/notes/{id}", "/notes/{id}/edit")
    ]
    return [
        App("demo", "demo/web", DEMO_WEB, DemoTasks, demo_routes),
        App("notes", "notes (Flask)", NOTES_REPO, NotesApp, [_route("/"), _route("/login")]),
        App("spa", "spa", spa_repository(), SpaApp, spa_routes, login=SPA_LOGIN),
        App(
            "accounts",
            "notes with accounts",
            JOURNEY_REPO,
            JourneyApp,
            account_routes,
            login=JOURNEY_LOGIN,
        ),
    ]


def session_options(app: App, app_map: dict | None = None) -> dict:
    """What exploration and verification are given to sign in to ``app``: its recipe, else
    (verification) the sign-up its exploration made, as a run does."""
    if app.login:
        return {"login": app.login}
    signup = signup_of(app_map)
    return {"login": Login(signup)} if signup else {}


def kind(route: dict) -> str:
    return "login" if route["login"] else ("source" if route["in_source"] else "live-only")


def opened(files: list[dict]) -> dict[tuple[str, str], set[str]]:
    """(file, test title) → the paths the test opens, query and fragment dropped."""
    out = {}
    for f in files:
        for block in spec_blocks.blocks(f["contents"]):
            out[(f["path"], block.title)] = {
                p for m in _OPENS.finditer(block.text) for p in _route_paths(m["path"])
            }
    return out


def _route_paths(opened_path: str) -> set[str]:
    """The path a test opens, query and fragment dropped, trailing slash too; and, for a hash
    route (``/#/active``), the path with its route, which a route list may name."""
    path, _, fragment = opened_path.partition("#")
    path = path.split("?")[0].rstrip("/") or "/"
    return {path, f"{path}#{fragment.rstrip('/')}"} if fragment.startswith("/") else {path}


def covered(routes: list[dict], paths: set[str]) -> list[dict]:
    """The routes one of ``paths`` opens; a ``{param}`` matches one path segment, and a
    trailing slash is dropped on both sides (``/polls/{id}/`` is ``/polls/1``)."""
    out = []
    for route in routes:
        path = route["path"].rstrip("/") or "/"
        pattern = re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(path))
        if any(re.fullmatch(pattern, p) for p in paths):
            out.append(route)
    return out


def on_wrong_page(passing_code: list[str], app_map: dict) -> int:
    """Passing tests that opened a page exploration saw answer 404 or send the browser to a
    login, and do not expect that 404 or that login: they passed without seeing their
    subject."""
    wrong = {p["path"] for p in app_map["pages"] if p.get("login_redirect") or p["status"] == 404}
    wrong |= set(app_map.get("behind_login") or [])
    wrong = {p.rstrip("/") or "/" for p in wrong}
    count = 0
    for code in passing_code:
        pages = {m["path"].rstrip("/") or "/" for m in _OPENS.finditer(code) if "goto" in m[0]}
        expects = "toBe(404)" in code or "'sent to the login'" in code
        count += bool(pages & wrong) and not expects
    return count


def explored(app: App, url: str) -> tuple[dict, float]:
    began = time.monotonic()
    signs_up = not app.login and settings.AMTP_EXPLORE_SIGN_UP
    with tempfile.TemporaryDirectory() as shots, throwaway() if signs_up else nullcontext() as new:
        app_map = explore(
            url,
            allow_hosts=["127.0.0.1"],
            runner=runner_from_settings(),
            bounds=(bounds := Bounds.from_settings()),
            shots_dir=Path(shots),
            start_paths=start_paths(crawl := offline_crawl(app.repo), "/", bounds.max_pages),
            writes=write_paths(crawl),
            api_key=api_key_probe(crawl),
            signup=new,
            **session_options(app),
        )
    return app_map, time.monotonic() - began


def measure(app: App, depth: str) -> dict:
    with serving(app.server()) as url:
        return measure_at(app, url, depth)


def measure_at(app, url: str, depth: str) -> dict:
    """The figures of ``app`` (an App, or anything with its ``repo``, ``routes`` and
    ``login``) already listening at ``url``."""
    app_map, explore_s = explored(app, url)
    files = offline_files(app.repo, depth, app_map)
    began = time.monotonic()
    report = verified(url, files, **session_options(app, app_map))
    verify_s = time.monotonic() - began
    tests = report["tests"]
    after = {"passed", "flaky", "healed"}
    by_test = opened(files)
    passing = {(t["file"], t["title"]) for t in tests if t["status"] in after}
    flows = [t for t in tests if is_flow(t["title"])]
    passing_code = [
        b.text
        for f in report.get("files") or files
        for b in spec_blocks.blocks(f["contents"])
        if (f["path"], b.title) in passing and not b.modifier
    ]
    return {
        "tests": len(tests),
        "first": sum(t["status"] == "passed" and t["attempts"] == 1 for t in tests),
        "not_first": [
            f"{t['title'][:90]}: {t['status']}, {t.get('reason') or t.get('error') or ''}"[:300]
            for t in tests
            if not (t["status"] == "passed" and t["attempts"] == 1)
        ],
        "journeys": sum(": Journey " in t["title"] for t in tests),
        "journeys_first": sum(
            ": Journey " in t["title"] and t["status"] == "passed" and t["attempts"] == 1
            for t in tests
        ),
        "after": sum(t["status"] in after for t in tests),
        "pages": len(app_map["pages"]),
        "behind_login": sum(1 for p in app_map["pages"] if p.get("login_redirect")),
        "signed_in": bool(app_map.get("signup") and app_map["signup"]["signed_in"]),
        "trials": len(app_map.get("trials") or []),
        "explore_s": explore_s,
        "verify_s": verify_s,
        "named": covered(app.routes, set().union(*by_test.values())),
        "passing": covered(app.routes, set().union(*(by_test.get(k, set()) for k in passing))),
        "flows": len(flows),
        "flows_passing": sum(t["status"] in after for t in flows),
        # The code of each passing test as it last ran (healed, where healing changed it).
        "passing_code": passing_code,
        "on_wrong_page": on_wrong_page(passing_code, app_map),
        "not_passing": [
            {"title": t["title"], "status": t["status"], "reason": (t.get("reason") or "")[:300]}
            for t in tests
            if t["status"] not in after
        ],
        # A test that ends failed or quarantined must say why (the report's reason).
        "unexplained": [
            t["title"]
            for t in tests
            if t["status"] in ("failed", "quarantined") and not (t.get("reason") or "").strip()
        ],
    }


def is_flow(title: str) -> bool:
    """A flow test: its case id (the title's first word) is a ``flow_…`` or ``journey_…`` one."""
    return bool(_FLOW_ID.match(title))


def _share(count: int, total: int) -> str:
    return f"{count}/{total} ({100 * count / total:.0f}%)" if total else "0/0"


def _split(routes: list[dict], hit: list[dict]) -> str:
    parts = []
    for k in KINDS:
        total = sum(kind(r) == k for r in routes)
        if total:
            parts.append(f"{k} {sum(kind(r) == k for r in hit)}/{total}")
    return ", ".join(parts)


def report(app: App, depth: str, m: dict) -> None:
    missed = [r["path"] for r in app.routes if r not in m["named"]]
    print(
        f"| {app.name} | {depth} | {m['pages']} | {m['explore_s']:.1f} | {m['tests']} "
        f"| {_share(m['first'], m['tests'])} | {_share(m['after'], m['tests'])} "
        f"| {_share(m['journeys_first'], m['journeys'])} "
        f"| {_share(len(m['named']), len(app.routes))}: {_split(app.routes, m['named'])} "
        f"| {_share(len(m['passing']), len(app.routes))} "
        f"| {', '.join(missed) or '-'} | {m['verify_s']:.1f} |",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depths", default="standard")
    parser.add_argument("--apps", default="", help="comma-separated: demo, notes, spa, accounts")
    args = parser.parse_args()
    keys = {k.strip() for k in args.apps.split(",") if k.strip()}
    chosen = [a for a in apps() if not keys or a.key in keys]
    print(
        "| app | depth | pages explored | explore s | tests | first attempt | after healing "
        "| journeys passed first "
        "| routes covered: source, live-only, login | routes in a passing test | not covered "
        "| verify s |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: |")
    ratios = []
    for app in chosen:
        for depth in args.depths.split(","):
            m = measure(app, depth)
            report(app, depth, m)
            ratios.append((app, depth, m))
    for app, depth, m in ratios:
        for line in m["not_first"]:  # every test not passed first time, with its reason
            print(f"NOT FIRST {app.key}/{depth}: {' '.join(line.split())}")
        goal = app.name == "spa" and depth == "standard"
        name = f"grounding_{app.key}_{depth}"
        first = m["first"] / m["tests"] if m["tests"] else 0.0
        cover = len(m["named"]) / len(app.routes)
        print(
            f"RATIO {name}_first_attempt: {first:.0%} of {m['tests']} tests"
            + (" (goal >= 90%)" if goal else "")
        )
        print(f"RATIO {name}_journeys_first_attempt: {m['journeys_first']} of {m['journeys']}")
        print(
            f"RATIO {name}_routes_covered: {cover:.0%} of {len(app.routes)} routes"
            + (" (goal >= 80%)" if goal else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
