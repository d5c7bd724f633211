"""The system runs against services given only by DATABASE_URL, VALKEY_URL and
TEMPORAL_ADDRESS (docs/deployment.md), and nothing falls back to a devstack's state.json.

The "external" services are the test session's own servers, reached under names the
devstack never wrote down: a database of its own created here, its own Valkey DB and task
queue. Every process (``migrate``, ``run_worker``, ``launch_run --wait`` and the agent
processes the worker spawns) gets a bare environment with only those variables and an
AMTP_DEVSTACK_DIR that is an empty folder, so a process reading a state.json would find none
and stop with the error below instead of finding the test stack's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
import redis
from django.conf import settings
from psycopg import sql

from amtp_site.child import connection_env
from tests.gitrepo import make_git_repo
from tests.samples import DEMO_WEB
from tests.test_settings import bare_manage

ROOT = Path(__file__).resolve().parent.parent
VALKEY_DB = 7


@pytest.fixture
def external(tmp_path):
    """The bare environment of a deployment whose services are elsewhere."""
    url = urlsplit(connection_env()["DATABASE_URL"])
    name = f"amtp_external_{uuid.uuid4().hex[:8]}"
    admin = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    valkey_url = urlsplit(settings.VALKEY_URL)._replace(path=f"/{VALKEY_DB}").geturl()
    redis.Redis.from_url(valkey_url).flushdb()
    nowhere = tmp_path / "no-devstack"
    nowhere.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DJANGO_DEBUG": "true",
        "AMTP_DEVSTACK_DIR": str(nowhere),
        "DATABASE_URL": url._replace(path=f"/{name}").geturl(),
        "VALKEY_URL": valkey_url,
        "TEMPORAL_ADDRESS": settings.TEMPORAL_ADDRESS,
        "TEMPORAL_TASK_QUEUE": f"external-{uuid.uuid4()}",
        "AMTP_LLM_PROVIDER": "offline",
        "AMTP_LOG_LEVEL": "WARNING",
        "AMTP_BOOT_APPS": "false",  # as in the whole suite (conftest.py): no app install here
    }
    yield env
    assert list(nowhere.iterdir()) in ([], [nowhere / "evidence"])  # no state.json appeared
    redis.Redis.from_url(valkey_url).flushdb()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def test_a_run_end_to_end_with_services_from_the_environment_only(external, tmp_path):
    migrated = bare_manage(external, "migrate", "--verbosity", "0", timeout=180)
    assert migrated.returncode == 0, migrated.stderr
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "run_worker", "--processes", "2"],
        cwd=ROOT,
        env=external,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        repo = make_git_repo(tmp_path / "shop", DEMO_WEB)
        launched = bare_manage(
            external,
            *("launch_run", "acme/shop", "--local", repo, "--depth-level", "smoke"),
            *("--wait", "--timeout", "150"),
            timeout=180,
        )
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        _, worker_errors = worker.communicate(timeout=30)
    assert launched.returncode == 0, launched.stdout + launched.stderr + worker_errors
    assert "passed" in launched.stdout
    with psycopg.connect(external["DATABASE_URL"]) as conn:  # in that database, nowhere else
        (status,) = conn.execute("SELECT status FROM runs").fetchone()
    assert status == "passed"
