"""launch_run and ensure_admin as a user runs them."""

import os
import subprocess
import sys
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from amtp_site.child import connection_env
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


def test_launch_run_wait_says_when_no_worker_polls_the_queue(tmp_path, settings):
    # Against the real Temporal server, on a task queue no worker has ever polled.
    settings.TEMPORAL_TASK_QUEUE = queue = f"nobody-{uuid.uuid4()}"
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="still pending after 2 s with no worker polling"):
        call_command(
            *("launch_run", "acme/cli", "--local", str(path), "--wait", "--timeout", "2"),
            stdout=out,
            stderr=err,
        )
    assert f"no worker polls task queue {queue}" in err.getvalue()
    assert f"manage.py run_worker --task-queue {queue}" in err.getvalue()


def test_launch_run_in_its_own_process_exits_cleanly_after_using_the_client(tmp_path, settings):
    # The Temporal client's runtime threads could abort the interpreter's finalization
    # (PyGILState_Release); the command must end with its own status, nothing after it.
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    env = {
        **os.environ,
        **connection_env(),
        "DJANGO_DEBUG": "true",
        "TEMPORAL_ADDRESS": settings.TEMPORAL_ADDRESS,
        "TEMPORAL_TASK_QUEUE": f"nobody-{uuid.uuid4()}",
    }

    def manage(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=Path(__file__).resolve().parent.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Fatal Python error" not in done.stderr
        return done

    for _ in range(3):  # the abort is intermittent (a few exits in 30): each exit clean
        done = manage("launch_run", "acme/cli", "--local", str(path))
        assert "run " in done.stdout and "no worker polls task queue" in done.stderr
    assert Run.objects.count() == 3
    manage("reconcile_runs", "--dry-run", "--grace", "0")  # the other command of a shell or cron


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


def test_maintain_tests_needs_a_target_then_starts_a_maintenance_run(tmp_path, settings):
    settings.TEMPORAL_TASK_QUEUE = f"test-{uuid.uuid4()}"  # no worker: the run stays pending
    path = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    with pytest.raises(CommandError, match="^--target-url: acme/kept has no preview URL: "):
        call_command("maintain_tests", "acme/kept", "--local", str(path), stdout=StringIO())
    assert not Run.objects.exists()
    url = "https://preview.example.com"
    call_command(
        "maintain_tests", "acme/kept", "--local", str(path), "--target-url", url, stdout=StringIO()
    )
    run = Run.objects.get()
    assert (run.kind, run.target_url, run.repository.full_name) == ("maintenance", url, "acme/kept")
