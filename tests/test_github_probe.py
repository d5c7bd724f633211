"""GITHUB_API_URL as GitHub documents it, and the GitHub half of ``manage.py check_providers``
against the fake GitHub API over HTTP (no database)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from amtp_site.errors import ConfigurationError
from amtp_site.github_url import check_github_api_url
from repositories.hosts import probe
from repositories.hosts.probe import check_github
from tests.fakes.github_api import FakeGitHub
from tests.test_github_host import REPO, rsa_pair


# -- GITHUB_API_URL ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("https://api.github.com", "https://api.github.com"),
        ("https://api.github.com/", "https://api.github.com"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com/api/v3"),
        ("https://ghe.example.com:8443/api/v3/", "https://ghe.example.com:8443/api/v3"),
        ("https://api.octocorp.ghe.com", "https://api.octocorp.ghe.com"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),  # a local stand-in, as given
    ],
)
def test_api_urls_github_documents(given, kept):
    assert check_github_api_url(given) == kept


@pytest.mark.parametrize(
    ("given", "fix"),
    [
        ("https://ghe.example.com", "set GITHUB_API_URL=https://ghe.example.com/api/v3"),
        ("https://ghe.example.com/api", "set GITHUB_API_URL=https://ghe.example.com/api/v3"),
        ("https://github.com", "set GITHUB_API_URL=https://api.github.com"),
        ("https://api.github.com/api/v3", "set GITHUB_API_URL=https://api.github.com"),
        ("https://octocorp.ghe.com", "set GITHUB_API_URL=https://api.octocorp.ghe.com"),
        ("ghe.example.com/api/v3", "set GITHUB_API_URL=https://api.github.com"),
        ("https://x:ghp_secret@ghe.example.com/api/v3", "GITHUB_TOKEN"),
    ],
)
def test_api_urls_that_cannot_work_say_what_to_set(given, fix):
    with pytest.raises(ConfigurationError) as caught:
        check_github_api_url(given)
    assert fix in caught.value.message and not caught.value.retryable


def test_settings_refuse_a_ghes_url_without_api_v3_at_start_up():
    env = {**os.environ, "GITHUB_API_URL": "https://ghe.example.com"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "ConfigurationError" in result.stderr
    assert "set GITHUB_API_URL=https://ghe.example.com/api/v3" in result.stderr


# -- manage.py check_providers: GitHub -------------------------------------------------------
@pytest.fixture
def gh(settings):
    with FakeGitHub() as fake:
        fake.create_repo(REPO, files={"a.txt": "a"})
        settings.GITHUB_API_URL, settings.GITHUB_TOKEN = fake.url, fake.token
        settings.GITHUB_APP_ID = settings.GITHUB_APP_PRIVATE_KEY = ""
        yield fake


def levels(findings) -> list[str]:
    return [f.level for f in findings]


def test_no_credential_is_a_warning(settings):
    settings.GITHUB_TOKEN = settings.GITHUB_APP_ID = settings.GITHUB_APP_PRIVATE_KEY = ""
    assert check_github() == [probe.Finding("warning", probe.NO_CREDENTIAL)]
    settings.GITHUB_APP_ID = "12"
    assert check_github() == [probe.Finding("error", probe.HALF_APP)]


def test_a_working_classic_token(gh):
    (finding,) = check_github()
    assert finding == probe.Finding("ok", f"GitHub: the token works at {gh.url}, as fake-user")
    assert [(c.method, c.path) for c in gh.calls] == [("GET", "/user")]  # one cheap call


def test_a_classic_token_without_repo_and_a_fine_grained_token_are_warned_about(gh):
    gh.token_scopes = "read:user, gist"
    assert levels(findings := check_github()) == ["ok", "warning"]
    assert "without the `repo` scope (it has: read:user, gist)" in findings[1].text
    gh.token_scopes = None  # fine-grained tokens carry no scopes header
    assert check_github()[1] == probe.Finding("warning", probe.FINE_GRAINED)


def test_a_refused_token_says_what_to_do_without_showing_it(gh, settings):
    settings.GITHUB_TOKEN = "ghp_" + "0" * 36
    (finding,) = check_github()
    assert finding.level == "error" and "401: Bad credentials" in finding.text
    assert "set GITHUB_TOKEN" in finding.text and settings.GITHUB_TOKEN not in finding.text


def test_an_installation_token_in_github_token(gh, settings):
    _, public = rsa_pair()
    settings.GITHUB_TOKEN = gh.installation_token(gh.install_app(5, public, [REPO]))
    (finding,) = check_github()
    assert finding.level == "error" and "set GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY" in (
        finding.text
    )


def test_a_github_app(gh, settings):
    private, public = rsa_pair()
    gh.install_app(77, public, [REPO])
    settings.GITHUB_APP_ID, settings.GITHUB_APP_PRIVATE_KEY = "77", private.replace("\n", "\\n")
    (finding,) = check_github()
    assert finding.level == "ok" and "App 'amtp-77' (id 77)" in finding.text
    assert finding.text.endswith("installed on: acme")
    assert [c.path for c in gh.calls] == ["/app", "/app/installations"]


def test_a_github_app_installed_nowhere_or_with_another_key(gh, settings):
    private, public = rsa_pair()
    gh.register_app(78, public)
    settings.GITHUB_APP_ID, settings.GITHUB_APP_PRIVATE_KEY = "78", private
    (finding,) = check_github()
    assert finding.level == "error" and "is installed nowhere" in finding.text
    settings.GITHUB_APP_PRIVATE_KEY = rsa_pair()[0]
    (finding,) = check_github()
    assert finding.level == "error" and "check GITHUB_APP_ID and that" in finding.text


def test_enterprise_server_with_and_without_api_v3(settings):
    with FakeGitHub(enterprise=True) as ghes:
        settings.GITHUB_TOKEN = ghes.token
        settings.GITHUB_APP_ID = settings.GITHUB_APP_PRIVATE_KEY = ""
        settings.GITHUB_API_URL = ghes.api_url
        (finding,) = check_github()
        assert finding.level == "ok" and "(GitHub Enterprise Server 3.17.0)" in finding.text
        settings.GITHUB_API_URL = ghes.url  # the root: GHES's web UI answers
        (finding,) = check_github()
        assert finding.level == "error" and "with a web page, not the REST API" in finding.text
        assert "GITHUB_API_URL=https://HOSTNAME/api/v3" in finding.text


def test_unreachable_github(settings):
    with FakeGitHub() as closed:
        url = closed.url
    settings.GITHUB_API_URL, settings.GITHUB_TOKEN = url, "ghp_x"
    (finding,) = check_github()
    assert finding.level == "error" and f"cannot reach GITHUB_API_URL={url}" in finding.text


def test_check_providers_command_checks_github_too(gh, settings, capsys):
    settings.AMTP_LLM_PROVIDER = "offline"
    call_command("check_providers")
    assert "GitHub: the token works" in capsys.readouterr().out
    settings.GITHUB_TOKEN = "ghp_wrong"
    with pytest.raises(CommandError, match="check found errors"):
        call_command("check_providers")
    assert "ERROR   GitHub refused GITHUB_TOKEN" in capsys.readouterr().out


def test_make_run_checks_github_credentials_when_they_are_set(gh, settings):
    from io import StringIO

    from runs.management.commands.run_system import Command

    settings.AMTP_LLM_PROVIDER = "offline"
    out, err = StringIO(), StringIO()
    Command(stdout=out, stderr=err)._say_provider()
    assert "GitHub credentials set; checking them" in out.getvalue()
    assert f"ok: GitHub: the token works at {gh.url}, as fake-user" in out.getvalue()
    settings.GITHUB_TOKEN = "ghp_" + "0" * 36
    Command(stdout=out, stderr=err)._say_provider()
    assert "error: " in err.getvalue() and settings.GITHUB_TOKEN not in err.getvalue()
