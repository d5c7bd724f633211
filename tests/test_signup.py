"""Sign-up when there is no login recipe: ExploreApp creates a throwaway account through the
app's own sign-up form (retrying once in another shape when the form refuses the first),
signs in with it and explores signed in; a page that sent the browser to a login is
recorded as such. The account's values appear nowhere in the map."""

import json

import pytest

import schemas
from agents.offline import generate_cases, generate_files
from agents.offline.live import live_pages
from runs import selectors
from runs.demo.app import serve
from tests.exploring import bounds, explore_loopback
from tests.factories import ArtifactFactory, RepositoryFactory, RunFactory
from tests.offline_checks import crawl
from tests.plans import verified
from tests.realworld_apps import app_repository
from tests.signup_app import SPECIAL_USE, SignupApp
from tests.test_browser import chromium_path
from verification.exploration.explore import _form, _page
from verification.exploration.service import app_view, exploration_note
from verification.exploration.signup import signup_record
from verification.login import (
    EMAIL_DOMAIN,
    Login,
    login_for,
    new_throwaway,
    setup_source,
    signup_of,
    throwaway,
)


@pytest.fixture
def served():
    chromium_path()
    apps = []

    def start(app):
        server, app.url = serve(app)
        apps.append(server)
        return app

    yield start
    for server in apps:
        server.shutdown()
        server.server_close()


def run_explore(app, tmp_path, account, **overrides) -> dict:
    limits = bounds(**{"max_pages": 20, "max_depth": 2, "form_trials": 5, **overrides})
    return explore_loopback(
        app.url, tmp_path, start_paths=["/", "/create"], bounds=limits, signup=account
    )


def test_exploration_signs_up_adapts_once_and_explores_signed_in(served, tmp_path):
    app = served(SignupApp(strict=True))
    with throwaway() as account:
        app_map = schemas.validate("exploration/app_map", run_explore(app, tmp_path, account))
        values = [v for values in account.accounts for v in values]
    signup = app_map["signup"]
    assert (signup["path"], signup["login_path"]) == ("/auth/register", "/auth/login")
    assert signup["signed_in"] and signup["retried"] and not signup["error"]
    # The first account's password held a symbol; the form said so and the second one passed.
    assert app.refused == ["Password must contain only letters and digits."]
    assert signup["refused"] == "Password must contain only letters and digits."
    (name,) = app.users
    assert name == account.accounts[1][0] and app.users[name][0].endswith("@" + EMAIL_DOMAIN)
    pages = {p["path"]: p for p in app_map["pages"]}
    # /create sent the anonymous browser to the login: visited again, signed in.
    assert pages["/create"]["login_redirect"] == ""
    assert '- heading "New Post" [level=1]' in pages["/create"]["snapshot"]
    assert '- heading "Your account" [level=1]' in pages["/account"]["snapshot"]
    # The account's name where the app shows it is the tests' own place; its password scrubbed.
    assert "{account}: [REDACTED:held-secret]" in pages["/account"]["snapshot"]
    assert '- heading "Hi, {account}!" [level=1]' in pages["/welcome"]["snapshot"]
    assert "/auth/logout" not in pages  # a signed-in crawl never signs itself out
    assert [f["label"] for f in signup["form"]["fields"]] == ["Username", "Email", "Password"]
    assert signup["login_form"]["submit"] == "Log In"
    # Signed in, the post form was tried: refused for its title's length, then fitted to it.
    (trial,) = [t for t in app_map["trials"] if t["path"] == "/create"]
    assert trial["retried"] == "Field must be between 20 and 80 characters long."
    assert trial["refused"] == "" and trial["shows_value"] and trial["path_after"] == "/"
    ((title, _author),) = app.posts
    assert title.startswith("AMTP ") and len(title) == 20
    text = json.dumps(app_map)
    assert not [v for v in values if v in text]  # the user name, shown by the app, scrubbed


CREATE_SPEC = """import { test, expect } from '@playwright/test';

test('a signed-in user writes a post', async ({ page }) => {
  await page.goto('/create');
  await expect(page.getByRole('heading', { name: 'New Post', exact: true })).toBeVisible();
});
"""


def test_the_tests_sign_up_through_their_own_setup_project(served, tmp_path):
    """The setup project AMTP writes from the exploration's sign-up makes an account of its
    own, in the shape the form accepted (no symbol here), and the tests start signed in."""
    app = served(SignupApp(strict=True))
    with throwaway() as account:
        app_map = run_explore(app, tmp_path, account, form_trials=0)
    signup = signup_of(app_map)
    assert signup is not None and not signup.symbols
    source = setup_source(signup)
    assert "process.env" not in source and "amtp" + "@" not in source
    assert '.getByLabel("Email", { exact: true }).fill(values.email)' in source
    files = [{"path": "e2e/amtp/create.spec.ts", "contents": CREATE_SPEC}]
    report = verified(files, app.url, tmp_path / "evidence", login=Login(signup))
    (test,) = report["tests"]
    assert (test["status"], test["attempts"]) == ("passed", 1), test
    assert len(app.users) == 2  # the exploration's account, then the setup's own
    assert app.refused == ["Password must contain only letters and digits."]  # exploring only


