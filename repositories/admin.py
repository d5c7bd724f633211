"""Repository settings in admin: the form checks what the run will check, before saving.

Per repository (``repositories.access``): the list shows the repositories the user may see,
the settings change with the ``admin`` role on that repository (or the global change
permission); grants have their own admin page, for those who hold the grant permissions themselves
(``repositories.add_repositorygrant`` ..., superusers): a role never hands out roles."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import transaction
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.views.decorators.debug import sensitive_post_parameters

from repositories import access
from repositories.boot_settings import BOOT_ENV
from repositories.forms import RepositoryForm
from repositories.login import CREDENTIALS
from repositories.models import Repository, RepositoryGrant
from repositories.schedules import maintenance_schedule_sync
from repositories.services import FIELDS, repository_create, repository_update

LOGIN_HELP = (
    "How the sandboxed browser logs into the preview before it explores the app and before "
    "the tests run (a Playwright setup project the pull request carries); for a JSON API with "
    "token auth, the API token path (or, for a ready key, where it is sent) instead of the login "
    "page's fields. The credentials are "
    "for a test account: stored encrypted or read from the worker's environment, never shown, "
    "never sent to a model, never in an artifact, log or pull request."
)
REPOSITORY_DEFAULTS = ("default_branch", "default_depth_level", "default_framework", "test_dir")
REPOSITORY_VERIFICATION = ("preview_url", "allowed_hosts", "failing_tests", "open_pr_unverified")
REPOSITORY_TEST_DATA = (
    "test_data_setup_url",
    "test_data_setup_command",
    "test_data_teardown_url",
    "test_data_teardown_command",
    "test_data_timeout_s",
)
REPOSITORY_WEBHOOKS = (
    "webhook_enabled",
    "webhook_branches",
    "webhook_secret",
    "clear_webhook_secret",
)
REPOSITORY_LOGIN = (
    "login_path",
    "login_username_label",
    "login_password_label",
    "login_submit",
    "login_success",
    "api_token_path",
    "api_key_in",
    "login_username",
    "login_password",
    "clear_login_credentials",
    "login_username_env",
    "login_password_env",
)
BOOT_HELP = (
    "How AMTP starts the app itself when a run has neither a target URL nor a preview. Empty "
    "fields are found in the repository (its Playwright webServer, devcontainer.json, Procfile, "
    "package.json scripts, Django, Flask or FastAPI files); a value here overrides that field."
)
REPOSITORY_BOOT = (
    "boot_install",
    "boot_start",
    "boot_port",
    "boot_ready_path",
    "boot_seed",
    "boot_services",
    "boot_workdir",
    "boot_env",
    "clear_boot_env",
    "boot_env_worker",
)
REPOSITORY_NOTIFICATIONS = (
    "notify_emails",
    "notify_email_events",
    "notify_webhook_url",
    "notify_webhook_events",
)
REPOSITORY_MAINTENANCE = (
    "maintain_on_push",
    "maintenance_every",
    "maintain_all_specs",
    "pr_checks",
    "pr_checks_drafts",
    "pr_preview_url_template",
)
REPOSITORY_LIMITS = ("max_concurrent_runs", "rate_limit_runs", "rate_limit_window_seconds")


@admin.register(RepositoryGrant)
class RepositoryGrantAdmin(admin.ModelAdmin):
    """Who holds which role where; only the holders of the grant permissions see it."""

    list_display = ("repository", "user", "group", "role", "created_at")
    list_filter = ("role", "repository")
    search_fields = ("repository__full_name", "user__username", "group__name")
    list_select_related = ("repository", "user", "group")
    ordering = ("repository__full_name", "role")
    fields = ("repository", "user", "group", "role")


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    list_display = (
        "full_name",
        "host",
        "default_branch",
        "default_depth_level",
        "default_framework",
        "webhook_enabled",
        "require_approval",
        "max_concurrent_runs",
        "launch",
        "health",
    )
    list_filter = ("host", "webhook_enabled", "require_approval", "default_framework")
    search_fields = ("full_name", "local_path")
    form = RepositoryForm
    fieldsets = [
        (None, {"fields": ("full_name", "host", "local_path")}),
        ("Run defaults", {"fields": REPOSITORY_DEFAULTS}),
        ("Webhooks", {"fields": REPOSITORY_WEBHOOKS}),
        ("Approval", {"fields": ("require_approval", "allow_self_approval")}),
        (
            "Pull requests",
            {"fields": ("draft_pull_requests", "pull_request_labels", "pr_ci_workflow")},
        ),
        ("Verification", {"fields": REPOSITORY_VERIFICATION}),
        ("Maintenance and pull request checks", {"fields": REPOSITORY_MAINTENANCE}),
        ("Test data", {"fields": REPOSITORY_TEST_DATA}),
        ("Logging in", {"fields": REPOSITORY_LOGIN, "description": LOGIN_HELP}),
        ("Starting the app", {"fields": REPOSITORY_BOOT, "description": BOOT_HELP}),
        ("Notifications", {"fields": REPOSITORY_NOTIFICATIONS}),
        ("Limits", {"fields": REPOSITORY_LIMITS}),
        ("Retention", {"fields": ("retention_days",)}),
    ]

    # An error report (DEBUG page, error e-mail) shows the request's POST data: not this field.
    @method_decorator(
        sensitive_post_parameters("webhook_secret", "login_username", "login_password", "boot_env")
    )
    def changeform_view(self, request, *args, **kwargs):
        return super().changeform_view(request, *args, **kwargs)

    def get_queryset(self, request):
        repositories = super().get_queryset(request)
        perms = ("repositories.view_repository", "repositories.change_repository")
        return access.restrict(repositories, request.user, perms, via="pk")

    def has_change_permission(self, request, obj=None):
        return request.user.has_perm("repositories.change_repository", obj)

    def has_delete_permission(self, request, obj=None):
        return request.user.has_perm("repositories.delete_repository", obj)

    def save_model(self, request, obj, form, change):
        """Saved by the service, like every other surface; the form has shown its problems."""
        typed = (*FIELDS, *CREDENTIALS, BOOT_ENV)
        fields = {name: form.cleaned_data[name] for name in typed}
        if change:
            repository_update(repository=obj, **fields)
        else:
            obj.pk = repository_create(**fields).pk
            obj.refresh_from_db()
        if "maintenance_every" in form.changed_data:  # Temporal holds the schedule itself
            transaction.on_commit(lambda: self._sync_schedule(request, obj))

    def _sync_schedule(self, request, repository):
        """Once the setting is committed, so no firing reads a setting that was rolled back."""
        synced, said = maintenance_schedule_sync(repository)
        self.message_user(request, said, messages.SUCCESS if synced else messages.WARNING)

    @admin.display(description="")
    def launch(self, repository):
        url = reverse("launch_run") + f"?repository={repository.pk}"
        return format_html('<a href="{}">Launch run</a>', url)

    @admin.display(description="")
    def health(self, repository):
        url = reverse("repository_health", args=[repository.pk])
        return format_html('<a href="{}">Health</a>', url)
