"""The ``repositories`` table (ours): per-repository settings every run starts from.

The model moved here from the ``runs`` app with its table and data (state-only migration).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from amtp_site.constraints import one_of, one_of_each
from amtp_site.fields import flag, optional_char, optional_list, optional_reference, optional_text
from repositories.choices import (  # noqa: F401  (imported from here by the rest of AMTP)
    DEFAULT_NOTIFY_EVENTS,
    DEFAULT_PULL_REQUEST_LABELS,
    DepthLevel,
    FailingTests,
    Framework,
    Host,
    MaintenanceEvery,
    NotifyEvent,
    Role,
    default_notify_events,
    default_pull_request_labels,
)


def optional_url(*args, **kwargs) -> models.CharField:
    """A URL, or a path on the app's origin, that may be empty."""
    return optional_char(*args, max_length=500, **kwargs)


def notify_events(how: str) -> models.JSONField:
    """Which events a repository's notifications of one channel are about."""
    return optional_list(
        default=default_notify_events,
        help_text=f"Which events are {how}: " + ", ".join(NotifyEvent.values) + ".",
    )


def accessible_name(of: str) -> models.CharField:
    """A control of the login form, found by its exact accessible name (as a person using a
    screen reader would find it)."""
    return optional_char(max_length=200, help_text=f"The exact accessible {of}.")


def login_variable(holding: str) -> models.CharField:
    """The worker's environment variable holding a login credential, instead of storing it."""
    return optional_char(
        max_length=64,
        help_text=f"Instead of a stored {holding}: the worker's environment variable holding "
        "it (a name starting with AMTP_LOGIN_).",
    )


