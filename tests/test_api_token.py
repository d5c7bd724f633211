"""A JSON API with token auth, through the repository's API token path: exploration gets a
real token with the test account and asks again, with it, what was refused without it; the
generated tests get their own token through the setup project and assert what the account
gets. The token and the credentials reach no map, code, report or evidence.

The stand-in answers as FastAPI's "OAuth2 with Password, Bearer with JWT tokens" tutorial
does (tests/fixtures/realworld/fastapi-jwt/main.py): ``POST /token`` takes a form (username,
password) and answers ``{"access_token", "token_type": "bearer"}`` or 401 "Incorrect username
or password"; ``/users/me/`` and ``/users/me/items/`` answer 401 "Not authenticated" with
``WWW-Authenticate: Bearer`` without a token, and the user or their items with one.
"""

from __future__ import annotations

import json
import secrets
from urllib.parse import parse_qs

import pytest
import tree_sitter
from django.urls import reverse

import schemas
from agents.file_policy import TYPESCRIPT
from agents.offline import generate_cases
from agents.offline.api_shape import clean_apis
from repositories import login
from repositories.credentials import Credentials, credentials_for, in_use
from repositories.errors import RepositoryInvalid
from repositories.login import ApiKey, ApiToken, recipe_of
from repositories.models import Repository
from repositories.services import repository_create
from runs.demo.app import serving
from tests.admin_helpers import change_url
from tests.exploring import API_BOUNDS, explore_loopback
from tests.offline_checks import RUN_ID, crawl, joined, playwright_files
from tests.plans import verified
from tests.realworld_apps import script
from tests.test_admin import _repository_form
from tests.test_browser import chromium_path
from tests.test_login_recipe import CODE
from verification import summary
from verification.errors import LoginFailed
from verification.exploration.service import app_view
from verification.login import Login, setup_source, throwaway

USERNAME, PASSWORD = "qa-account", "canary-api-pw-4Rt9"
REPO = {
    "main.py": (
        "from fastapi import FastAPI\napp = FastAPI(openapi_url=None)\n\n"
        '@app.post("/token")\nasync def token():\n    return {}\n\n'
        '@app.get("/users/me/")\nasync def me():\n    return {}\n\n'
        '@app.get("/users/me/items/")\nasync def items():\n    return []\n'
    ),
    "requirements.txt": "fastapi\n",
}


class TokenApi:
    """A WSGI app that issues a fresh random token per good login (so none can be guessed or
    written down) and counts what it was asked."""

    def __init__(self, password: str = PASSWORD, json_only: bool = False):
        self.password, self.issued, self.asked = password, set(), []
        self.json_only = json_only  # as most Node APIs (express.json()): no form parser

    def __call__(self, environ, start_response):
        path, auth = environ["PATH_INFO"], environ.get("HTTP_AUTHORIZATION", "")
        if path == "/token" and environ["REQUEST_METHOD"] == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            raw = environ["wsgi.input"].read(size).decode()
            if self.json_only:
                sent = json.loads(raw) if environ.get("CONTENT_TYPE") == "application/json" else {}
                given = (sent.get("username"), sent.get("password"))
            else:
                form = parse_qs(raw)
                given = (form.get("username", [""])[0], form.get("password", [""])[0])
            if given != (USERNAME, self.password):
                return _json(start_response, 401, {"detail": "Incorrect username or password"})
            token = secrets.token_urlsafe(24)
            self.issued.add(token)
            return _json(start_response, 200, {"access_token": token, "token_type": "bearer"})
        if path in ("/users/me/", "/users/me/items/"):
            self.asked.append((path, auth.removeprefix("Bearer ") in self.issued))
            bearer = {"WWW-Authenticate": "Bearer"}
            if not auth.startswith("Bearer "):
                return _json(start_response, 401, {"detail": "Not authenticated"}, bearer)
            if auth.removeprefix("Bearer ") not in self.issued:
                return _json(start_response, 401, {"detail": "Could not validate credentials"})
            if path == "/users/me/":
                return _json(start_response, 200, {"username": USERNAME, "full_name": "QA"})
            return _json(start_response, 200, [{"item_id": "Foo", "owner": USERNAME}])
        start_response("404 Not Found", [("Content-Type", "application/json")])
        return [b'{"detail": "Not Found"}']