def test_a_page_greeting_the_signed_in_user_is_checked_with_the_tests_own_account(served, tmp_path):
    """The exploration's account is greeted on /welcome ("Hi, <name>!"); the tests' setup
    signs up another account and saves its name (never its password) for the specs, whose
    page test expects the greeting of that account."""
    app = served(SignupApp(strict=True))
    with throwaway() as account:
        app_map = run_explore(app, tmp_path, account, form_trials=0)
    request = crawl({"app.py": "x = 1\n"}) | {"app_map": app_view(app_map)}
    (case,) = [c for c in generate_cases(request, "standard")["test_cases"] if "welcome" in c["id"]]
    assert case["title"] == 'Page /welcome shows its heading "Hi, {account}!"'
    files = generate_files(
        {"target_framework": "playwright", "test_cases": [case]}, test_dir="e2e/amtp", app_id=None
    )
    assert (
        "readFileSync(\"playwright/.auth/account.json\", 'utf8')).username" in files[0]["contents"]
    )
    report = verified(files, app.url, tmp_path / "evidence", login=Login(signup_of(app_map)))
    (test,) = report["tests"]
    assert (test["status"], test["attempts"]) == ("passed", 1), test
    assert len(app.users) == 2  # the exploration's account, then the setup's own


def test_no_setup_project_from_a_sign_up_that_did_not_sign_in():
    form = {"action": "", "method": "post", "submit": "Register", "fields": []}
    record = {"path": "/r", "form": form, "login_path": "", "login_form": None}
    record |= {"signed_in": False, "retried": False, "refused": "", "error": "x"}
    assert signup_of({"signup": record}) is None and signup_of(None) is None
    unlabelled = {"label": "", "name": "pw", "type": "password", "required": True}
    record |= {"signed_in": True, "form": {**form, "fields": [unlabelled]}}
    assert signup_of({"signup": record}) is None  # nothing to find the field by


def test_without_an_account_pages_behind_the_login_are_marked(served, tmp_path):
    app = served(SignupApp())
    app_map = run_explore(app, tmp_path, None)
    pages = {p["path"]: p for p in app_map["pages"]}
    assert pages["/create"]["login_redirect"] == "/auth/login"
    assert pages["/account"]["login_redirect"] == "/auth/login"
    assert pages["/"]["login_redirect"] == "" and app_map["signup"] is None
    assert not app.users  # no account without a throwaway


def test_generated_accounts_pass_common_validators():
    accounts = new_throwaway().accounts
    assert len({a for acc in accounts for a in acc}) == 6
    for username, email, password in accounts:
        assert username.isalnum() and username.islower() and 3 <= len(username) <= 30
        domain = email.rpartition("@")[2]
        assert domain.rsplit(".", 1)[-1] not in SPECIAL_USE and "." in domain
        assert 12 <= len(password) <= 64 and any(c.isupper() for c in password)
        assert any(c.islower() for c in password) and any(c.isdigit() for c in password)
    assert not accounts[0][2].isalnum() and accounts[1][2].isalnum()  # two shapes
    assert "amtp" not in repr(new_throwaway())  # never printed


HOSTILE = [
    None,
    "x",
    {"path": "//evil.example/register", "form": {"submit": "Go", "fields": []}},
    {"path": "/register", "form": {"submit": "Register", "fields": [{"type": "text"}]}},
    {"path": "/register", "form": {"submit": "", "fields": [{"type": "password"}]}},
]


@pytest.mark.parametrize("raw", HOSTILE)
def test_a_hostile_signup_record_is_dropped(raw):
    assert signup_record(raw, _form, lambda p: isinstance(p, str) and p.startswith("/r")) is None


def test_a_hostile_signup_record_is_bounded(tmp_path):
    password = {"label": "Password", "name": "p", "type": "password", "required": True}
    raw = {
        "path": "/register",
        "form": {"submit": "Register", "fields": [password], "method": "DELETE"},
        "login_path": "//evil.example/login",
        "login_form": {"submit": "Log In", "fields": [password]},
        "signed_in": "yes",
        "retried": 1,
        "refused": "r" * 5000,
        "error": ["not", "text"],
    }
    record = signup_record(raw, _form, lambda p: isinstance(p, str) and p.startswith("/r"))
    assert record["login_form"] is None and record["login_path"] == ""
    assert (record["signed_in"], record["retried"], record["error"]) == (False, False, "")
    assert len(record["refused"]) <= 300 and record["form"]["method"] == "get"
    page = {"path": "/a", "login_redirect": "//evil.example/login"}
    assert _page(page, tmp_path, tmp_path)["login_redirect"] == ""


