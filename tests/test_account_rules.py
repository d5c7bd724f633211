"""Apps with accounts, as the offline engine reads their app maps: a page that redirects is
tested as that redirect, a heading naming the exploration's account is never expected, a
form's refusal is expected whole, a journey logs out by the app's own control, and a new
account's answers (taken, wrong password) are asserted with the test's own account.

The maps copy the layouts of real projects: Express's auth example (``/`` redirects to
``/login``; a failed login flashes "Authentication failed…" after a redirect), the Flask
Mega-Tutorial's microblog (a signed-in user is sent from ``/login`` and ``/register`` to
``/index``, whose heading greets the user by name) and Flask's tutorial flaskr (``Log Out``
in the nav; "User … is already registered.", "Incorrect password.").
"""

import json

from agents.offline import generate_cases, generate_files
from agents.offline.common import REDACTED
from agents.offline.flows import flow_candidates
from agents.offline.journeys import journey_candidates
from repositories.secrets import MARKER
from tests.offline_checks import TEST_DIR, check_playwright
from tests.test_journeys import RUNNING, flaskr, form, page

SIGN_IN = (("Username", "text"), ("Password", "password"))
REGISTER = (("Username", "text"), ("Email", "text"), ("Password", "password"))


def cases_for(app_map: dict) -> list[dict]:
    stack = {"runtime": "node", "frameworks": ["express"], "routes": [], "pages": []}
    request = {"run_id": "r", "detected_stack": stack, "app_map": app_map}
    return generate_cases(request, "standard")["test_cases"]


def code_of(cases: list[dict]) -> str:
    files = generate_files(
        {"target_framework": "playwright", "test_cases": cases}, test_dir=TEST_DIR, app_id=None
    )
    check_playwright(files)
    return "\n".join(f["contents"] for f in files)


def test_a_page_that_redirected_is_tested_as_that_redirect():
    """Express's auth example: ``/`` sends every browser to ``/login``, whose heading the
    recorded page shows; the test expects the address it led to, never ``/`` to stay."""
    login = page("/login", '- heading "Login" [level=1]', forms=[form("Login", *SIGN_IN)])
    home = {**login, "path": "/", "redirected_to": "/login"}
    cases = {c["id"]: c for c in cases_for({"pages": [home, login], "trials": []})}
    home_case = cases["tc_page_home"]
    assert home_case["title"] == 'Home page redirects to /login, which shows its heading "Login"'
    code = code_of([home_case])
    assert (
        "await expect.poll(() => page.evaluate(() => location.pathname), 'where it led')"
        '.toBe("/login");' in code
    )
    assert "the page it opened, not a redirect" not in code
    assert 'page.goto("/")' in code
    # A hostile target is no redirect: the page is tested as itself.
    for target in ("//evil.test/", "/login?next=/", "/"):
        cases = cases_for({"pages": [{**home, "redirected_to": target}], "trials": []})
        assert "redirects" not in cases[0]["title"], target


def test_a_heading_that_names_the_explorers_account_is_never_expected():
    """microblog greets the signed-in user ("Hi, <name>!"); the exploration's account is
    scrubbed from the map, and the tests' own account has another name."""
    assert MARKER.startswith(REDACTED)
    greeting = f'- heading "Hi, {MARKER.format(kind="held-secret")}!" [level=1]\n'
    index = page("/index", greeting + '- textbox "Say something"\n- button "Submit"')
    (case,) = [c for c in cases_for({"pages": [index]}) if c["id"] == "tc_page_index"]
    assert "REDACTED" not in json.dumps(case) and "heading" not in case["expected"]
    assert 'the textbox "Say something" is visible' in case["expected"]


def _trial(refused: str, appeared: list[dict]) -> dict:
    return {
        "path": "/login",
        "form": 0,
        "submit": "Login",
        "filled": [
            {"label": "Username:", "type": "text", "option": ""},
            {"label": "Password:", "type": "text", "option": ""},
        ],
        "path_after": "/login",
        "status": 200,
        "appeared": appeared,
        "shows_value": False,
        "error": "",
        "refused": refused,
    }


SAID = 'Authentication failed, please check your username and password. (use "tj" and "foobar")'


