"""The value sets of repository and grant settings (most also a CHECK constraint on their column)."""

from __future__ import annotations

from django.db import models


class DepthLevel(models.TextChoices):
    SMOKE = "smoke"
    CORE = "core"
    STANDARD = "standard"
    DEEP = "deep"


class Framework(models.TextChoices):
    PLAYWRIGHT = "playwright"
    MAESTRO = "maestro"


class Host(models.TextChoices):
    GITHUB = "github"
    LOCAL = "local"


class FailingTests(models.TextChoices):
    """What a generated test that still fails after healing becomes in the pull request."""

    FIXME = "fixme", "kept as test.fixme with its failure reason"
    DROP = "drop", "dropped (listed in the pull request body)"


DEFAULT_PULL_REQUEST_LABELS = ("amtp", "model-written")


class NotifyEvent(models.TextChoices):
    """What a repository's notifications may be about (``notifications.services`` sends them).
    A new kind of event is one line here and one call where it is written."""

    RUN_HELD = "run_held", "a run waits for approval"
    RUN_FAILED = "run_failed", "a run failed"
    PR_OPENED = "pr_opened", "a pull request was opened"


DEFAULT_NOTIFY_EVENTS = (NotifyEvent.RUN_HELD.value, NotifyEvent.RUN_FAILED.value)


def default_notify_events() -> list[str]:
    return list(DEFAULT_NOTIFY_EVENTS)


def default_pull_request_labels() -> list[str]:
    return list(DEFAULT_PULL_REQUEST_LABELS)


class Role(models.TextChoices):
    """What a grant lets its holder do on one repository (``repositories.access.ROLE_PERMS``
    spells each out as Django permissions)."""

    VIEWER = "viewer", "viewer: read runs, artifacts, evidence, context"
    OPERATOR = "operator", "operator: viewer + launch, cancel, run again"
    APPROVER = "approver", "approver: viewer + approve or reject holds"
    ADMIN = "admin", "admin: all of the above + the repository's settings"


class MaintenanceEvery(models.TextChoices):
    """How often a maintenance run starts on its own (a Temporal Schedule per repository)."""

    OFF = "", "off"
    DAILY = "daily", "every day"
    WEEKLY = "weekly", "every week"
