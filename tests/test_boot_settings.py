"""The repository's boot settings: hostile values are refused naming the field and the rule
(nothing saved); the app's environment is stored encrypted, its names shown, its values never;
the settings override the recipe found in the repository."""

import pytest
from django.urls import reverse

from repositories import boot_settings
from repositories.boot_settings import boot_settings_of
from repositories.credentials import app_environment
from repositories.errors import CredentialsUnavailable, RepositoryInvalid
from repositories.models import Repository
from repositories.services import repository_create, repository_update
from tests.admin_helpers import change_url
from tests.gitrepo import make_git_repo
from tests.test_admin import _repository_form
from verification.boot.recipe import find_recipe

pytestmark = pytest.mark.django_db

SECRET = "sk_test_canary_Zq8rT41"


@pytest.fixture
def repo(tmp_path):
    path = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    return repository_create(full_name="acme/shop", host="local", local_path=path)


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("boot_start", "npm start\nrm -rf /", boot_settings.COMMAND_INVALID),
        ("boot_seed", "x" * 1001, None),  # the model's max_length speaks first
        ("boot_port", 80, boot_settings.PORT_INVALID),
        ("boot_port", 70000, boot_settings.PORT_INVALID),
        ("boot_ready_path", "//evil.example/", boot_settings.READY_PATH_INVALID),
        ("boot_ready_path", "health", boot_settings.READY_PATH_INVALID),
        ("boot_services", ["postgres", "mysql"], boot_settings.SERVICES_INVALID),
        ("boot_services", "postgres", boot_settings.SERVICES_INVALID),
        ("boot_workdir", "../outside", boot_settings.WORKDIR_INVALID),
        ("boot_workdir", "/etc", boot_settings.WORKDIR_INVALID),
        ("boot_install", "npm ci\nnpm run build\x1b[2J", None),
        ("boot_env_worker", ["LD_PRELOAD"], None),
        ("boot_env_worker", ["lower"], None),
        ("boot_env", "PATH=/tmp/evil", boot_settings.ENV_INVALID),
        ("boot_env", "NO_EQUALS_SIGN", boot_settings.ENV_INVALID),
        ("boot_env", "GOOD=1\nBAD NAME=2", boot_settings.ENV_INVALID),
    ],
)
def test_hostile_boot_settings_name_the_field_and_change_nothing(repo, field, value, rule):
    with pytest.raises(RepositoryInvalid) as caught:
        repository_update(repository=repo, **{field: value})
    assert list(caught.value.errors) == [field]
    if rule:
        assert caught.value.errors[field] == [rule] or caught.value.errors[field][0].startswith(
            rule
        )
    stored = Repository.objects.get(pk=repo.pk)
    assert (stored.boot_start, stored.boot_port, stored.boot_env_token) == ("", None, "")


def test_the_app_environment_is_stored_encrypted_and_resolved_in_one_place(repo, monkeypatch):
    repository_update(
        repository=repo,
        boot_env=f"STRIPE_KEY={SECRET}\nFEATURE=on",
        boot_env_worker=["SENTRY_DSN"],
    )
    stored = Repository.objects.get(pk=repo.pk)
    assert stored.boot_env_names == ["FEATURE", "STRIPE_KEY"]
    assert SECRET not in stored.boot_env_token
    with pytest.raises(CredentialsUnavailable, match="AMTP_APP_SENTRY_DSN"):
        app_environment(stored)
    monkeypatch.setenv("AMTP_APP_SENTRY_DSN", "https://dsn.example/1")
    assert app_environment(stored) == {
        "STRIPE_KEY": SECRET,
        "FEATURE": "on",
        "SENTRY_DSN": "https://dsn.example/1",
    }
    repository_update(repository=stored, boot_start="npm start")  # not typed: kept
    assert Repository.objects.get(pk=repo.pk).boot_env_names == ["FEATURE", "STRIPE_KEY"]
    with pytest.raises(RepositoryInvalid) as caught:  # one name, two sources: which one?
        repository_update(repository=stored, boot_env_worker=["STRIPE_KEY"])
    assert "STRIPE_KEY" in caught.value.errors["boot_env_worker"][0]
    repository_update(repository=stored, boot_env="")
    assert Repository.objects.get(pk=repo.pk).boot_env_token == ""


def test_the_settings_override_the_found_recipe(repo):
    repository_update(
        repository=repo,
        boot_install="npm ci\nnpm run build",
        boot_port=4100,
        boot_services=["postgres"],
        boot_env=f"STRIPE_KEY={SECRET}",
    )
    overrides = boot_settings_of(Repository.objects.get(pk=repo.pk))
    recipe = find_recipe({"package.json": '{"scripts": {"start": "node s.js"}}'}, overrides)
    assert recipe.install == ("npm ci", "npm run build")
    assert (recipe.port, recipe.services, recipe.secret_env) == (
        4100,
        ("postgres",),
        ("STRIPE_KEY",),
    )
    assert SECRET not in str(recipe.as_config())
    assert recipe.source.endswith("install, port, services, secret_env from repository settings")
    assert boot_settings_of(Repository(full_name="acme/none")) is None


def test_admin_shows_the_names_never_the_values(admin_client, tmp_path):
    path = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    form = _repository_form(local_path=path, boot_start="npm start", boot_port=3000)
    typed = {"boot_env": f"STRIPE_KEY={SECRET}", "boot_services": "postgres, valkey"}
    response = admin_client.post(reverse("admin:repositories_repository_add"), {**form, **typed})
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert "boot_env" in response.wsgi_request.sensitive_post_parameters
    repo = Repository.objects.get(full_name="acme/local")
    assert repo.boot_services == ["postgres", "valkey"]
    page = admin_client.get(change_url(repo)).content.decode()
    assert SECRET not in page and "Stored encrypted: STRIPE_KEY" in page
    assert admin_client.post(change_url(repo), form).status_code == 302  # blank: kept
    assert app_environment(Repository.objects.get(pk=repo.pk)) == {"STRIPE_KEY": SECRET}
    cleared = {**form, "clear_boot_env": "on"}
    assert admin_client.post(change_url(repo), cleared).status_code == 302
    assert Repository.objects.get(pk=repo.pk).boot_env_names == []
    response = admin_client.post(change_url(repo), {**form, "boot_port": "22"})
    assert response.context["adminform"].form.errors["boot_port"] == [boot_settings.PORT_INVALID]