def _json(start_response, status: int, body, headers: dict | None = None):
    reason = {200: "OK", 401: "Unauthorized"}[status]
    extra = list((headers or {}).items())
    start_response(f"{status} {reason}", [("Content-Type", "application/json"), *extra])
    return [json.dumps(body).encode()]


@pytest.fixture(params=[False, True], ids=["form", "json"])
def api(request):
    chromium_path()
    app = TokenApi(json_only=request.param)
    with serving(app) as app.url:
        yield app


def _explore(api, tmp_path, password: str) -> dict:
    credentials = Credentials(USERNAME, password)
    with in_use(credentials):
        return explore_loopback(
            api.url,
            tmp_path / "shots",
            start_paths=["/users/me/", "/users/me/items/"],
            bounds=API_BOUNDS,
            login=Login(ApiToken("/token"), credentials),
        )


def test_a_real_token_is_used_and_the_tests_pass_first_time(api, tmp_path):
    app_map = _explore(api, tmp_path, PASSWORD)
    schemas.validate("exploration/app_map", app_map)
    seen = {(r["path"], r.get("auth", "none")): r["status"] for r in app_map["apis"]}
    assert seen[("/users/me/", "none")] == 401
    assert seen[("/users/me/", "token")] == 200 and seen[("/users/me/items/", "token")] == 200
    shown = json.dumps(app_map)
    assert not any(token in shown for token in api.issued)
    assert PASSWORD not in shown and USERNAME not in shown
    crawler = crawl(REPO)
    request = crawler | {"app_map": app_view(app_map, crawler), "depth_level": "core"}
    cases = [c for c in generate_cases(request, "core")["test_cases"] if "API token" in c["title"]]
    assert sorted(c["title"] for c in cases) == [
        "GET /users/me/ with the API token answers a JSON object with username and full_name",
        "GET /users/me/items/ with the API token answers a list of items with item_id and owner",
    ]
    files = playwright_files({"run_id": RUN_ID, "test_cases": cases, "coverage_notes": ""})
    code = joined(files)
    assert "headers: { Authorization: 'Bearer ' + apiToken() }" in code
    assert "AMTP_E2E" not in code  # the specs read the token, never the credentials
    credentials = Credentials(USERNAME, PASSWORD)
    with in_use(credentials):
        report = verified(
            files,
            api.url,
            tmp_path / "evidence",
            run_id="token-check",
            login=Login(ApiToken("/token"), credentials),
        )
    assert [(t["status"], t["attempts"]) for t in report["tests"]] == [("passed", 1)] * 2
    # The tests asked with a token the app issued (to the setup project, not exploration's).
    assert api.asked[-2:] == [("/users/me/", True), ("/users/me/items/", True)]
    assert len(api.issued) == 2
    kept = json.dumps(report).encode() + b"".join(
        p.read_bytes() for p in (tmp_path / "evidence").rglob("*") if p.is_file()
    )
    assert not any(token.encode() in kept for token in api.issued)
    assert PASSWORD.encode() not in kept
    # The benchmark's matcher counts the token's tests as FastAPI's own suite does.
    rb = script("realworld_behaviours")
    own = rb.load(
        script("realworld_start").ROOT / "tests/fixtures/realworld/fastapi-jwt/behaviours.yaml"
    )
    assert "items-with-token" in rb.exercised(own, [code])


def test_a_refused_token_request_fails_exploration_saying_so(api, tmp_path):
    with pytest.raises(LoginFailed) as failed:
        _explore(api, tmp_path, "not-the-password")
    message = failed.value.message
    assert message.startswith("login failed at /token: the API token path answered 401"), message
    assert "not-the-password" not in message and not api.issued


