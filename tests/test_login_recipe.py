"""A repository's login recipe: hostile values are refused naming the field and the rule, the
credentials are stored encrypted, never shown again, and resolved in one place; the pull
request carries the AMTP-written setup file and the variables' names, never their values."""

import json
import logging

import pytest
import tree_sitter
from django.urls import reverse

from agents.file_policy import TYPESCRIPT
from repositories import credentials, login
from repositories.credentials import credentials_for
from repositories.errors import CredentialsUnavailable, RepositoryInvalid
from repositories.login import recipe_of
from repositories.models import Repository
from repositories.services import repository_create, repository_update
from tests.admin_helpers import change_url
from tests.factories import RunFactory
from tests.test_admin import _repository_form
from verification import summary
from verification.amtp_header import with_amtp_header
from verification.login import setup_source

pytestmark = pytest.mark.django_db

PASSWORD = "canary-pw-Zq8#rT"
RECIPE = {
    "preview_url": "https://preview.example.com/app",
    "login_path": "/login",
    "login_username_label": "Email",
    "login_password_label": "Password",
    "login_submit": "Sign in",
    "login_success": "/dashboard",
}


TYPED = {"login_username": "qa@example.com", "login_password": PASSWORD}


def invalid(**fields) -> dict[str, list[str]]:
    with pytest.raises(RepositoryInvalid) as caught:
        repository_create(full_name="acme/shop", **{**RECIPE, **TYPED, **fields})
    assert not Repository.objects.exists()
    return caught.value.errors


@pytest.mark.parametrize(
    ("fields", "errors"),
    [
        ({"login_path": "javascript:alert(1)"}, {"login_path": [login.LOGIN_PATH_INVALID]}),
        ({"login_path": "//evil.example/login"}, {"login_path": [login.LOGIN_PATH_INVALID]}),
        ({"login_path": "/\\evil.example"}, {"login_path": [login.LOGIN_PATH_INVALID]}),
        ({"login_path": "/log in"}, {"login_path": [login.LOGIN_PATH_INVALID]}),
        (
            {"login_path": "https://evil.example/login"},
            {
                "login_path": [
                    login.LOGIN_PATH_ELSEWHERE.format(
                        url="https://evil.example:443", origin="https://preview.example.com:443"
                    )
                ]
            },
        ),
        (
            {"login_path": "http://preview.example.com/login"},  # another scheme: elsewhere
            {
                "login_path": [
                    login.LOGIN_PATH_ELSEWHERE.format(
                        url="http://preview.example.com:80",
                        origin="https://preview.example.com:443",
                    )
                ]
            },
        ),
        (
            {"login_path": "https://preview.example.com/login", "preview_url": ""},
            {"login_path": [login.LOGIN_PATH_NO_PREVIEW]},
        ),
        (
            {"login_submit": "", "login_username_label": "Email\n<script>", "login_success": "//x"},
            {
                "login_username_label": [login.TEXT_INVALID],
                "login_submit": [login.REQUIRED],
                "login_success": [login.SUCCESS_PATH_INVALID],
            },
        ),
        (
            {
                "login_username": None,
                "login_password": None,
                "login_username_env": "DATABASE_URL",
                "login_password_env": "ANTHROPIC_API_KEY",
            },
            {"login_username_env": [login.ENV_INVALID], "login_password_env": [login.ENV_INVALID]},
        ),
        (
            {"login_username": "me", "login_password": "short\x00"},
            {
                "login_username": [login.CREDENTIAL_INVALID.format(low=3, high=500)],
                "login_password": [login.CREDENTIAL_INVALID.format(low=8, high=500)],
            },
        ),
        (
            {"login_password": None},
            {"login_password": [login.CREDENTIAL_MISSING.format(field="login_password_env")]},
        ),
        (
            {"login_password_env": "AMTP_LOGIN_SHOP_PASSWORD"},
            {"login_password_env": [login.CREDENTIAL_TWICE.format(what="password")]},
        ),
    ],
)
def test_hostile_recipes_are_refused_naming_field_and_rule(fields, errors, caplog):
    caplog.set_level(logging.DEBUG)
    assert invalid(**fields) == errors
    assert PASSWORD not in caplog.text


def test_a_same_origin_url_is_stored_as_its_path():
    repo = repository_create(
        full_name="acme/shop",
        **{**RECIPE, "login_path": "https://preview.example.com/auth/login?next=%2F"},
        login_username_env="AMTP_LOGIN_SHOP_USER",
        login_password_env="AMTP_LOGIN_SHOP_PASSWORD",
    )
    assert repo.login_path == "/auth/login?next=%2F"
    assert recipe_of(repo).success_is_path and recipe_of(Repository(full_name="a/b")) is None


