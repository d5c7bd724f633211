"""The single-page app fixture (tests/fixtures/spa, served by tests/spa_app.py): its server
behaves as the fixture's README says, its committed route list is what the app's runtime
route table builds, and exploring it reaches the routes only the running app reveals."""

import json
import re
import urllib.error
import urllib.request

import pytest

import schemas
from agents.offline import generate_cases
from runs.demo.app import serving
from tests.exploring import bounds, explore_loopback
from tests.offline_checks import crawl, playwright_files
from tests.plans import verified
from tests.spa_app import FIXTURE, TEST_EMAIL, TEST_PASSWORD, SpaApp, spa_repository
from tests.test_browser import chromium_path
from verification.exploration.service import app_view

ROUTES = json.loads((FIXTURE / "routes.json").read_text())["routes"]
LOGIN = json.dumps({"email": TEST_EMAIL, "password": TEST_PASSWORD}).encode()


@pytest.fixture
def app():
    spa = SpaApp()
    with serving(spa) as url:
        spa.url = url
        yield spa


def call(url: str, method: str = "GET", body: bytes | None = None, cookie: str = ""):
    """(status, headers, body) of one request; errors are answers too."""
    headers = {"Content-Type": "application/json", **({"Cookie": cookie} if cookie else {})}
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def sign_in(url: str) -> str:
    status, headers, body = call(f"{url}/api/session", "POST", LOGIN)
    assert status == 200 and json.loads(body)["user"]["email"] == TEST_EMAIL
    return headers["Set-Cookie"].split(";")[0]


def test_private_pages_answer_401_until_signed_in_and_after_signing_out(app):
    for path in ("/api/pages/account", "/api/pages/billing"):
        assert call(app.url + path)[0] == 401
    assert call(f"{app.url}/api/account", "PUT", b'{"display_name": "X"}')[0] == 401
    assert json.loads(call(f"{app.url}/api/session")[2]) == {"user": None}
    wrong = json.dumps({"email": TEST_EMAIL, "password": "guess"}).encode()
    status, headers, body = call(f"{app.url}/api/session", "POST", wrong)
    assert (status, headers["Set-Cookie"]) == (401, None)
    assert json.loads(body) == {"error": "Wrong email or password."}

    status, headers, _ = call(f"{app.url}/api/session", "POST", LOGIN)
    assert status == 200
    assert re.fullmatch(
        r"planner_session=[\w-]{32}; Path=/; HttpOnly; SameSite=Lax", headers["Set-Cookie"]
    )
    cookie = headers["Set-Cookie"].split(";")[0]
    status, _, body = call(f"{app.url}/api/pages/account", cookie=cookie)
    assert status == 200 and json.loads(body)["heading"] == "Your account"
    status, _, body = call(f"{app.url}/api/account", "PUT", b'{"display_name": "Dana D."}', cookie)
    assert status == 200 and app.name == "Dana D."

    assert call(f"{app.url}/api/session", "DELETE", cookie=cookie)[0] == 204
    assert call(f"{app.url}/api/pages/billing", cookie=cookie)[0] == 401
    assert app.sessions == {}


