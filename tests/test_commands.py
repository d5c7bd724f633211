"""launch_run and ensure_admin as a user runs them."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from repositories.models import Repository
from repositories.names import FULL_NAME_INVALID
from runs.models import Run
from tests.gitrepo import make_git_repo
from tests.samples import DEMO_WEB

pytestmark = pytest.mark.django_db(transaction=True)


def test_launch_run_local_registers_and_waits_for_success(tmp_path, worker):
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    out = StringIO()
    call_command(
        "launch_run",
        "acme/cli",
        "--local",
        str(path),
        "--depth-level",
        "smoke",
        "--wait",
        stdout=out,
    )
    text = out.getvalue()
    assert "registered acme/cli" in text
    for stage in ("crawl_repo", "generate_test_cases", "generate_test_code", "create_pull_request"):
        assert f"{stage}" in text
    assert "passed: PR" in text
    repo = Repository.objects.get(full_name="acme/cli")
    assert repo.host == "local" and Run.objects.get().trigger == "cli"


def test_launch_run_wait_fails_with_the_error_when_the_run_fails(tmp_path, worker):
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    with pytest.raises(CommandError, match="failed: RepositoryAccessError.*no-such-ref"):
        call_command(
            "launch_run",
            "acme/cli",
            "--local",
            str(path),
            "--ref",
            "no-such-ref",
            "--wait",
            stdout=StringIO(),
        )


def test_launch_run_refuses_unknown_repositories_and_bad_paths(tmp_path):
    with pytest.raises(CommandError, match="unknown repository acme/x"):
        call_command("launch_run", "acme/x")
    with pytest.raises(CommandError, match="not a git repository"):
        call_command("launch_run", "acme/x", "--local", str(tmp_path))
    with pytest.raises(CommandError) as caught:
        call_command("launch_run", "acme")
    assert str(caught.value) == f"invalid repository settings: full_name: {FULL_NAME_INVALID}"
    assert not Repository.objects.exists()


def test_ensure_admin_creates_once_and_keeps_the_password(monkeypatch):
    monkeypatch.setenv("AMTP_ADMIN_PASSWORD", "s3cret-pass")
    out = StringIO()
    call_command("ensure_admin", stdout=out)
    call_command("ensure_admin", stdout=StringIO())
    user = get_user_model().objects.get(username="admin")
    assert user.is_superuser and user.check_password("s3cret-pass")
    assert "password from AMTP_ADMIN_PASSWORD" in out.getvalue()
