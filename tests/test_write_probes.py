"""Write probes: the writes the offline tests send are sent once during exploration, and the
tests assert what the app answered (status, where it ended, the message it showed).

The routes come from the real flaskr source (tests/fixtures/realworld/flaskr: blueprints,
``login_required``, ``flash``); a stand-in answers as flaskr does signed out (its
``base.html`` shows each flashed message in ``<div class="flash">``; ``login_required``
redirects to ``/auth/login``), so the test needs no Flask. Everything the box hands back is
hostile: a record must name a write that was asked, and a message reaches the code quoted.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import schemas
from agents.offline import generate_cases
from runs.demo.app import serve
from tests.offline_checks import crawl, joined, playwright_files
from tests.plans import verified
from tests.realworld_apps import script
from tests.test_browser import chromium_path
from tests.todomvc_app import FIXTURE
from verification.exploration.explore import Bounds, explore
from verification.exploration.service import app_view, start_paths
from verification.exploration.writes import write_paths, writes
from verification.service import runner_from_settings

FLASKR = FIXTURE.parents[1] / "flaskr"
REPO = {
    str(p.relative_to(FLASKR)): p.read_text()
    for p in sorted(FLASKR.rglob("*"))
    if p.is_file() and p.suffix in (".py", ".html", ".sql", ".toml")
}
PAGE = (
    "<!doctype html><title>{title} - Flaskr</title><nav><h1><a href='/'>Flaskr</a></h1><ul>"
    "<li><a href='/auth/register'>Register</a><li><a href='/auth/login'>Log In</a></ul></nav>"
    "<section class='content'><header><h1>{title}</h1></header>{flash}{body}</section>"
)
FORM = (
    "<form method='post'><label for='username'>Username</label>"
    "<input name='username' id='username' required><label for='password'>Password</label>"
    "<input type='password' name='password' id='password' required>"
    "<input type='submit' value='{button}'></form>"
)


def flaskr_signed_out(environ, start_response):
    path, method = environ["PATH_INFO"], environ["REQUEST_METHOD"]
    size = int(environ.get("CONTENT_LENGTH") or 0)
    raw = environ["wsgi.input"].read(size).decode() if size else ""
    sent = json.loads(raw) if raw.startswith("{") else parse_qs(raw)
    if path in ("/auth/register", "/auth/login"):
        title, button = ("Register", "Register") if "register" in path else ("Log In", "Log In")
        flash = ""
        if method == "POST":  # flaskr's checks, in its order
            said = "Incorrect username."  # login: no such user
            if "register" in path and not sent.get("username"):
                said = "Username is required."
            flash = f"<div class='flash'>{said}</div>"
        body = FORM.format(button=button)
        return _html(start_response, "200 OK", PAGE.format(title=title, flash=flash, body=body))
    if path == "/":
        return _html(start_response, "200 OK", PAGE.format(title="Posts", flash="", body=""))
    if path == "/create" or path.endswith(("/update", "/delete")):  # login_required
        start_response("302 Found", [("Location", "/auth/login")])
        return [b""]
    return _html(start_response, "404 Not Found", "<h1>Not Found</h1>")


def _html(start_response, status: str, text: str):
    start_response(status, [("Content-Type", "text/html; charset=utf-8")])
    return [text.encode()]


def test_the_writes_tests_send_are_probed_and_asserted_as_answered(tmp_path):
    chromium_path()
    crawler = crawl(REPO)
    asked = write_paths(crawler)
    # Every write route of the source; a parameter on a record that cannot exist; the
    # delete only there (a destructive route on a record that may exist is never sent).
    assert sorted(asked) == [
        ["POST", "/999999999/delete"],
        ["POST", "/999999999/update"],
        ["POST", "/auth/login"],
        # A sign-in route is also sent a username and password no account has.
        ["POST", "/auth/login", "credentials"],
        ["POST", "/auth/register"],
        ["POST", "/create"],
    ]
    server, url = serve(flaskr_signed_out)
    try:
        app_map = explore(
            url,
            allow_hosts=["127.0.0.1"],
            runner=runner_from_settings(),
            bounds=Bounds(6, 1, 60, 10, 1 << 20),
            shots_dir=tmp_path / "shots",
            start_paths=start_paths(crawler, "/", 6),
            writes=asked,
        )
        schemas.validate("exploration/app_map", app_map)
        answered = {
            (w["path"], w["payload"]): (w["status"], w["path_after"], w["message"])
            for w in app_map["writes"]
        }
        assert answered == {
            # The page's form, its fields sent empty (a browser's empty form, unvalidated).
            ("/auth/register", "form"): (200, "/auth/register", "Username is required."),
            ("/auth/login", "form"): (200, "/auth/login", "Incorrect username."),
            ("/auth/login", "credentials"): (200, "/auth/login", "Incorrect username."),
            ("/create", "empty"): (200, "/auth/login", ""),  # login_required: the login page
            ("/999999999/update", "empty"): (200, "/auth/login", ""),
            ("/999999999/delete", "empty"): (200, "/auth/login", ""),
        }
        request = crawler | {"app_map": app_view(app_map, crawler), "depth_level": "standard"}
        cases = [
            c
            for c in generate_cases(request, "standard")["test_cases"]
            if c["id"].startswith("tc_api_post")
        ]
        titles = {c["title"] for c in cases}
        assert (
            'POST /auth/register with an empty payload answers 200: "Username is required."'
            in titles
        )
        assert "POST /create with an empty payload answers 200, ending on /auth/login" in titles
        files = playwright_files(cases)
        code = joined(files)
        assert 'expect(await response.text()).toContain("Incorrect username.");' in code
        assert 'expect(new URL(response.url()).pathname).toBe("/auth/login");' in code
        empty = "form: { \"username\": '', \"password\": '' }"
        assert f'request.post("/auth/register", {{ {empty} }});' in code
        sign_in = 'form: { username: "amtp_nobody", password: "amtp-not-the-password" }'
        assert f'request.post("/auth/login", {{ {sign_in} }});' in code
        tests = verified(files, url, tmp_path / "evidence")["tests"]
        assert [(t["status"], t["attempts"]) for t in tests] == [("passed", 1)] * 6, tests
    finally:
        server.shutdown()
        server.server_close()
    # flaskr's own suite, as the benchmark counts it (behaviours.yaml).
    rb = script("realworld_behaviours")
    own = rb.load(FLASKR / "behaviours.yaml")
    assert sorted(rb.exercised(own, [f["contents"] for f in files])) == [
        "create-login-required",
        "delete-login-required",
        "login-incorrect-username",
        "register-username-required",
        "update-login-required",
    ]


def test_hostile_write_records_are_refused_or_emptied():
    asked = [["POST", p] for p in ("/create", "/auth/login", "/x", "/y", "/z")]
    raw = [
        {"method": "POST", "path": "/elsewhere", "status": 200},  # never asked
        {"method": "POST", "path": "/create", "status": True},  # a bool is no status
        {"method": "POST", "path": "/x", "payload": "credentials", "status": 200},  # not asked
        {"method": "POST", "path": "/x", "payload": "admin", "status": 200},  # no such payload
        # A field name that would break out of its quotes: the record is refused.
        {"method": "POST", "path": "/x", "payload": "form", "fields": ['a", b: "'], "status": 200},
        {
            "method": "POST",
            "path": "/auth/login",
            "status": 200,
            "path_after": "//evil.test/",
            "message": "<script>alert(1)</script>",
        },
        {"method": "POST", "path": "/x", "status": 302, "message": "Hello amtp.tag123456"},
        {"method": "POST", "path": "/y", "status": 400, "message": 'Wrong "quote"'},
        # A message shown after a redirect came through the session: not kept (nor when the
        # box does not say there was none).
        {
            "method": "POST",
            "path": "/create",
            "status": 200,
            "path_after": "/login",
            "message": "Hi.",
        },
        # A message whose first sentence is clean keeps that sentence (express's auth example).
        {
            "method": "POST",
            "path": "/z",
            "status": 200,
            "redirected": False,
            "message": 'Failed, check it. (use "tj")',
        },
    ]
    found = writes(raw, asked, "tag123456", held=["s3cret"])
    assert found == [
        {
            "method": "POST",
            "path": "/auth/login",
            "payload": "empty",
            "fields": [],
            "status": 200,
            "path_after": "",
            "message": "",
        },
        {
            "method": "POST",
            "path": "/x",
            "payload": "empty",
            "fields": [],
            "status": 302,
            "path_after": "",
            "message": "",
        },
        {
            "method": "POST",
            "path": "/y",
            "payload": "empty",
            "fields": [],
            "status": 400,
            "path_after": "",
            "message": "",
        },
        {
            "method": "POST",
            "path": "/create",
            "payload": "empty",
            "fields": [],
            "status": 200,
            "path_after": "/login",
            "message": "",
        },
        {
            "method": "POST",
            "path": "/z",
            "payload": "empty",
            "fields": [],
            "status": 200,
            "path_after": "",
            "message": "Failed, check it.",
        },
    ]