def test_a_form_that_refused_its_values_is_a_flow_expecting_the_message_whole():
    trial = _trial(SAID, [{"role": "paragraph", "text": SAID}])
    (flow,) = flow_candidates({"trials": [trial]}, RUNNING)
    assert flow.key == "flow_login_login_refused"
    assert flow.steps == [
        "Open /login",
        'Fill "Username:" with a unique text',
        'Fill "Password:" with a unique text',
        'Click the button "Login"',
    ]
    case = {"id": "tc_" + flow.key, "title": flow.title, "steps": flow.steps}
    code = code_of([case | {"expected": flow.expected, "priority": "high"}])
    assert f"page.getByText({json.dumps(SAID)}, {{ exact: true }})" in code
    # The browser's own check (no element of the page says it), a message the page cut,
    # and one with code-looking characters give no flow.
    for refused, appeared in (
        ("Username: Please fill out this field.", []),
        (SAID, [{"role": "paragraph", "text": SAID[:50]}]),
        ("Bad `x` ${y}", [{"role": "alert", "text": "Bad `x` ${y}"}]),
    ):
        assert flow_candidates({"trials": [_trial(refused, appeared)]}, RUNNING) == []


def test_the_sign_out_journey_logs_out_by_the_apps_own_control():
    app_map = flaskr()
    app_map["pages"][0]["snapshot"] += '- link "Log Out"\n'  # flaskr's nav, signed in
    (journey, leaving) = journey_candidates(app_map, RUNNING)
    assert leaving.key == "journey_sign_out"
    assert leaving.steps[0] == "Clear the browser's cookies"  # a session of its own
    assert leaving.steps[-3:] == [
        "Open /",
        'Click the link "Log Out"',
        'Expect the user to be signed out, offered "Log In"',
    ]
    code = code_of([{"id": "tc_s", "title": "t", "steps": leaving.steps, "expected": ""}])
    assert "await page.context().clearCookies();" in code
    assert "getByRole('link', { name: \"Log In\", exact: true })" in code
    assert ").toHaveCount(0);" in code  # no control signs out any more


def test_a_signed_in_explorer_signs_up_through_the_recorded_forms():
    """microblog: signed in, ``/login`` and ``/register`` sent the explorer to ``/index``; the
    journey still signs up and in through the forms the exploration's sign-up used."""
    index = page("/index", '- heading "Microblog" [level=1]\n- link "Logout"')
    walled = [{**index, "path": p, "redirected_to": "/index"} for p in ("/login", "/register", "/")]
    signup = {
        "path": "/register",
        "form": form("Register", *REGISTER),
        "login_path": "/login",
        "login_form": form("Sign In", *SIGN_IN),
        "signed_in": True,
    }
    app_map = {"pages": [*walled, index], "trials": [], "signup": signup}
    (leaving,) = journey_candidates(app_map, RUNNING)
    assert leaving.steps[:5] == [
        "Clear the browser's cookies",
        "Open /register",
        'Fill "Username" with a unique username',
        'Fill "Email" with a unique email',
        'Fill "Password" with a unique password',
    ]
    assert 'Expect the user to be signed out, offered "Sign In"' in leaving.steps
    assert journey_candidates({**app_map, "signup": {"path": "//x", "form": []}}, RUNNING) == []


def _account_map(**changes) -> dict:
    taken = {"method": "POST", "path": "/auth/register", "payload": "taken", "status": 200}
    taken |= {"fields": ["username", "password"], "kinds": ["username", "password"]}
    taken |= {"path_after": "/auth/register", "signed_up_to": "/auth/login"}
    taken |= {"message": "User amtp_{tag} is already registered."}
    wrong = {**taken, "path": "/auth/login", "payload": "wrong_password", "signed_up_to": ""}
    wrong |= {"path_after": "/auth/login", "message": "Incorrect password."}
    bare = {**taken, "payload": "no_password", "signed_up_to": ""}
    bare |= {"message": "Password is required."}
    return {"pages": [], "trials": [], "writes": [bare, {**taken, **changes}, wrong]}


def test_a_new_accounts_answers_are_asserted_with_the_tests_own_account():
    stack = {"runtime": "python", "frameworks": ["flask"], "pages": []}
    stack["routes"] = [
        {"method": "POST", "path": "/auth/register"},
        {"method": "POST", "path": "/auth/login"},
    ]
    request = {"run_id": "r", "detected_stack": stack, "app_map": _account_map()}
    cases = {c["id"]: c for c in generate_cases(request, "standard")["test_cases"]}
    taken = cases["tc_api_post_auth_register_taken"]
    wrong = cases["tc_api_post_auth_login_wrong_password"]
    bare = cases["tc_api_post_auth_register_no_password"]
    assert bare["title"].endswith('no password answers 200: "Password is required."')
    assert "\"password\": ''" in code_of([bare])
    code = code_of([taken, wrong])
    # Sent as the probe sent them: from a request context of its own, not the suite's session.
    assert code.count("newContext({ baseURL, storageState: { cookies: [], origins: [] } });") == 2
    account = "form: { \"username\": 'amtp_' + tag, \"password\": 'Pw-' + tag + '-9x!' }"
    assert code.count(f'request.post("/auth/register", {{ {account} }});') == 3
    assert "\"password\": 'Wrong-' + tag + '-1x!'" in code
    assert 'toContain("User amtp_" + tag + " is already registered.");' in code
    assert 'expect(new URL(response.url()).pathname).toBe("/auth/login");' in code
    assert 'toContain("Incorrect password.");' in code
    # A hostile record (a field name that leaves its quotes, a kind no form has) is no test.
    for bad in ({"fields": ['a"', "b"]}, {"kinds": ["username", "root"]}):
        request["app_map"] = _account_map(**bad)
        ids = [c["id"] for c in generate_cases(request, "standard")["test_cases"]]
        assert not [i for i in ids if i.endswith(("_taken", "_wrong_password"))], bad