class Repository(models.Model):
    """Per-repository settings (ours): host, defaults, webhook triggers, approval, limits."""

    full_name = models.CharField(max_length=200, unique=True, help_text="owner/name")
    host = models.CharField(max_length=16, choices=Host.choices, default=Host.GITHUB)
    local_path = models.CharField(
        max_length=1000, blank=True, help_text="Path of the git repository (host 'local')."
    )
    default_branch = models.CharField(max_length=255, default="main")
    default_depth_level = models.CharField(
        max_length=16, choices=DepthLevel.choices, default=DepthLevel.STANDARD
    )
    default_framework = models.CharField(
        max_length=16, choices=Framework.choices, default=Framework.PLAYWRIGHT
    )
    test_dir = models.CharField(
        max_length=200, default="e2e/amtp", help_text="Generated files may only go here."
    )
    webhook_enabled = models.BooleanField(default=False, help_text="Push events start runs.")
    webhook_branches = models.JSONField(
        default=list, blank=True, help_text="Branches whose pushes start a run (empty: default)."
    )
    # Write-only: admin shows whether it is set, never the value (repositories.forms); HMAC
    # needs the value itself, so it cannot be stored hashed.
    webhook_secret = optional_char(
        max_length=255,
        help_text="The secret of this repository's GitHub webhook: its pushes must be signed "
        "with it (empty: the global GITHUB_WEBHOOK_SECRET, shared by every repository).",
    )
    maintain_on_push = flag(
        default=False,
        help_text="A push to the default branch starts a maintenance run: the tests already in "
        "the test directory re-verified against the preview, healed or quarantined, and one "
        "maintenance pull request when something changed.",
    )
    maintain_all_specs = flag(
        default=False,
        help_text="Maintenance runs keep every Playwright spec in the test directory, not only "
        "the files AMTP wrote.",
    )
    maintenance_every = models.CharField(
        max_length=16,
        choices=MaintenanceEvery.choices,
        blank=True,
        default=MaintenanceEvery.OFF,
        db_default=MaintenanceEvery.OFF,
        help_text="Also start a maintenance run on a schedule (a Temporal Schedule; skipped "
        "while the previous maintenance run is still going).",
    )
    pr_checks = flag(
        default=False,
        help_text="Run the repository's tests against each pull request's preview and report a "
        "GitHub check run (needs the PR preview URL template).",
    )
    pr_checks_drafts = flag(
        "Check draft pull requests too",
        default=False,
        help_text="Off: a draft pull request gets its check when it is marked ready for review. "
        "On: drafts are checked like any pull request.",
    )
    pr_preview_url_template = optional_url(
        "PR preview URL template",
        help_text="Where a pull request's preview runs: an http(s) URL with {pr}, {sha} and "
        "{branch} filled in, e.g. https://pr-{pr}.preview.example.com; or {deployment} alone: "
        "each successful GitHub deployment of a commit gives its URL (deployment_status).",
    )
    require_approval = models.BooleanField(
        default=False, help_text="Hold every run for a human approval before the PR is opened."
    )
    allow_self_approval = flag(
        default=False,
        help_text="Let the person who requested a run (or the owner of the token that did) "
        "approve its hold. Off: a second person decides (four eyes).",
    )
    preview_url = optional_url(
        help_text="A running instance of the app (http(s) URL). When set, the generated tests "
        "run against it before the pull request is opened; a run can override it.",
    )
    allowed_hosts = optional_list(
        help_text="Hosts the generated tests may reach although they resolve to a loopback, "
        "private, link-local or other non-public address (HOST or HOST:PORT, comma-separated; "
        "empty: public addresses only). The target itself must be listed when it is such an "
        "address; a cloud metadata service or the worker's own databases never should be.",
    )
    failing_tests = models.CharField(
        max_length=8,
        choices=FailingTests.choices,
        default=FailingTests.FIXME,
        db_default=FailingTests.FIXME,
        help_text="What a generated test still failing after healing becomes.",
    )
    open_pr_unverified = flag(
        default=False,
        help_text="When the tests cannot be run (target unreachable, timeout, runner missing), "
        "open the pull request anyway, marked unverified, instead of failing the run.",
    )
    test_data_setup_url = optional_url(
        "test data set-up URL",
        help_text="Called with POST before the generated tests first run, from inside the "
        "sandbox: a path on the app (e.g. /api/test-data/seed, called on the run's target) or "
        "a URL on the preview URL's origin. A failure stops verification (the environment, "
        "not the tests).",
    )
    test_data_setup_command = optional_list(
        "test data set-up command",
        help_text="Or a command run in the sandbox before the tests, as a JSON list: "
        '["node", "-e", "…"]. No shell unless it names one; it reaches only the target and the '
        "allowed hosts, through the proxy at HTTP_PROXY.",
    )
    test_data_teardown_url = optional_url(
        "test data tear-down URL",
        help_text="Called with POST after the tests last ran (also when they failed or timed "
        "out), like the set-up URL. A failure is reported, and does not fail the run.",
    )
    test_data_teardown_command = optional_list(
        "test data tear-down command",
        help_text="Or a command run in the sandbox after the tests, like the set-up command.",
    )
    test_data_timeout_s = models.PositiveIntegerField(
        "test data timeout (s)",
        default=60,
        db_default=60,
        help_text="Seconds each test data call or command may take (1 to 300).",
    )
    draft_pull_requests = flag(
        default=True,
        help_text="Open pull requests as drafts, so CI that runs on pull requests does not run "
        "the generated specs before a person has read them.",
    )
    pull_request_labels = optional_list(
        default=default_pull_request_labels,
        help_text="Labels put on every pull request AMTP opens (comma-separated; empty: none).",
    )
    # The login recipe (repositories.login): how the sandboxed browser logs into the preview
    # before exploring and before the tests run. Empty login_path: no login.
    login_path = optional_url(
        help_text="The login page: a path on the preview's origin (/login), or a URL on the "
        "preview URL's origin. Empty: the app is explored and tested without logging in.",
    )
    login_username_label = accessible_name("label of the user name field (e.g. Email)")
    login_password_label = accessible_name("label of the password field (e.g. Password)")
    login_submit = accessible_name("name of the button that logs in (e.g. Sign in)")
    login_success = optional_char(
        max_length=200,
        help_text="Logged in when: a path starting with / that the app lands on (/dashboard), "
        "or a text the page shows once logged in (Sign out).",
    )
    login_username_env = login_variable("user name")
    login_password_env = login_variable("password")
    # An API with token auth (repositories.login.ApiToken): the login credentials above are
    # POSTed here for a bearer token, instead of a browser filling a login form.
    api_token_path = optional_url(
        "API token path",
        help_text="For a JSON API with token auth, instead of a login page: the path on the "
        "app's origin that issues a token (/token). AMTP POSTs the login user name and password "
        "there as a form (username, password: OAuth 2.0's password grant), else as JSON, and "
        "sends the token of the answer (access_token) as a bearer token. Empty: no API token.",
    )
    api_key_in = optional_char(
        "API key sent in",
        max_length=60,
        help_text="For a JSON API that takes a ready key instead: where the key goes, "
        "'query NAME' (query api-key) or 'header NAME' (header X-API-Key). The key is the login "
        "password (stored encrypted, or the password variable); no user name is needed. "
        "Empty: no API key.",
    )
    # Write-only, Fernet tokens (repositories.credentials): set through the services' plain
    # login_username and login_password, never shown, never in a form.
    login_username_token = optional_text(editable=False)
    login_password_token = optional_text(editable=False)
    # The app recipe's overrides (repositories.boot_settings, verification.boot.recipe): how AMTP
    # installs and starts the app itself when a run has no target URL. Empty: found in the
    # repository's own files.
    boot_install = optional_text(
        help_text="Install commands, one a line, run in order from the app's folder "
        "(empty: from the repository's dependency files, e.g. npm ci).",
    )
    boot_start = optional_char(
        max_length=1000,
        help_text="The shell command that starts the app (e.g. npm start); empty: found in "
        "the repository (Playwright webServer, devcontainer, Procfile, package.json, ...).",
    )
    boot_port = models.PositiveIntegerField(
        null=True, blank=True, help_text="The port the started app listens on (1024-65535)."
    )
    boot_ready_path = optional_url(
        help_text="The path AMTP requests until the app answers (below 500); empty: /.",
    )
    boot_seed = optional_char(
        max_length=1000,
        help_text="A command run once after the services are up, before the app starts "
        "(e.g. python manage.py migrate --noinput).",
    )
    boot_services = optional_list(
        help_text="Throwaway services the app gets (DATABASE_URL, REDIS_URL): postgres, valkey.",
    )
    boot_workdir = optional_char(
        max_length=200,
        help_text="The app's folder in the repository (empty: found, else the root).",
    )
    boot_env_worker = optional_list(
        help_text="Variables the app gets from the worker: NAME takes the value of the "
        "worker's AMTP_APP_NAME (comma-separated names).",
    )
    # Write-only, set through the services' plain boot_env ("NAME=value" lines): the names are
    # shown, the values are a Fernet token (repositories.credentials), never shown.
    boot_env_names = optional_list(editable=False)
    boot_env_token = optional_text(editable=False)
    pr_ci_workflow = flag(
        default=True,
        help_text="Pull requests to a GitHub repository add .github/workflows/amtp-e2e.yml "
        "(installs, starts the app, runs the tests) unless the repository has that file.",
    )
    notify_emails = optional_list(
        help_text="Addresses told of this repository's events by email (comma-separated; "
        "empty: none). Sent through the server's mail settings.",
    )
    notify_email_events = notify_events("emailed")
    notify_webhook_url = optional_url(
        help_text="A Slack or Teams incoming webhook, or any URL that takes a JSON POST "
        '({"text": ...}); https only, never a private or metadata address.',
    )
    notify_webhook_events = notify_events("posted to the webhook")
    retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="manage.py prune removes this repository's finished runs older than this "
        "many days, with their artifacts and evidence (empty: AMTP_RETENTION_DAYS; neither "
        "set: kept forever). Runs whose pull request is open, or that are held, stay.",
    )
    max_concurrent_runs = models.PositiveIntegerField(default=2)
    rate_limit_runs = models.PositiveIntegerField(default=30, help_text="Runs per window.")
    rate_limit_window_seconds = models.PositiveIntegerField(default=3600)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "repositories"
        verbose_name_plural = "repositories"
        ordering = ["full_name"]
        constraints = [
            *one_of_each(
                "repositories",
                host=Host,
                failing_tests=FailingTests,
                maintenance_every=MaintenanceEvery,
            ),
            one_of("default_depth_level", DepthLevel, "repositories_depth_valid"),
            one_of("default_framework", Framework, "repositories_framework_valid"),
            models.CheckConstraint(
                condition=Q(full_name__regex=r"^[^/]+/[^/]+$"), name="repositories_full_name_valid"
            ),
            models.CheckConstraint(
                condition=~Q(host="local") | ~Q(local_path=""),
                name="repositories_local_needs_path",
            ),
        ]

    def __str__(self) -> str:
        return self.full_name