def test_unknown_paths_get_the_front_end_and_unknown_apis_a_json_404(app):
    index = (FIXTURE / "index.html").read_bytes()
    for path in ("/features", "/account", "/no/such/page?x=1"):
        status, headers, body = call(app.url + path)
        assert (status, headers["Content-Type"], body) == (200, "text/html; charset=utf-8", index)
    status, headers, body = call(f"{app.url}/src/main.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    status, _, body = call(f"{app.url}/api/nothing")
    assert (status, json.loads(body)) == (404, {"error": "no API at GET /api/nothing"})
    assert call(f"{app.url}/api/pages/nothing")[0] == 404
    # Only the fixture's own front-end files are served, whatever the path tries.
    for path in ("/src/../../spa_app.py", "/src/%2e%2e/routes.json", "/src/routes.json"):
        assert call(app.url + path)[:1] == (404,)
    assert call(app.url + "/", "POST", b"{}")[0] == 405


def test_bad_input_is_refused_by_name_and_changes_nothing(app):
    cases = [
        ("/api/session", b"not json", "the body must be a JSON object"),
        ("/api/session", b'["a"]', "the body must be a JSON object"),
        ("/api/session", b'{"email": "a@b.c"}', "password: must be a non-empty string"),
        ("/api/messages", b'{"name": "A", "email": "a@b.c", "message": 7}', "message: must be"),
        (
            "/api/messages",
            b'{"name": "A", "email": "a@b.c", "message": "' + b"x" * 70_000,
            "at most 65536 bytes",
        ),
    ]
    for path, body, rule in cases:
        status, headers, answer = call(app.url + path, "POST", body)
        assert status == 400 and rule in json.loads(answer)["error"], (path, answer)
        assert headers["Set-Cookie"] is None
    assert app.sessions == {} and app.messages == []


def test_the_route_list_is_what_the_runtime_route_table_builds(app):
    """routes.json is the ground truth of the figures: `/`, `/login`, then one route per
    section of GET /api/sections (src/main.js), private ones behind the login, each with the
    heading its page API gives; and a route is written in the repository's files exactly when
    the list says so: only the running app can reveal the others."""
    sections = json.loads(call(f"{app.url}/api/sections")[2])
    built = {"/": False, "/login": False} | {f"/{s['slug']}": s["private"] for s in sections}
    assert {r["path"]: r["login"] for r in ROUTES} == built
    cookie = sign_in(app.url)
    for route in ROUTES:
        name = route["path"].strip("/") or "home"
        status, _, body = call(f"{app.url}/api/pages/{name}", cookie=cookie)
        assert status == 200 and json.loads(body)["heading"] == route["heading"]
    sources = spa_repository()
    assert {"index.html", "package.json", "README.md", "src/main.js"} <= set(sources)
    for route in ROUTES:
        written = re.compile(rf"(?<![\w.-]){re.escape(route['path'])}(?![\w/-])")
        found = [name for name, text in sources.items() if written.search(text)]
        assert bool(found) == route["in_source"], f"{route['path']} is written in {found}"


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    """The SPA explored signed out, its forms tried once (a fixed tag: the data is known)."""
    chromium_path()
    spa = SpaApp()
    with serving(spa) as spa.url:
        app_map = explore_loopback(
            spa.url,
            tmp_path_factory.mktemp("shots"),
            bounds=bounds(max_pages=20, max_depth=2, max_bytes=1 << 20, form_trials=5),
            tag="spatrial01",
        )
        yield spa, schemas.validate("exploration/app_map", app_map)


def test_exploration_reaches_the_routes_only_the_live_app_reveals(explored):
    app, app_map = explored
    pages = {page["path"]: page for page in app_map["pages"]}
    public = {r["path"]: r["heading"] for r in ROUTES if not r["login"]}
    live_only = {r["path"] for r in ROUTES if not r["in_source"] and not r["login"]}
    assert live_only <= set(pages["/"]["links"])  # the nav the client rendered from the API
    assert set(pages) == set(public), "signed out, only the public routes are reachable"
    for path, heading in public.items():
        assert pages[path]["status"] == 200 and pages[path]["console_errors"] == []
        assert f'- heading "{heading}" [level=1]' in pages[path]["snapshot"], path
    (login,) = pages["/login"]["forms"]
    assert login["submit"] == "Sign in"
    assert [(f["label"], f["type"]) for f in login["fields"]] == [
        ("Email", "email"),
        ("Password", "password"),
    ]
    (contact,) = pages["/contact"]["forms"]
    assert [f["label"] for f in contact["fields"]] == ["Name", "Email", "Message"]


def test_the_contact_form_is_tried_once_with_the_runs_data_and_the_sign_in_never(explored):
    app, app_map = explored
    (trial,) = app_map["trials"]  # /login has a password field: never submitted
    assert (trial["path"], trial["submit"], trial["error"]) == ("/contact", "Send message", "")
    assert [(f["label"], f["type"]) for f in trial["filled"]] == [
        ("Name", "text"),
        ("Email", "email"),
        ("Message", "text"),
    ]
    success = {"role": "status", "text": "Thanks, we will answer within a working day."}
    assert success in trial["appeared"] and not trial["shows_value"]
    assert (trial["path_after"], trial["status"]) == ("/contact", 0)  # no navigation
    assert app.messages == [
        {
            "name": "AMTP spatrial01",
            "email": "amtp.spatrial01@example.com",
            "message": "AMTP spatrial01",
        }
    ]


def test_the_flow_planned_from_the_trial_passes_on_its_first_attempt(explored, tmp_path):
    app, app_map = explored
    request = crawl(spa_repository()) | {"app_map": app_view(app_map)}
    cases = [
        c for c in generate_cases(request, "core")["test_cases"] if c["id"].startswith("tc_flow")
    ]
    assert [c["id"] for c in cases] == ["tc_flow_contact_send_message"]
    files = playwright_files(cases)
    report = verified(files, app.url, tmp_path / "evidence")
    (test,) = report["tests"]
    assert (test["status"], test["attempts"]) == ("passed", 1), test
    sent = app.messages[-1]  # the test's own data, not the exploration's
    assert sent["name"].startswith("AMTP ") and sent["name"] != "AMTP spatrial01"
    assert sent["email"] == f"amtp.{sent['name'][5:]}@example.com"