def test_credentials_are_stored_encrypted_and_resolved_in_one_place(settings, monkeypatch):
    repo = repository_create(
        full_name="acme/shop", **RECIPE, login_username="qa@example.com", login_password=PASSWORD
    )
    stored = json.dumps(list(Repository.objects.filter(pk=repo.pk).values()), default=str)
    assert PASSWORD not in stored and "qa@example.com" not in stored
    found = credentials_for(Repository.objects.get(pk=repo.pk))
    assert (found.username, found.password) == ("qa@example.com", PASSWORD)
    assert PASSWORD not in repr(found)
    repository_update(repository=repo, login_submit="Log in")  # untouched: kept
    assert credentials_for(Repository.objects.get(pk=repo.pk)).password == PASSWORD

    settings.AMTP_CREDENTIALS_KEY = credentials.Fernet.generate_key().decode()
    with pytest.raises(CredentialsUnavailable, match="does not decrypt"):
        credentials_for(repo)
    settings.AMTP_CREDENTIALS_KEY = ""  # production: DEBUG derives none
    with pytest.raises(CredentialsUnavailable, match="AMTP_CREDENTIALS_KEY is not set"):
        credentials_for(repo)
    with pytest.raises(RepositoryInvalid) as caught:
        repository_update(repository=repo, login_password="another-password")
    assert caught.value.errors == {"login_password": [credentials.NO_KEY]}

    repository_update(
        repository=repo,
        login_username="",
        login_password="",
        login_username_env="AMTP_LOGIN_SHOP_USER",
        login_password_env="AMTP_LOGIN_SHOP_PASSWORD",
    )
    with pytest.raises(CredentialsUnavailable, match="no environment variable AMTP_LOGIN_SHOP_"):
        credentials_for(repo)
    monkeypatch.setenv("AMTP_LOGIN_SHOP_USER", "env-user")
    monkeypatch.setenv("AMTP_LOGIN_SHOP_PASSWORD", "env-password")
    assert credentials_for(repo).password == "env-password"


def test_admin_never_shows_the_credentials_again(admin_client, tmp_path, caplog):
    from tests.gitrepo import make_git_repo

    caplog.set_level(logging.DEBUG)
    path = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    form = _repository_form(local_path=path, **RECIPE)
    typed = {"login_username": "qa@example.com", "login_password": PASSWORD}
    response = admin_client.post(reverse("admin:repositories_repository_add"), {**form, **typed})
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert set(response.wsgi_request.sensitive_post_parameters) >= set(typed)
    repo = Repository.objects.get(full_name="acme/local")
    page = admin_client.get(change_url(repo)).content.decode()
    assert PASSWORD not in page and "qa@example.com" not in page
    assert "Stored encrypted (never shown)" in page
    assert admin_client.post(change_url(repo), form).status_code == 302  # blank: kept
    assert credentials_for(Repository.objects.get(pk=repo.pk)).password == PASSWORD
    cleared = {**form, "clear_login_credentials": "on"}
    response = admin_client.post(change_url(repo), cleared)  # a recipe then lacks them
    assert response.context["adminform"].form.errors["login_password"] == [
        login.CREDENTIAL_MISSING.format(field="login_password_env")
    ]
    history = admin_client.get(change_url(repo) + "history/").content.decode()
    assert PASSWORD not in history + caplog.text
    run = RunFactory(repository=repo)  # nor does the API show them, or their tokens
    answers = [admin_client.get(f"/api/runs/{run.run_id}{tail}") for tail in ("", "/context")]
    assert [answer.status_code for answer in answers] == [200, 200]
    shown = "".join(answer.content.decode() for answer in answers)
    assert "acme/local" in shown  # the answers are about this repository's run
    for value in (PASSWORD, "qa@example.com", repo.login_password_token[:20]):
        assert value not in shown


CODE = {
    "framework": "playwright",
    "files": [{"path": "e2e/amtp/home.spec.ts", "contents": "test('x', async () => {});\n"}],
    "pr_title": "Add tests",
    "pr_body": "Tests.",
}


def test_the_pr_carries_the_setup_file_and_variable_names_only():
    repo = Repository(**{**RECIPE, "login_submit": "Sign in'); require('fs')//"})
    recipe = recipe_of(repo)
    files, _, body = summary.pull_request_contents(CODE, None, "e2e/amtp", login=recipe)
    setup = files[-1]
    assert setup == {"path": "e2e/amtp/auth.setup.ts", "contents": setup_source(recipe)}
    # a hostile label stays a string literal: the file passes the generated-code syntax check
    tree = tree_sitter.Parser(TYPESCRIPT).parse(setup["contents"].encode())
    assert not tree.root_node.has_error
    assert "name: \"Sign in'); require('fs')//\"" in setup["contents"]
    assert "process.env.AMTP_E2E_PASSWORD" in setup["contents"]
    assert "AMTP_E2E_USERNAME" in body and "dependencies: ['setup']" in body
    no_login = summary.pull_request_contents(CODE, None, "e2e/amtp")
    assert no_login[0] == with_amtp_header(CODE["files"]) and "AMTP_E2E" not in no_login[2]
