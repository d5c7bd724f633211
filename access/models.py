"""API access tables: ``api_tokens`` and ``oidc_trust_rules``.

They keep the ``runs`` app label (tables, migrations and permission names such as
``runs.add_apitoken`` are unchanged): ``runs/migrations`` holds their history."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from amtp_site.fields import optional_reference
from amtp_site.moved import KeptInRuns


class Scope(models.TextChoices):
    RUNS_READ = "runs:read", "Read runs, artifacts and approvals"
    RUNS_WRITE = "runs:write", "Start and cancel runs"
    APPROVALS_DECIDE = "approvals:decide", "Approve or reject held runs"


def created_by_field(help_text: str) -> models.ForeignKey:
    """The user who made a credential, kept for the audit of what it does."""
    return optional_reference(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        editable=False,
        related_name="+",
        help_text=help_text,
    )


def scopes_field() -> models.JSONField:
    """What a credential may do: a list of ``Scope`` values (``scopes_known`` checks them)."""
    return models.JSONField(default=list, help_text="Any of: " + ", ".join(Scope.values))


def scopes_known(name: str) -> models.CheckConstraint:
    return models.CheckConstraint(condition=Q(scopes__contained_by=Scope.values), name=name)


class ApiToken(KeptInRuns):
    """A bearer token. Only the SHA-256 of the secret is stored; the secret is shown once."""

    Scope = Scope

    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'CI deploy'.")
    user = optional_reference(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="api_tokens",
        help_text="Whose token it is (optional; a token without a user is a service token).",
    )
    created_by = created_by_field(
        "Who minted it; a service token's actions are audited under this user."
    )
    key_prefix = models.CharField(
        max_length=16,
        db_index=True,
        editable=False,
        help_text="The first characters of the secret, to recognise the token in logs and lists.",
    )
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    scopes = scopes_field()
    # Ids, not names: a renamed repository stays in the list, a deleted one only narrows it.
    repository_ids = ArrayField(
        models.BigIntegerField(),
        null=True,
        blank=True,
        editable=False,
        help_text="The repositories the token may reach (empty: all its owner may reach; a "
        "service token must name them).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta(KeptInRuns.Meta):
        db_table = "api_tokens"
        verbose_name = "API token"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(token_hash__regex=r"^[0-9a-f]{64}$"), name="api_tokens_hash_hex"
            ),
            scopes_known("api_tokens_scopes_known"),
            models.CheckConstraint(
                condition=Q(user__isnull=False) | Q(repository_ids__isnull=False),
                name="api_tokens_service_names_repositories",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class OidcTrustRule(KeptInRuns):
    """Who a CI's OpenID Connect token is (access.oidc): a token from the configured issuer whose
    ``repository`` claim names one of ``repository_ids`` and whose ``ref``, ``workflow_ref``
    and ``environment`` claims match the patterns set here acts with ``scopes`` on that one
    repository, like a service token limited to it. Superusers configure rules in the admin."""

    name = models.CharField(max_length=100, unique=True, help_text="Named in refusals (401).")
    repository_ids = ArrayField(
        models.BigIntegerField(),
        help_text="The repositories whose CI this rule trusts; a token reaches only its own.",
    )
    ref = models.CharField(
        max_length=255,
        blank=True,
        help_text="Pattern the 'ref' claim must match, e.g. refs/heads/main (* matches any "
        "text; empty: any).",
    )
    workflow_ref = models.CharField(
        max_length=255,
        blank=True,
        help_text="Pattern for 'workflow_ref', e.g. acme/shop/.github/workflows/e2e.yml@* "
        "(empty: any).",
    )
    environment = models.CharField(
        max_length=255,
        blank=True,
        help_text="Pattern for 'environment', e.g. production (empty: any, also none).",
    )
    scopes = scopes_field()
    enabled = models.BooleanField(default=True)
    created_by = created_by_field(
        "Who configured it; its identities' actions are audited under this user."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(KeptInRuns.Meta):
        db_table = "oidc_trust_rules"
        verbose_name = "OIDC trust rule"
        ordering = ["name"]
        constraints = [
            scopes_known("oidc_rules_scopes_known"),
            models.CheckConstraint(
                condition=Q(repository_ids__len__gt=0), name="oidc_rules_name_repositories"
            ),
        ]

    def __str__(self) -> str:
        return self.name
