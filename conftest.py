"""Shared fixtures: the real embedded services (started by `make test`).

The suite runs with development settings, as `make test` does: without DJANGO_DEBUG the
settings are production ones, which refuse to start without a secret key and redirect every
request to HTTPS. Set here, before pytest-django loads the settings (so not in pyproject.toml's
ini, which pytest-django reads before any conftest); processes the tests spawn (agents, the MCP
server, `manage.py`) inherit it. Values already in the environment are kept.
"""

import os
import shutil
import tempfile

import django
import pytest
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")
os.environ.setdefault("DJANGO_DEBUG", "true")
# A test that fails in Playwright on purpose waits out every assertion's timeout once per
# attempt: one retry (still telling flaky from failed) and 3 s per assertion keep those cheap;
# the apps under test answer on loopback in milliseconds.
os.environ.setdefault("AMTP_VERIFY_RETRIES", "1")
os.environ.setdefault("AMTP_VERIFY_EXPECT_TIMEOUT_S", "3")
# The suite's repositories hold apps (Flask, Node) that a run without a target URL would now
# boot (BootApp: installs through the registries, seconds to a minute): off, so those runs
# write tests from the source as before; the BootApp tests turn it on.
os.environ.setdefault("AMTP_BOOT_APPS", "false")
# The evidence of every run of this pytest session in one folder (each run writes under its own
# id), set once: the worker forks agent processes from a template whose environment is fixed
# when it starts, so a setting changed between tests costs a new template (seconds of CPU).
# pytest-xdist's workers inherit it from the process that started them, which removes it last.
EVIDENCE = None
if "AMTP_VERIFY_EVIDENCE_DIR" not in os.environ:
    EVIDENCE = tempfile.mkdtemp(prefix="amtp-test-evidence-")
    os.environ["AMTP_VERIFY_EVIDENCE_DIR"] = EVIDENCE
django.setup()  # tests/conftest.py imports models; pytest-django takes over from here

# Django's default hasher (PBKDF2, a million rounds) spends most of a second of CPU on each user
# the tests make or log in, and the tests check who may do what, not how a password is hashed
# (Django's testing docs, "Speeding up the tests": a faster password hasher). Processes the
# tests start (`manage.py createsuperuser`) keep the default.
settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def valkey(settings):
    """A real Valkey connection on a database of its own, emptied before and after the test."""
    import redis

    # One database per pytest-xdist worker (gw0: 15, gw1: 14, ...), so parallel tests never
    # flush each other's keys.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    settings.VALKEY_URL = settings.VALKEY_URL.rsplit("/", 1)[0] + f"/{15 - int(worker[2:])}"
    client = redis.Redis.from_url(settings.VALKEY_URL)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


def pytest_unconfigure(config):
    if EVIDENCE is not None:  # made here, not inherited
        shutil.rmtree(EVIDENCE, ignore_errors=True)