class RepositoryGrant(models.Model):
    """A role on one repository for one user or one group (exactly one of them)."""

    Role = Role

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="grants")
    user = optional_reference(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="repository_grants",
        db_index=False,  # repository_grants_one_per_user leads with it
    )
    group = optional_reference(
        "auth.Group",
        on_delete=models.CASCADE,
        related_name="repository_grants",
        db_index=False,  # repository_grants_one_per_group leads with it
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "repository_grants"
        # No default ordering: every request reads its user's grants, and an order by
        # repository would join and sort ``repositories`` each time (the admin orders).
        constraints = [
            one_of("role", Role, "repository_grants_role_valid"),
            models.CheckConstraint(
                condition=Q(user__isnull=False, group__isnull=True)
                | Q(user__isnull=True, group__isnull=False),
                name="repository_grants_one_principal",
            ),
            # One role per (repository, principal): what someone may do there reads off one row.
            # They lead with the principal: "which repositories may this user see" is the
            # question every list asks.
            models.UniqueConstraint(
                fields=["user", "repository"],
                condition=Q(user__isnull=False),
                name="repository_grants_one_per_user",
            ),
            models.UniqueConstraint(
                fields=["group", "repository"],
                condition=Q(group__isnull=False),
                name="repository_grants_one_per_group",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user or self.group} is {self.role} of {self.repository}"