def test_a_greeting_of_the_account_is_expected_with_the_tests_own_name_only():
    """The exploration's user name became ``{account}`` (explore.py); the page test reads its
    own account's name from the file its setup saved. A placeholder twice, or beside text
    that is no UI text, is not expected at all."""
    welcome = page("/welcome", '- heading "Hi, {account}!" [level=1]')
    (case,) = [c for c in cases_for({"pages": [welcome]}) if c["id"] == "tc_page_welcome"]
    code = code_of([case])
    assert "import { readFileSync } from 'node:fs';" in code
    assert 'name: "Hi, " + account + "!", exact: true' in code
    for hostile in ("{account} and {account}", "Hi, {account} `${x}`", "Hi, {other}!"):
        bad = page("/welcome", f'- heading "{hostile}" [level=1]')
        (case,) = [c for c in cases_for({"pages": [bad]}) if c["id"] == "tc_page_welcome"]
        assert "heading" not in case["expected"] and "account" not in code_of([case]), hostile


def test_a_form_that_renames_the_signed_in_account_runs_as_a_user_of_its_own():
    """microblog's /edit_profile holds the signed-in user's name; its trial renamed the
    exploration's account, and the same flow in the tests' shared session would rename
    theirs under every test that greets them by name."""
    profile = page(
        "/edit_profile",
        '- heading "Edit Profile" [level=1]\n- textbox "Username": {account}\n'
        '- textbox "About me"\n- button "Submit"',
        forms=[form("Submit", ("Username", "text"), ("About me", "textarea"))],
    )
    trial = {
        "path": "/edit_profile",
        "form": 0,
        "submit": "Submit",
        "filled": [
            {"label": "Username", "type": "text", "option": ""},
            {"label": "About me", "type": "text", "option": ""},
        ],
        "path_after": "/edit_profile",
        "status": 200,
        "appeared": [{"role": "alert", "text": "Your changes have been saved."}],
        "shows_value": False,
        "error": "",
        "refused": "",
    }
    signup = {
        "path": "/register",
        "form": form("Register", *REGISTER),
        "login_path": "/login",
        "login_form": form("Sign In", *SIGN_IN),
        "signed_in": True,
    }
    app_map = {"pages": [profile], "trials": [trial], "signup": signup}
    (flow,) = [c for c in cases_for(app_map) if c["id"].startswith("tc_flow_edit_profile")]
    assert flow["steps"][:2] == ["Clear the browser's cookies", "Open /register"]
    assert flow["steps"][-4:] == [
        "Open /edit_profile",
        'Fill "Username" with a unique text',
        'Fill "About me" with a unique text',
        'Click the button "Submit"',
    ]
    without = {**app_map, "signup": None}  # no way to a user of its own: no flow
    assert not [c for c in cases_for(without) if c["id"].startswith("tc_flow")]


def test_a_write_that_ends_on_the_login_signed_out_is_sent_from_a_context_of_its_own():
    out = {"method": "POST", "path": "/create", "payload": "signed_out", "status": 200}
    out |= {"fields": ["title", "body"], "path_after": "/auth/login", "message": ""}
    stack = {"runtime": "python", "frameworks": ["flask"], "pages": []}
    stack["routes"] = [{"method": "POST", "path": "/create"}]
    app_map = {"pages": [], "trials": [], "writes": [out]}
    request = {"run_id": "r", "detected_stack": stack, "app_map": app_map}
    cases = {c["id"]: c for c in generate_cases(request, "standard")["test_cases"]}
    case = cases["tc_api_post_create_signed_out"]
    assert case["title"] == "POST /create signed out ends on /auth/login (200)"
    code = code_of([case])
    assert "async ({ playwright, baseURL }) =>" in code  # not the suite's signed-in request
    assert "newContext({ baseURL, storageState: { cookies: [], origins: [] } });" in code
    assert 'expect(new URL(response.url()).pathname).toBe("/auth/login");' in code