def test_only_the_token_may_be_accepted_in_a_shape_record():
    body = {"type": "object", "keys": [], "other_keys": 0, "empty": False, "item": None}
    raw = [
        {"path": "/a", "status": 200, "body": body, "auth": "token"},
        {"path": "/b", "status": 200, "body": body, "auth": "invalid_bearer"},  # made up
        {"path": "/c", "status": 200, "body": body, "auth": "Bearer x"},  # not a known way
    ]
    assert [(r["path"], r["auth"]) for r in clean_apis(raw, lambda p: True)] == [("/a", "token")]


# --- the setting ----------------------------------------------------------------------------

TYPED = {"login_username": "qa@example.com", "login_password": PASSWORD}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "errors"),
    [
        (
            {"api_token_path": "//evil.example/token"},
            {"api_token_path": [login.TOKEN_PATH_INVALID]},
        ),
        ({"api_token_path": "/\\evil.example"}, {"api_token_path": [login.TOKEN_PATH_INVALID]}),
        (
            {"api_token_path": "https://evil.example/token"},
            {"api_token_path": [login.TOKEN_PATH_INVALID]},
        ),
        ({"api_token_path": "javascript:alert(1)"}, {"api_token_path": [login.TOKEN_PATH_INVALID]}),
        ({"api_token_path": "/to ken"}, {"api_token_path": [login.TOKEN_PATH_INVALID]}),
        ({"api_token_path": "/token#x"}, {"api_token_path": [login.TOKEN_PATH_INVALID]}),
        ({"api_token_path": "/\x00"}, {"api_token_path": [login.TOKEN_PATH_INVALID]}),
        (
            {"api_token_path": "/" + "t" * 500},
            {"api_token_path": ["Ensure this value has at most 500 characters (it has 501)."]},
        ),
        (
            {
                "api_token_path": "/token",
                "login_path": "/login",
                "login_username_label": "Email",
                "login_password_label": "Password",
                "login_submit": "Sign in",
                "login_success": "/home",
            },
            {"api_token_path": [login.TOKEN_PATH_AND_LOGIN]},
        ),
        (
            {"api_token_path": "/token", "login_username": None, "login_password": None},
            {
                "login_username": [login.CREDENTIAL_MISSING.format(field="login_username_env")],
                "login_password": [login.CREDENTIAL_MISSING.format(field="login_password_env")],
            },
        ),
        (
            {"api_token_path": "/token", "login_password": "short"},
            {"login_password": [login.CREDENTIAL_INVALID.format(low=8, high=500)]},
        ),
        ({"api_key_in": "cookie sid"}, {"api_key_in": [login.KEY_IN_INVALID]}),
        ({"api_key_in": "query api key"}, {"api_key_in": [login.KEY_IN_INVALID]}),
        ({"api_key_in": "header X-API-Key\nX-Evil: 1"}, {"api_key_in": [login.KEY_IN_INVALID]}),
        ({"api_key_in": "query " + "k" * 41}, {"api_key_in": [login.KEY_IN_INVALID]}),
        ({"api_key_in": 'header "); evil("'}, {"api_key_in": [login.KEY_IN_INVALID]}),
        (
            {"api_key_in": "q" * 61},
            {"api_key_in": ["Ensure this value has at most 60 characters (it has 61)."]},
        ),
        (
            {"api_key_in": "query api-key", "api_token_path": "/token"},
            {"api_key_in": [login.TOKEN_PATH_AND_LOGIN]},
        ),
        (  # a key needs no user name, but the key itself (the login password)
            {"api_key_in": "header X-API-Key", "login_username": None, "login_password": None},
            {"login_password": [login.CREDENTIAL_MISSING.format(field="login_password_env")]},
        ),
    ],
)
def test_hostile_token_settings_are_refused_naming_field_and_rule(fields, errors):
    with pytest.raises(RepositoryInvalid) as caught:
        repository_create(full_name="acme/api", **{**TYPED, **fields})
    assert caught.value.errors == errors
    assert not Repository.objects.exists()