def test_agents_never_see_a_login_redirect_as_the_page_asked_for():
    login_page = {"path": "/create", "status": 200, "title": "Log In - Flaskr"}
    login_page |= {"snapshot": '- heading "Log In" [level=1]', "links": [], "forms": []}
    login_page |= {"login_redirect": "/auth/login", "depth": 0}
    home = {**login_page, "path": "/", "title": "Posts", "login_redirect": ""}
    content = {"target_url": "http://x", "pages": [home, login_page], "unvisited": 0}
    content |= {"stopped": "", "trials": [], "signup": None}
    view = app_view(content)
    assert [p["path"] for p in view["pages"]] == ["/"] and view["behind_login"] == ["/create"]
    assert "/create" not in live_pages(view)  # never titled "Log In"
    assert exploration_note(content) == "2 page(s), 0 form(s), 1 behind a login"


def test_the_offline_engine_tests_no_page_behind_a_login_as_itself():
    """flaskr's own files, explored without a session: /create showed the login, so no case
    opens it expecting the post form (nor the login's heading), only one that expects the
    login it asks for; with the sign-up's session (nothing behind the login) it is a page
    case again."""
    repo = app_repository("flaskr")
    login = {"path": "/create", "status": 200, "title": "Log In - Flaskr", "links": []}
    login |= {"snapshot": '- heading "Log In" [level=1]', "forms": [], "depth": 0}
    home = {**login, "path": "/", "title": "Posts - Flaskr", "login_redirect": ""}
    home["snapshot"] = '- heading "Posts" [level=1]'
    content = {"target_url": "http://x", "unvisited": 0, "stopped": "", "trials": []}
    opened = {}
    for walled in (True, False):
        page = {**login, "login_redirect": "/auth/login" if walled else ""}
        if not walled:
            page |= {"title": "New Post - Flaskr", "snapshot": '- heading "New Post" [level=1]'}
        view = app_view({**content, "pages": [home, page]})
        cases = generate_cases(crawl(repo) | {"app_map": view}, "standard")["test_cases"]
        steps = [" ".join(c["steps"]) + " " + c["expected"] for c in cases]
        opened[walled] = [s for s in steps if "Open /create" in s]
        assert not any("Log In" in s for s in steps)
    (asks,) = opened[True]
    assert 'asks for a login: the browser ends on "/auth/login"' in asks
    assert opened[False] and not any("asks for a login" in s for s in opened[False])


def _signup_map(signed_in: bool) -> dict:
    password = {"label": "Password", "name": "password", "type": "password", "required": True}
    form = {"action": "", "method": "post", "submit": "Register", "fields": [password]}
    record = {"path": "/auth/register", "form": form, "login_path": "", "login_form": None}
    return {"signup": record | {"signed_in": signed_in, "retried": False, "refused": ""}}


@pytest.mark.django_db
def test_a_run_that_explores_nothing_signs_up_as_the_last_exploration_did():
    """A maintenance run (or a check) has no app map: its tests sign up as the repository's
    last exploration that signed in did; another repository's sign-up is not used."""
    repo, other = RepositoryFactory(), RepositoryFactory()
    assert selectors.signed_up_map(repo) is None
    ArtifactFactory(run=RunFactory(repository=other), kind="app_map", content=_signup_map(True))
    ArtifactFactory(run=RunFactory(repository=repo), kind="app_map", content=_signup_map(False))
    assert selectors.signed_up_map(repo) is None
    latest = _signup_map(True)
    latest["signup"]["path"] = "/register"
    ArtifactFactory(run=RunFactory(repository=repo), kind="app_map", content=latest)
    with login_for(repo, selectors.signed_up_map(repo)) as login:
        assert login.recipe.path == "/register" and login.env() == {}


def test_hostile_labels_stay_string_literals_in_the_setup_project():
    hostile = "x\"); require('child_process').execSync('id'); (\"\u2028`${1}`"
    field = {"label": hostile, "name": "user", "type": "text", "required": True}
    password = {"label": "Pass\nword", "name": "p", "type": "password", "required": True}
    form = {"action": "", "method": "post", "submit": hostile, "fields": [field, password]}
    record = {"path": "/r", "form": form, "login_path": "", "login_form": None}
    record |= {"signed_in": True, "retried": True, "refused": "", "error": ""}
    source = setup_source(signup_of({"signup": record}))
    literal = json.dumps(hostile)
    assert source.count(literal) == 3 and hostile not in source  # label, button (twice)
    assert "\u2028" not in source and "execSync('id'); (" not in source.replace(literal, "")
