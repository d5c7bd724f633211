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


def manage(*args, **env):
    """``manage.py`` in a fresh process whose environment has no DJANGO_DEBUG or
    DJANGO_SECRET_KEY unless given here."""
    base = {k: v for k, v in os.environ.items() if k not in ("DJANGO_DEBUG", "DJANGO_SECRET_KEY")}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_debug_is_off_unless_asked_for():
    show = ("shell", "-c", "from django.conf import settings; print('DEBUG', settings.DEBUG)")
    assert "DEBUG False" in manage(*show, DJANGO_SECRET_KEY="s" * 50).stdout
    assert "DEBUG True" in manage(*show, DJANGO_DEBUG="true").stdout


def test_without_debug_or_secret_key_it_refuses_to_start_saying_what_to_set():
    result = manage("check")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr
    assert "DJANGO_DEBUG=true" in result.stderr  # the way out for a laptop


def test_make_run_asks_for_debug():
    dry_run = subprocess.run(
        ["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert "DJANGO_DEBUG=true" in dry_run.stdout and "run_system" in dry_run.stdout


def test_error_reports_mask_every_connection_url(settings):
    from django.views.debug import get_default_exception_reporter_filter

    settings.DATABASE_URL = "postgres://app:db-password@db/app"
    settings.VALKEY_URL = "redis://:valkey-password@cache:6379/0"
    safe = get_default_exception_reporter_filter().get_safe_settings()
    shown = str(safe)
    assert "db-password" not in shown and "valkey-password" not in shown
    assert safe["DATABASE_URL"] == safe["VALKEY_URL"] == "********************"


def bare_manage(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``manage.py`` with exactly the environment ``env``, nothing inherited."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_without_services_or_a_devstack_it_says_so_instead_of_guessing(tmp_path):
    """No DATABASE_URL / VALKEY_URL / TEMPORAL_ADDRESS and no devstack state.json: a clear
    error naming what to set, never the machine's own 127.0.0.1:5432 or :6379."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "VALKEY_URL", "TEMPORAL_ADDRESS", "AMTP_SERVICES_NOT_NEEDED")
    }
    empty = {**env, "DJANGO_DEBUG": "true", "AMTP_DEVSTACK_DIR": str(tmp_path)}
    result = bare_manage(empty, "check")
    assert result.returncode != 0
    assert "DATABASE_URL, VALKEY_URL, TEMPORAL_ADDRESS are not set" in result.stderr
    assert str(tmp_path) in result.stderr and "manage.py devstack up" in result.stderr
    assert "or set DATABASE_URL, VALKEY_URL, TEMPORAL_ADDRESS to your own services" in result.stderr

    partly = bare_manage({**empty, "DATABASE_URL": "postgres://db.example.com/amtp"}, "check")
    assert "VALKEY_URL, TEMPORAL_ADDRESS are not set" in partly.stderr
    assert "DATABASE_URL" not in partly.stderr.split("are not set")[0]

    status = bare_manage(empty, "devstack", "status")  # what starts them needs none of them
    assert status.returncode == 0, status.stderr
    assert f"devstack folder: {tmp_path}" in status.stdout


def test_the_web_entry_points_take_what_they_loaded_out_of_the_collectors_reach():
    """wsgi.py and asgi.py freeze what they loaded (gc.freeze): a full collection then scans
    only what requests make, instead of pausing every thread of the process for all of it."""
    env = {**os.environ, "DJANGO_DEBUG": "true"}
    for module in ("amtp_site.wsgi", "amtp_site.asgi"):
        code = f"import gc, {module}; print(gc.get_freeze_count())"
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        assert int(result.stdout) > 10_000, (module, result.stdout)  # Django and the apps


def test_an_oidc_issuer_needs_an_audience_and_https_in_production():
    key = "s" * 50
    github = "https://token.actions.githubusercontent.com"
    result = manage("check", DJANGO_SECRET_KEY=key, AMTP_OIDC_ISSUER=github)
    assert "AMTP_OIDC_AUDIENCE must be set when AMTP_OIDC_ISSUER is" in result.stderr
    plain = {"AMTP_OIDC_ISSUER": "http://issuer.example.com", "AMTP_OIDC_AUDIENCE": "amtp"}
    result = manage("check", DJANGO_SECRET_KEY=key, **plain)
    assert "AMTP_OIDC_ISSUER must be an https:// URL" in result.stderr


def test_single_sign_on_settings_name_what_is_wrong():
    key = "s" * 50
    sso = {"AMTP_SSO_ISSUER": "https://sso.example.com/realms/acme", "DJANGO_SECRET_KEY": key}
    result = manage("check", **sso)
    assert "AMTP_SSO_CLIENT_ID must be set when AMTP_SSO_ISSUER is" in result.stderr
    client = {"AMTP_SSO_CLIENT_ID": "amtp", "AMTP_SSO_CLIENT_SECRET": "s"}
    result = manage("check", **sso, **client, AMTP_SSO_GROUP_MAP='{"ops": ["Operators", 7]}')
    assert "AMTP_SSO_GROUP_MAP['ops'] must be a JSON object mapping each provider group" in (
        result.stderr
    )
    result = manage("check", **sso, **client, AMTP_SSO_PASSWORD_LOGIN="false")
    assert "AMTP_SSO_GROUP_MAP must map at least one provider group" in result.stderr
    result = manage("check", **{**sso, "AMTP_SSO_ISSUER": "http://sso.example.com"}, **client)
    assert "AMTP_SSO_ISSUER must be an https:// URL" in result.stderr


def test_check_runs_the_admins_checks_on_its_registered_pages():
    """The admin registers its pages with the URLs (SimpleAdminConfig); `manage.py check` loads
    them first, so its admin checks (`--tag admin`, no URL check to load them by chance) see
    every page."""
    show = (
        "from django.core.management import call_command; call_command('check', tags=['admin']);"
        " from django.contrib import admin; from runs.models import Run;"
        " print('REGISTERED', admin.site.is_registered(Run))"
    )
    result = manage("shell", "-c", show, DJANGO_DEBUG="true")
    assert "REGISTERED True" in result.stdout, result.stdout + result.stderr