@pytest.mark.django_db
def test_a_key_place_is_a_recipe_with_the_password_as_the_key():
    repository = repository_create(
        full_name="acme/keyed", api_key_in="query api-key", login_password=PASSWORD
    )
    assert recipe_of(repository) == ApiKey("query parameter", "api-key")
    assert credentials_for(repository) == Credentials("", PASSWORD)


@pytest.mark.django_db
def test_a_token_path_is_the_repositorys_recipe_with_the_login_credentials():
    repository = repository_create(full_name="acme/api", api_token_path="/auth/token", **TYPED)
    assert recipe_of(repository) == ApiToken("/auth/token")
    assert PASSWORD not in repository.login_password_token  # stored encrypted, as a login's


def test_the_setup_and_the_pr_name_the_variables_never_a_value():
    hostile = ApiToken('/token"); process.exit(1); ("')
    source = setup_source(hostile)
    assert not tree_sitter.Parser(TYPESCRIPT).parse(source.encode()).root_node.has_error
    assert json.dumps(hostile.path) in source  # a string literal, never code
    assert "process.env.AMTP_E2E_USERNAME" in source and "playwright/.auth/user.json" in source
    files, _, body = summary.pull_request_contents(CODE, None, "e2e/amtp", login=ApiToken("/t"))
    assert files[-1] == {"path": "e2e/amtp/auth.setup.ts", "contents": setup_source(ApiToken("/t"))}
    assert "### API token" in body and "`AMTP_E2E_PASSWORD`" in body


@pytest.mark.django_db
def test_the_admin_saves_a_token_path_and_shows_a_bad_one_on_its_field(admin_client, tmp_path):
    from tests.gitrepo import make_git_repo

    path = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    add = reverse("admin:repositories_repository_add")
    form = _repository_form(local_path=path, api_token_path="//evil.example/token")
    response = admin_client.post(add, {**form, **TYPED})
    assert response.context["adminform"].form.errors["api_token_path"] == [login.TOKEN_PATH_INVALID]
    response = admin_client.post(add, {**form, "api_token_path": "/token", **TYPED})
    assert response.status_code == 302, response.context["adminform"].form.errors
    repository = Repository.objects.get(full_name="acme/local")
    assert recipe_of(repository) == ApiToken("/token")
    page = admin_client.get(change_url(repository)).content.decode()
    assert "API token path" in page and PASSWORD not in page


def test_the_sign_in_probe_runs_when_no_sign_up_happened(api, tmp_path):
    """Sign-up on (a throwaway account ready) but no sign-up form met: the crawl's session is
    the tests' (none), so the write probes run and the token path's refusal is recorded."""
    with throwaway() as account:
        app_map = explore_loopback(
            api.url,
            tmp_path / "shots",
            start_paths=["/users/me/"],
            bounds=API_BOUNDS,
            signup=account,
            writes=[["POST", "/token"], ["POST", "/token", "credentials"]],
        )
    assert app_map["signup"] is None or not app_map["signup"]["signed_in"]
    said = {(w["path"], w["payload"]): (w["status"], w["message"]) for w in app_map["writes"]}
    assert said[("/token", "credentials")] == (401, "Incorrect username or password")


def test_a_key_setups_source_parses_and_the_pr_names_its_variable():
    source = setup_source(ApiKey("header", "X-API-Key"))
    assert not tree_sitter.Parser(TYPESCRIPT).parse(source.encode()).root_node.has_error
    assert "process.env.AMTP_E2E_PASSWORD" in source and "request.post" not in source
    files, _, body = summary.pull_request_contents(
        CODE, None, "e2e/amtp", login=ApiKey("query parameter", "api-key")
    )
    assert files[-1]["path"] == "e2e/amtp/auth.setup.ts"
    assert "### API key" in body and "`AMTP_E2E_PASSWORD`" in body and "`api-key`" in body
