"""AMTP settings: twelve-factor, every value from the environment with a safe local default.

Local defaults point at the embedded devstack (``manage.py devstack up`` records its addresses
in ``.devstack/state.json``); setting ``DATABASE_URL`` / ``VALKEY_URL`` / ``TEMPORAL_ADDRESS``
uses external services instead. ``docs/configuration.md`` lists every setting.

Safe by default: DEBUG is off unless ``DJANGO_DEBUG=true`` (``make run`` and ``make test`` set
it), and without DEBUG there is no default secret key: a deploy that forgets one refuses to
start and says what to set. Error reports mask every setting that can hold a credential.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tomllib
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from amtp_site import devstack, prices
from amtp_site.github_url import check_github_api_url

BASE_DIR = Path(__file__).resolve().parent.parent
# The release: pyproject.toml's version, the one place it is written (the API document shows it).
AMTP_VERSION = tomllib.loads((BASE_DIR / "pyproject.toml").read_text())["project"]["version"]


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


NO_SERVICES = (
    "{missing} {verb} not set and no embedded devstack is running in {folder} (it has no "
    "state.json): run `python manage.py devstack up` (with the same AMTP_DEVSTACK_DIR), or set "
    "{missing} to your own services (docs/deployment.md)"
)


def _service_urls() -> dict[str, str]:
    """DATABASE_URL, VALKEY_URL and TEMPORAL_ADDRESS: from the environment, else from the
    devstack's state.json. Never a guess such as 127.0.0.1:5432, which would be the machine's
    own PostgreSQL. A process that opens no connection (``manage.py devstack``, which starts
    them) sets AMTP_SERVICES_NOT_NEEDED and gets unusable placeholders instead of the error."""
    stack = devstack.urls()
    found = {var: os.environ.get(var) or stack.get(var, "") for var in devstack.ENV_VARS.values()}
    missing = [var for var, value in found.items() if not value]
    if missing and not env_bool("AMTP_SERVICES_NOT_NEEDED", False):
        raise ImproperlyConfigured(
            NO_SERVICES.format(
                missing=", ".join(missing),
                verb="is" if len(missing) == 1 else "are",
                folder=devstack.STACK_DIR,
            )
        )
    placeholders = {
        "DATABASE_URL": "postgres://not-configured.invalid/amtp",
        "VALKEY_URL": "redis://not-configured.invalid/0",
        "TEMPORAL_ADDRESS": "not-configured.invalid:7233",
    }
    return {var: value or placeholders[var] for var, value in found.items()}


_services = _service_urls()

NO_SECRET_KEY = (
    "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is not true: set it to a long random "
    "value, e.g. the output of `python -c 'import secrets; print(secrets.token_urlsafe(50))'` "
    "(or, on a development machine only, set DJANGO_DEBUG=true)"
)

DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(NO_SECRET_KEY)
    SECRET_KEY = "django-insecure-local-development-only-" + "x" * 24
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    # The admin registers its pages when the URLs load (amtp_site/urls.py calls autodiscover):
    # commands and agent processes, which serve no page, skip importing every admin module
    # (about 0.7 s of CPU per process).
    "django.contrib.admin.apps.SimpleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",  # OpClass in index expressions (amtp_site.indexes)
    "django_prometheus",  # requests, database and cache metrics at /metrics
    "repositories",
    "runs",
    "access",
    "verification",
    "notifications",
    "reporting",
    "triggers",
    "approvals",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "amtp_site.bodies.BoundedBodyMiddleware",  # before anything can read a body unbounded
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "amtp_site.sso.SessionRefresh",  # single sign-on users re-checked with the provider
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

# A permission held the ordinary way holds on every repository (ModelBackend, under both ways to
# sign in: a password or the identity provider, amtp_site.sso); a grant gives a role on one
# repository (repositories.access, docs/security.md).
AUTHENTICATION_BACKENDS = [
    "amtp_site.sso.PasswordBackend",
    "amtp_site.sso.SsoBackend",
    "repositories.access.RepositoryBackend",
]

ROOT_URLCONF = "amtp_site.urls"
WSGI_APPLICATION = "amtp_site.wsgi.application"
ASGI_APPLICATION = "amtp_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "amtp_site.sso.context",
            ],
        },
    },
]

DATABASE_URL = _services["DATABASE_URL"]
# Health checks: a connection that died with its server (a PostgreSQL restart) is replaced
# before it is used, instead of failing the first query of each thread.
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=60,
        conn_health_checks=True,
        engine="django_prometheus.db.backends.postgresql",  # Django's, counting queries
    )
}
if os.environ.get("AMTP_TEST_DATABASE_NAME"):  # parallel test sessions on one server
    DATABASES["default"]["TEST"] = {"NAME": os.environ["AMTP_TEST_DATABASE_NAME"]}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

VALKEY_URL = _services["VALKEY_URL"]
CACHES = {
    "default": {
        "BACKEND": "django_prometheus.cache.backends.redis.RedisCache",  # django-redis, counted
        "LOCATION": VALKEY_URL,
        "KEY_PREFIX": "amtp:django",
        "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 5, "SOCKET_TIMEOUT": 5},
    }
}

TEMPORAL_ADDRESS = _services["TEMPORAL_ADDRESS"]
TEMPORAL_NAMESPACE = os.environ.get("TEMPORAL_NAMESPACE", "default")
TEMPORAL_TASK_QUEUE = os.environ.get("TEMPORAL_TASK_QUEUE", "amtp-activities")
TEMPORAL_API_KEY = os.environ.get("TEMPORAL_API_KEY", "")
# mTLS (Temporal Cloud's certificate authentication, or a self-hosted cluster's): PEM files.
TEMPORAL_TLS_CLIENT_CERT_FILE = os.environ.get("TEMPORAL_TLS_CLIENT_CERT_FILE", "")
TEMPORAL_TLS_CLIENT_KEY_FILE = os.environ.get("TEMPORAL_TLS_CLIENT_KEY_FILE", "")
TEMPORAL_TLS_SERVER_CA_FILE = os.environ.get("TEMPORAL_TLS_SERVER_CA_FILE", "")  # private CA
TEMPORAL_TLS = env_bool("TEMPORAL_TLS", bool(TEMPORAL_API_KEY or TEMPORAL_TLS_CLIENT_CERT_FILE))

# Activity retry policy (2 s, x2, 30 s, 20 attempts), from one place. Tests shrink the intervals.
AMTP_RETRY_POLICY = {
    "initial_interval": timedelta(seconds=float(os.environ.get("AMTP_RETRY_INITIAL_S", "2"))),
    "backoff_coefficient": 2.0,
    "maximum_interval": timedelta(seconds=float(os.environ.get("AMTP_RETRY_MAX_INTERVAL_S", "30"))),
    "maximum_attempts": env_int("AMTP_RETRY_MAX_ATTEMPTS", 20),
}

AMTP_AGENT_ACTIVITY_TIMEOUT_S = float(os.environ.get("AMTP_AGENT_ACTIVITY_TIMEOUT_S", "900"))
AMTP_HEARTBEAT_TIMEOUT_S = float(os.environ.get("AMTP_HEARTBEAT_TIMEOUT_S", "60"))
AMTP_BOOKKEEPING_TIMEOUT_S = float(os.environ.get("AMTP_BOOKKEEPING_TIMEOUT_S", "60"))
AMTP_APPROVAL_TIMEOUT_S = float(os.environ.get("AMTP_APPROVAL_TIMEOUT_S", str(7 * 24 * 3600)))
# How long a run waits for a concurrency slot ("waiting for a slot" on its first stage), and
# how long it keeps one without giving it back: longer than any run lives
# (two approval holds and a day). A finished run's slot is freed sooner: PostgreSQL says so.
AMTP_SLOT_WAIT_S = float(os.environ.get("AMTP_SLOT_WAIT_S", str(24 * 3600)))
AMTP_SLOT_LEASE_S = env_int("AMTP_SLOT_LEASE_S", int(2 * AMTP_APPROVAL_TIMEOUT_S) + 24 * 3600)
AMTP_WORKER_PROCESSES = env_int("AMTP_WORKER_PROCESSES", 2)
# reconcile_runs looks only at open runs created at least this long ago (a run being started
# right now is not the reconciler's business).
AMTP_RECONCILE_GRACE_S = float(os.environ.get("AMTP_RECONCILE_GRACE_S", "900"))

# Repository hosts.
# api.github.com, https://api.SUBDOMAIN.ghe.com or https://HOSTNAME/api/v3; anything else stops
# start-up with a ConfigurationError saying what to set (amtp_site/github_url.py).
GITHUB_API_URL = check_github_api_url(os.environ.get("GITHUB_API_URL") or "https://api.github.com")
GITHUB_TOKEN = os.environ.get("GITHUB_TOKEN", "")
GITHUB_APP_ID = os.environ.get("GITHUB_APP_ID", "")
GITHUB_APP_PRIVATE_KEY = os.environ.get("GITHUB_APP_PRIVATE_KEY", "")
# The fallback for repositories without a webhook secret of their own (Repository.webhook_secret):
# whoever holds it can sign pushes for every such repository.
GITHUB_WEBHOOK_SECRET = os.environ.get("GITHUB_WEBHOOK_SECRET", "")
AMTP_WEBHOOK_MAX_BYTES = env_int("AMTP_WEBHOOK_MAX_BYTES", 1024 * 1024)
# Keyless CI (access.oidc): bearer OpenID Connect ID tokens from this issuer (empty: off), for
# this audience, mapped to service identities by the trust rules in the admin.
AMTP_OIDC_ISSUER = os.environ.get("AMTP_OIDC_ISSUER", "").strip()
AMTP_OIDC_AUDIENCE = os.environ.get("AMTP_OIDC_AUDIENCE", "").strip()
AMTP_OIDC_LEEWAY_S = env_int("AMTP_OIDC_LEEWAY_S", 30)  # clock skew allowed on exp/nbf/iat
AMTP_OIDC_MAX_LIFETIME_S = env_int("AMTP_OIDC_MAX_LIFETIME_S", 3600)  # exp - iat at most
AMTP_OIDC_JWKS_TTL_S = env_int("AMTP_OIDC_JWKS_TTL_S", 300)  # the issuer's keys are re-read
# The least time between re-reads of the key set for a token naming a key it lacks.
AMTP_OIDC_JWKS_COOLDOWN_S = env_int("AMTP_OIDC_JWKS_COOLDOWN_S", 30)
if AMTP_OIDC_ISSUER and not AMTP_OIDC_AUDIENCE:
    # Without an audience, a token any relying party of the issuer was given would do.
    raise ImproperlyConfigured("AMTP_OIDC_AUDIENCE must be set when AMTP_OIDC_ISSUER is")
if AMTP_OIDC_ISSUER and not DEBUG and not AMTP_OIDC_ISSUER.startswith("https://"):
    raise ImproperlyConfigured("AMTP_OIDC_ISSUER must be an https:// URL")


def _group_map(text: str) -> dict[str, tuple[str, ...]]:
    """AMTP_SSO_GROUP_MAP: a JSON object, each provider group to a Django group name or a list
    of them."""
    rule = "a JSON object mapping each provider group to a Django group name or a list of names"
    try:
        found = json.loads(text or "{}")
    except ValueError as exc:
        raise ImproperlyConfigured(f"AMTP_SSO_GROUP_MAP must be {rule}: {exc}") from exc
    if not isinstance(found, dict):
        raise ImproperlyConfigured(f"AMTP_SSO_GROUP_MAP must be {rule}")
    mapping = {}
    for group, names in found.items():
        names = [names] if isinstance(names, str) else names
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise ImproperlyConfigured(f"AMTP_SSO_GROUP_MAP[{group!r}] must be {rule}")
        mapping[group] = tuple(names)
    return mapping


# Single sign-on for the admin (amtp_site.sso, docs/deployment.md): OpenID Connect with this
# issuer (empty: off), its endpoints read from its discovery document.
AMTP_SSO_ISSUER = os.environ.get("AMTP_SSO_ISSUER", "").strip()
AMTP_SSO_NAME = os.environ.get("AMTP_SSO_NAME", "").strip() or "single sign-on"
AMTP_SSO_GROUPS_CLAIM = os.environ.get("AMTP_SSO_GROUPS_CLAIM", "groups").strip()
AMTP_SSO_GROUP_MAP = _group_map(os.environ.get("AMTP_SSO_GROUP_MAP", ""))
# Off: only superusers sign in with a password (the break-glass accounts); everyone else
# through the provider.
AMTP_SSO_PASSWORD_LOGIN = env_bool("AMTP_SSO_PASSWORD_LOGIN", True)
AMTP_SSO_TIMEOUT_S = float(os.environ.get("AMTP_SSO_TIMEOUT_S", "10"))  # each call to it
AMTP_SSO_LEEWAY_S = env_int("AMTP_SSO_LEEWAY_S", 30)  # clock skew allowed on the ID token
if AMTP_SSO_ISSUER:
    if not DEBUG and not AMTP_SSO_ISSUER.startswith("https://"):
        raise ImproperlyConfigured("AMTP_SSO_ISSUER must be an https:// URL")
    for _name in ("AMTP_SSO_CLIENT_ID", "AMTP_SSO_CLIENT_SECRET"):
        if not os.environ.get(_name):
            raise ImproperlyConfigured(f"{_name} must be set when AMTP_SSO_ISSUER is")
    if not AMTP_SSO_PASSWORD_LOGIN and not AMTP_SSO_GROUP_MAP:
        raise ImproperlyConfigured(
            "AMTP_SSO_GROUP_MAP must map at least one provider group when "
            "AMTP_SSO_PASSWORD_LOGIN is off: else nobody but superusers could work in AMTP"
        )
# mozilla-django-oidc's own settings (mozilla-django-oidc.readthedocs.io/en/stable/settings.html)
OIDC_RP_CLIENT_ID = os.environ.get("AMTP_SSO_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("AMTP_SSO_CLIENT_SECRET", "")
OIDC_RP_SCOPES = os.environ.get("AMTP_SSO_SCOPES", "openid email profile")
OIDC_RP_SIGN_ALGO = os.environ.get("AMTP_SSO_SIGN_ALGO", "RS256")
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_STORE_ID_TOKEN = True  # the hint for the provider's end-session endpoint at sign-out
OIDC_TIMEOUT = AMTP_SSO_TIMEOUT_S
# How often a signed-in user's groups are re-read from the provider (on their next page load).
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = env_int("AMTP_SSO_RECHECK_S", 900)
OIDC_OP_LOGOUT_URL_METHOD = "amtp_site.sso.provider_logout_url"
LOGIN_REDIRECT_URL = "/admin/"
LOGIN_REDIRECT_URL_FAILURE = "/admin/login/"
LOGOUT_REDIRECT_URL = "/admin/login/"
# GitHub asks integrations to space out content-creating requests (secondary rate limits).
GITHUB_SECONDS_BETWEEN_WRITES = float(os.environ.get("GITHUB_SECONDS_BETWEEN_WRITES", "1.0"))
AMTP_MCP_CACHE_TTL = env_int("AMTP_MCP_CACHE_TTL", 24 * 3600)
AMTP_MAX_READ_BYTES = env_int("AMTP_MAX_READ_BYTES", 256 * 1024)

# LLM providers: offline (rule-based, no network) unless a key is configured.
ANTHROPIC_API_KEY = os.environ.get("ANTHROPIC_API_KEY", "")
ANTHROPIC_BASE_URL = os.environ.get("ANTHROPIC_BASE_URL", "")
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
# response_format json_schema on Chat Completions; false for a server that refuses it
# (llama-cpp-python answers 422): the schema then travels in the prompt only.
OPENAI_STRUCTURED_OUTPUTS = env_bool("OPENAI_STRUCTURED_OUTPUTS", True)
AMTP_LLM_PROVIDER = os.environ.get("AMTP_LLM_PROVIDER") or (
    "anthropic"
    if ANTHROPIC_API_KEY
    else "openai"
    if OPENAI_BASE_URL or OPENAI_API_KEY
    else "offline"
)
AMTP_LLM_MODEL = os.environ.get("AMTP_LLM_MODEL", "")
AMTP_MODELS = {
    agent: os.environ[f"AMTP_MODEL_{agent.upper()}"]
    for agent in ("repo_crawler", "test_case_generator", "test_engineer")
    if os.environ.get(f"AMTP_MODEL_{agent.upper()}")
}
AMTP_AGENTS = ("repo_crawler", "test_case_generator", "test_engineer")
# Thinking (auto | on | off) and effort (low ... max; empty: the model's default), for all
# agents or per agent (AMTP_THINKING_TEST_ENGINEER=off ...): docs/providers.md.
AMTP_LLM_THINKING = os.environ.get("AMTP_LLM_THINKING", "auto")
AMTP_LLM_EFFORT = os.environ.get("AMTP_LLM_EFFORT", "")
AMTP_AGENT_THINKING = {
    agent: os.environ[f"AMTP_THINKING_{agent.upper()}"]
    for agent in AMTP_AGENTS
    if os.environ.get(f"AMTP_THINKING_{agent.upper()}")
}
AMTP_AGENT_EFFORT = {
    agent: os.environ[f"AMTP_EFFORT_{agent.upper()}"]
    for agent in AMTP_AGENTS
    if os.environ.get(f"AMTP_EFFORT_{agent.upper()}")
}
# USD per million tokens per model (amtp_site/prices.py: the vendors' list prices), with
# AMTP_LLM_PRICES (JSON) adding or replacing models; a run's cost is priced when stored.
try:
    AMTP_LLM_PRICES = prices.parse_override(os.environ.get("AMTP_LLM_PRICES", ""))
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from exc
AMTP_LLM_TIMEOUT_S = float(os.environ.get("AMTP_LLM_TIMEOUT_S", "120"))
AMTP_MAX_OUTPUT_TOKENS = env_int("AMTP_MAX_OUTPUT_TOKENS", 16000)
AMTP_MAX_INPUT_TOKENS = env_int("AMTP_MAX_INPUT_TOKENS", 150_000)
# Repository data one LLM call may carry (the rendered handoff, the crawler's tool results):
# what keeps every call's input flat at any repository size (docs/architecture.md).
AMTP_CONTEXT_TOKENS = env_int("AMTP_CONTEXT_TOKENS", 24_000)
AMTP_MAX_TREE_FILES = env_int("AMTP_MAX_TREE_FILES", 200_000)  # files one crawl may map
AMTP_MAX_TOOL_CALLS = env_int("AMTP_MAX_TOOL_CALLS", 40)
AMTP_MAX_BYTES_READ = env_int("AMTP_MAX_BYTES_READ", 2_000_000)
AMTP_AGENT_MAX_SECONDS = float(os.environ.get("AMTP_AGENT_MAX_SECONDS", "600"))
AMTP_REPAIR_TURNS = env_int("AMTP_REPAIR_TURNS", 1)

# VerifyTests: the generated Playwright tests run against the run's target URL before the PR.
AMTP_VERIFY_TIMEOUT_S = float(os.environ.get("AMTP_VERIFY_TIMEOUT_S", "600"))  # whole stage
AMTP_VERIFY_TEST_TIMEOUT_S = float(os.environ.get("AMTP_VERIFY_TEST_TIMEOUT_S", "30"))
# How long an assertion waits for what it expects before failing (Playwright's expect.timeout).
AMTP_VERIFY_EXPECT_TIMEOUT_S = float(os.environ.get("AMTP_VERIFY_EXPECT_TIMEOUT_S", "5"))
AMTP_VERIFY_RETRIES = env_int("AMTP_VERIFY_RETRIES", 2)  # re-runs of a failing test: flaky?
AMTP_VERIFY_HEAL_ROUNDS = env_int("AMTP_VERIFY_HEAL_ROUNDS", 1)
AMTP_VERIFY_EVIDENCE_DIR = Path(
    os.environ.get("AMTP_VERIFY_EVIDENCE_DIR") or devstack.STACK_DIR / "evidence"
).resolve()
AMTP_VERIFY_RUNNER_DIR = Path(
    os.environ.get("AMTP_VERIFY_RUNNER_DIR") or BASE_DIR / "infra" / "playwright"
).resolve()
# Debian's build of Chromium's headless shell: what Playwright itself launches for a headless
# run, without the full browser's UI process and services (a third of the CPU per launch).
AMTP_VERIFY_CHROMIUM = os.environ.get("AMTP_VERIFY_CHROMIUM", "/usr/bin/chromium-headless-shell")
# Where people reach AMTP (https://amtp.example.com): check runs link to the run and its
# evidence there; empty, they name the evidence files only.
AMTP_PUBLIC_URL = os.environ.get("AMTP_PUBLIC_URL", "")
# ExploreApp: the target app visited in the sandboxed browser before the agents write tests.
AMTP_EXPLORE_MAX_PAGES = env_int("AMTP_EXPLORE_MAX_PAGES", 30)
AMTP_EXPLORE_MAX_DEPTH = env_int("AMTP_EXPLORE_MAX_DEPTH", 3)  # links followed from a start path
AMTP_EXPLORE_TIMEOUT_S = float(os.environ.get("AMTP_EXPLORE_TIMEOUT_S", "120"))  # whole stage
AMTP_EXPLORE_PAGE_TIMEOUT_S = float(os.environ.get("AMTP_EXPLORE_PAGE_TIMEOUT_S", "15"))
AMTP_EXPLORE_MAX_BYTES = env_int("AMTP_EXPLORE_MAX_BYTES", 512 << 10)  # the app_map artifact
# Forms ExploreApp submits once with test data on the preview (0: none).
AMTP_EXPLORE_FORM_TRIALS = env_int("AMTP_EXPLORE_FORM_TRIALS", 5)
# Without a login recipe, ExploreApp signs up through the app's sign-up form with a throwaway
# account and explores signed in; the tests' setup project does the same.
AMTP_EXPLORE_SIGN_UP = env_bool("AMTP_EXPLORE_SIGN_UP", True)
# Actions outside forms (type and press Enter, toggle, filter, edit, delete the item it made)
AMTP_EXPLORE_INTERACTIONS = env_int("AMTP_EXPLORE_INTERACTIONS", 24)
# The Fernet key (comma-separated: the first encrypts, each decrypts) of repositories' stored
# login credentials (repositories/credentials.py). In DEBUG without it a development key is
# derived from SECRET_KEY; in production, storing or using stored credentials without it fails
# saying so.
AMTP_CREDENTIALS_KEY = os.environ.get("AMTP_CREDENTIALS_KEY", "")
if not AMTP_CREDENTIALS_KEY and DEBUG:
    _digest = hashlib.sha256(b"amtp-credentials:" + SECRET_KEY.encode()).digest()
    AMTP_CREDENTIALS_KEY = base64.urlsafe_b64encode(_digest).decode()
# Generated code runs only in the bubblewrap box (verification/sandbox.py). The override
# runs it with the worker's own rights; every report and PR then says "not sandboxed".
AMTP_VERIFY_UNSANDBOXED = env_bool("AMTP_VERIFY_UNSANDBOXED", False)
# Limits of one execution in the box (docs/security.md).
AMTP_SANDBOX_MEMORY_BYTES = env_int("AMTP_SANDBOX_MEMORY_BYTES", 2 << 30)  # per process
AMTP_SANDBOX_PROCESSES = env_int("AMTP_SANDBOX_PROCESSES", 256)
AMTP_SANDBOX_FILE_BYTES = env_int("AMTP_SANDBOX_FILE_BYTES", 256 << 20)
AMTP_SANDBOX_OPEN_FILES = env_int("AMTP_SANDBOX_OPEN_FILES", 1024)
AMTP_SANDBOX_CPU_S = env_int("AMTP_SANDBOX_CPU_S", 900)  # per process
AMTP_SANDBOX_OUTPUT_BYTES = env_int("AMTP_SANDBOX_OUTPUT_BYTES", 8 << 20)
# The box's tmpfs (/sandbox, /tmp and /dev/shm together): bytes and files, inside its memory.
AMTP_SANDBOX_DISK_BYTES = env_int("AMTP_SANDBOX_DISK_BYTES", 1 << 30)
AMTP_SANDBOX_DISK_INODES = env_int("AMTP_SANDBOX_DISK_INODES", 100_000)
# The box's cgroup: the memory of all its processes and tmpfs pages; its processes and threads.
AMTP_SANDBOX_BOX_MEMORY_BYTES = env_int("AMTP_SANDBOX_BOX_MEMORY_BYTES", 3 << 30)
AMTP_SANDBOX_BOX_PROCESSES = env_int("AMTP_SANDBOX_BOX_PROCESSES", 512)
# Where each box's cgroup is made, under each cgroup hierarchy's root.
AMTP_SANDBOX_CGROUP_PARENT = os.environ.get("AMTP_SANDBOX_CGROUP_PARENT", "amtp")
# The allow-listing proxy of each box (verification/proxy.py): open connections per box and
# in all (one worker), and seconds a connection may stay silent.
AMTP_PROXY_MAX_CONNECTIONS = env_int("AMTP_PROXY_MAX_CONNECTIONS", 64)
AMTP_PROXY_MAX_CONNECTIONS_TOTAL = env_int("AMTP_PROXY_MAX_CONNECTIONS_TOTAL", 256)
AMTP_PROXY_IDLE_TIMEOUT_S = float(os.environ.get("AMTP_PROXY_IDLE_TIMEOUT_S", "30"))
# BootApp (verification/boot): an app AMTP starts itself when a run has no target URL nor preview.
# Installed dependencies are kept per repository and lock files' contents (a second install of
# the same lock files is a copy); each install (or seed) command and the readiness have a limit.
AMTP_BOOT_APPS = env_bool("AMTP_BOOT_APPS", True)
AMTP_BOOT_CACHE_DIR = Path(
    os.environ.get("AMTP_BOOT_CACHE_DIR") or devstack.STACK_DIR / "boot-cache"
)
AMTP_BOOT_INSTALL_TIMEOUT_S = float(os.environ.get("AMTP_BOOT_INSTALL_TIMEOUT_S", "900"))
AMTP_BOOT_READY_TIMEOUT_S = float(os.environ.get("AMTP_BOOT_READY_TIMEOUT_S", "120"))
# Evidence kept per run (traces, screenshots), and for how long (manage.py prune_evidence).
AMTP_EVIDENCE_MAX_FILES = env_int("AMTP_EVIDENCE_MAX_FILES", 200)
AMTP_EVIDENCE_MAX_BYTES = env_int("AMTP_EVIDENCE_MAX_BYTES", 200 << 20)
AMTP_EVIDENCE_DAYS = env_int("AMTP_EVIDENCE_DAYS", 30)

# Retention (manage.py prune): finished runs older than this many days are removed, for
# repositories without a retention of their own; empty keeps them forever.
AMTP_RETENTION_DAYS = env_int("AMTP_RETENTION_DAYS", 0) or None

# Notifications (notifications/services.py): where a run's link points, how long one delivery may
# take and how often it is tried, and the hosts a webhook may reach although they are loopback
# or private (HOST or HOST:PORT; never a metadata address).
AMTP_PUBLIC_URL = os.environ.get("AMTP_PUBLIC_URL", "").rstrip("/")
AMTP_NOTIFY_TIMEOUT_S = float(os.environ.get("AMTP_NOTIFY_TIMEOUT_S", "5"))
AMTP_NOTIFY_ATTEMPTS = env_int("AMTP_NOTIFY_ATTEMPTS", 3)
AMTP_NOTIFY_ALLOW_HOSTS = env_list("AMTP_NOTIFY_ALLOW_HOSTS", "")
# Email: Django's own settings (docs.djangoproject.com/en/stable/topics/email/).
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = AMTP_NOTIFY_TIMEOUT_S
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "amtp@localhost")

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("AMTP_MAX_REQUEST_BYTES", 2 * 1024 * 1024)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# DEBUG pages and error e-mails show settings: hide every one that can carry a credential
# (Django's own list misses connection URLs such as DATABASE_URL).
DEFAULT_EXCEPTION_REPORTER_FILTER = "amtp_site.problems.CredentialsHidingFilter"

# Operations (docs/operations.md). /metrics answers the addresses in these networks, or a
# request with the bearer token; X-Forwarded-For counts only from a trusted proxy's address.
AMTP_METRICS_ALLOWED_CIDRS = env_list("AMTP_METRICS_ALLOWED_CIDRS", "127.0.0.0/8,::1/128")
AMTP_METRICS_TOKEN = os.environ.get("AMTP_METRICS_TOKEN", "")
AMTP_METRICS_TRUSTED_PROXIES = env_list("AMTP_METRICS_TRUSTED_PROXIES", "")
# HOST:PORT the worker serves its amtp_* metrics on, and the Temporal SDK's (empty: none).
AMTP_WORKER_METRICS_ADDRESS = os.environ.get("AMTP_WORKER_METRICS_ADDRESS", "")
AMTP_TEMPORAL_METRICS_ADDRESS = os.environ.get("AMTP_TEMPORAL_METRICS_ADDRESS", "")
# JSON lines with run_id, workflow_id, stage and attempt (amtp_site.logs), secrets scrubbed.
AMTP_LOG_JSON = env_bool("AMTP_LOG_JSON", False)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("AMTP_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
if AMTP_LOG_JSON:
    LOGGING["formatters"]["json"] = {"()": "amtp_site.logs.JsonFormatter"}
    LOGGING["filters"] = {
        "context": {"()": "amtp_site.logs.ContextFilter"},
        "scrub": {"()": "repositories.secrets.ScrubbingFilter"},
    }
    LOGGING["handlers"]["console"].update(formatter="json", filters=["context", "scrub"])

if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SECURE_REDIRECT_EXEMPT = [r"^metrics$"]  # scraped over the internal network
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
