"""Production settings pass `manage.py check --deploy`; a missing secret is a clear error."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def check_deploy(**env):
    full = {**os.environ, "DJANGO_DEBUG": "false", **env}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_pass_check_deploy():
    result = check_deploy(
        DJANGO_SECRET_KEY="k" * 20 + "Zq9%vW2!xL7@pR4&mN8*tY1^" + "s" * 20,
        DJANGO_ALLOWED_HOSTS="amtp.example.com",
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_production_without_secret_key_says_what_to_set():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SECRET_KEY"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**env, "DJANGO_DEBUG": "false"},
        timeout=120,
    )
    assert result.returncode != 0 and "DJANGO_SECRET_KEY must be set" in result.stderr
