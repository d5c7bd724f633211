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
from runs.demo.app import serving
from tests.exploring import bounds, explore_loopback
from tests.offline_checks import crawl, joined, playwright_files
from tests.plans import verified
from tests.realworld_apps import script
from tests.test_browser import chromium_path
from tests.todomvc_app import FIXTURE
from verification.exploration.service import app_view, start_paths
from verification.exploration.writes import write_paths, writes

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


USERS: dict[str, str] = {}  # flaskr's user table: name → password


def flaskr_signed_out(environ, start_response):
    path, method = environ["PATH_INFO"], environ["REQUEST_METHOD"]
    size = int(environ.get("CONTENT_LENGTH") or 0)
    raw = environ["wsgi.input"].read(size).decode() if size else ""
    sent = json.loads(raw) if raw.startswith("{") else parse_qs(raw)
    if path in ("/auth/register", "/auth/login"):
        title, button = ("Register", "Register") if "register" in path else ("Log In", "Log In")
        flash = ""
        if method == "POST":  # flaskr's checks, in its order
            name, password = (sent.get(k, [""])[0] for k in ("username", "password"))
            said = "Incorrect username." if name not in USERS else "Incorrect password."
            if "register" in path:
                said = "Username is required." if not name else "Password is required."
                if name and password:
                    said = f"User {name} is already registered."
                if name and password and name not in USERS:
                    USERS[name] = password
                    start_response("302 Found", [("Location", "/auth/login")])
                    return [b""]
            elif name in USERS and USERS[name] == password:
                start_response("302 Found", [("Location", "/")])
                return [b""]
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
        # With a sign-up route: a new user name without a password, then a new account
        # signed up twice ("taken"), then signed in with a wrong password (each in a
        # session of its own).
        ["POST", "/auth/login", "wrong_password"],
        ["POST", "/auth/register"],
        ["POST", "/auth/register", "no_password"],
        ["POST", "/auth/register", "taken"],
        ["POST", "/create"],
    ]
    with serving(flaskr_signed_out) as url:
        app_map = explore_loopback(
            url,
            tmp_path / "shots",
            start_paths=start_paths(crawler, "/", 6),
            bounds=bounds(max_pages=6, max_depth=1, page_timeout_s=10, max_bytes=1 << 20),
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
            # The account's name in a message is the test's own: {tag}.
            ("/auth/register", "taken"): (
                200,
                "/auth/register",
                "User amtp_{tag} is already registered.",
            ),
            ("/auth/login", "wrong_password"): (200, "/auth/login", "Incorrect password."),
            ("/auth/register", "no_password"): (200, "/auth/register", "Password is required."),
        }
        (taken,) = [w for w in app_map["writes"] if w["payload"] == "taken"]
        assert taken["kinds"] == ["username", "password"] and taken["signed_up_to"] == "/auth/login"
        assert len(USERS) == 1  # one account, signed up by the probe
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
        taken = 'expect(await response2.text()).toContain("User amtp_" + tag + " is already registered.");'
        assert taken in code
        tests = verified(files, url, tmp_path / "evidence")["tests"]
        assert [(t["status"], t["attempts"]) for t in tests] == [("passed", 1)] * 9, tests
        assert len(USERS) == 3  # the probe's, then one per account test
    # flaskr's own suite, as the benchmark counts it (behaviours.yaml).
    rb = script("realworld_behaviours")
    own = rb.load(FLASKR / "behaviours.yaml")
    assert sorted(rb.exercised(own, [f["contents"] for f in files])) == [
        "create-login-required",
        "delete-login-required",
        "login-incorrect-password",
        "login-incorrect-username",
        "register",
        "register-password-required",
        "register-taken",
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


def test_hostile_account_probe_records_are_refused_or_emptied():
    asked = [["POST", "/register", "taken"], ["POST", "/login", "wrong_password"]]
    base = {"method": "POST", "path": "/register", "payload": "taken", "status": 200}
    base |= {"fields": ["username", "password"], "kinds": ["username", "password"]}
    raw = [
        {**base, "kinds": ["username", "admin"]},  # a kind no account field has
        {**base, "kinds": ["username"]},  # fewer kinds than fields
        {**base, "kinds": ["username", "email"]},  # no password: no account form
        {**base, "payload": "wrong_password"},  # not asked for this path
        {
            **base,
            "redirected": False,
            "signed_up_to": "//evil.test/",
            # The probe's own name becomes {tag}; a held value empties the message.
            "message": "User amtp_tag123456 is already registered.",
        },
        {
            **base,
            "path": "/login",
            "payload": "wrong_password",
            "redirected": False,
            "message": "Wrong password for s3cret.",
        },
    ]
    found = writes(raw, asked, "tag123456", held=["s3cret"])
    assert [(w["payload"], w["message"], w.get("signed_up_to")) for w in found] == [
        ("taken", "User amtp_{tag} is already registered.", ""),
        ("wrong_password", "", ""),
    ]
    assert write_paths({"detected_stack": {"routes": [{"method": "POST", "path": "/login"}]}}) == [
        ["POST", "/login"],
        ["POST", "/login", "credentials"],  # no sign-up route: no account to sign in with
    ]


def test_a_write_sent_signed_out_is_kept_only_after_its_own_answer():
    """Logged in by a recipe, the box also sends each write without a session; the record
    follows the write's own, takes its fields, and never carries a message."""
    asked = [["POST", "/create"], ["POST", "/1/update"]]
    own = {"method": "POST", "path": "/create", "payload": "form", "status": 200}
    own |= {"fields": ["title"], "path_after": "/create", "redirected": False}
    own |= {"message": "Title is required."}
    out = {"method": "POST", "path": "/create", "payload": "signed_out", "status": 200}
    out |= {"path_after": "/auth/login", "redirected": True, "message": "Please log in."}
    alone = {**out, "path": "/1/update"}  # no own answer before it: dropped
    found = writes([alone, own, out, out], asked, "tag123456", held=[])
    assert [(w["payload"], w["fields"], w["path_after"], w["message"]) for w in found] == [
        ("form", ["title"], "/create", "Title is required."),
        ("signed_out", ["title"], "/auth/login", ""),
    ]


def test_a_write_that_answered_a_server_error_is_never_expected():
    """An empty POST the explored app answered 500 (a real bug) keeps the test that fails on
    a server error; a 4xx refusal is what the app meant, and is expected as answered."""
    stack = {"runtime": "python", "routes": [{"method": "POST", "path": "/api/notes"}]}
    stack["routes"].append({"method": "POST", "path": "/api/tags"})
    writes_seen = [
        {"method": "POST", "path": "/api/notes", "payload": "empty", "status": 500},
        {"method": "POST", "path": "/api/tags", "payload": "empty", "status": 422},
    ]
    for record in writes_seen:
        record |= {"fields": [], "message": "", "path_after": record["path"]}
    app_map = {"pages": [], "writes": writes_seen}
    request = {"run_id": "r", "detected_stack": stack | {"pages": []}, "app_map": app_map}
    titles = {c["title"] for c in generate_cases(request, "standard")["test_cases"]}
    assert "POST /api/notes answers an empty payload without a server error" in titles
    assert not any("answers 500" in title for title in titles), titles
    assert "POST /api/tags with an empty payload answers 422" in titles
