"""The run tables: ``runs``, ``stages``, ``artifacts``, ``activity_idempotency``,
``run_starts`` and ``run_costs``.

Every status/kind set is a PostgreSQL CHECK constraint, so a bad value is refused even through
raw SQL."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from amtp_site.constraints import one_of, one_of_each
from amtp_site.fields import flag, optional_char, optional_list, optional_text
from amtp_site.indexes import newest_first, prefix_search
from repositories.models import DepthLevel, Framework, Repository
from runs import stages as vocabulary
from runs.stages import KIND_STAGES, STAGES


class RunStatus(models.TextChoices):
    """A run's statuses; ``runs.transitions`` alone moves a run between them. How a run ends
    is spelled in ``runs.stages``, which the (Django-free) workflow shares."""

    PENDING = "pending"
    RUNNING = "running"
    PASSED = vocabulary.PASSED
    FAILED = vocabulary.FAILED
    CANCELLED = vocabulary.CANCELLED


class Trigger(models.TextChoices):
    API = "api"
    FORM = "form"
    WEBHOOK = "webhook"
    CLI = "cli"
    SCHEDULE = "schedule"  # the repository's maintenance schedule (a Temporal Schedule)


class RunKind(models.TextChoices):
    GENERATION = "generation"  # new tests written, verified and proposed
    MAINTENANCE = "maintenance"  # the repository's tests re-verified, healed, quarantined
    CHECK = "check"  # a pull request's preview checked, reported as a GitHub check run


class StageName(models.TextChoices):
    CRAWL_REPO = "crawl_repo"
    BOOT_APP = "boot_app"
    EXPLORE_APP = "explore_app"
    GENERATE_TEST_CASES = "generate_test_cases"
    GENERATE_TEST_CODE = "generate_test_code"
    VERIFY_TESTS = "verify_tests"
    CREATE_PULL_REQUEST = "create_pull_request"
    REPORT_CHECK = "report_check"


class StageStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


class ArtifactKind(models.TextChoices):
    REPO_CRAWLER_OUTPUT = "repo_crawler_output"
    TEST_CASE_GENERATOR_OUTPUT = "test_case_generator_output"
    TEST_ENGINEER_OUTPUT = "test_engineer_output"
    FAILURE_REPORT = "failure_report"
    PULL_REQUEST = "pull_request"
    VERIFICATION_REPORT = "verification_report"
    APP_MAP = "app_map"
    APP_BOOT = "app_boot"


class Timed:
    """A run's or a stage's duration, from its start and finish times."""

    @property
    def duration(self):
        if self.started_at and self.finished_at:
            return self.finished_at - self.started_at
        return None


class Run(Timed, models.Model):
    Status = RunStatus

    Trigger = Trigger

    Kind = RunKind

    TERMINAL = (Status.PASSED, Status.FAILED, Status.CANCELLED)

    run_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    repository = models.ForeignKey(
        Repository,
        on_delete=models.PROTECT,
        related_name="runs",
        db_index=False,  # runs_repository_page starts with it
    )
    repo_full_name = models.CharField(max_length=200)
    ref = models.CharField(max_length=255)
    commit_sha = models.CharField(max_length=40, blank=True, help_text="The ref, resolved.")
    base_branch = models.CharField(max_length=255)
    target_url = optional_char(
        max_length=500,
        help_text="Where the generated tests run (empty: the repository's preview URL).",
    )
    allowed_hosts = optional_list(
        help_text="Hosts this run's tests may reach besides the repository's allowed hosts "
        "(launch_run --allow-host with --target-url): kept with the run, so running it again "
        "reaches the same app, and never added to the repository.",
    )
    base_sha = models.CharField(
        max_length=40, blank=True, help_text="Head of base_branch when the run was crawled."
    )
    depth_level = models.CharField(max_length=16, choices=DepthLevel.choices)
    target_framework = models.CharField(max_length=16, choices=Framework.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.API)
    kind = models.CharField(
        max_length=16,
        choices=RunKind.choices,
        default=RunKind.GENERATION,
        db_default=RunKind.GENERATION,
    )
    pull_number = models.PositiveIntegerField(
        null=True, blank=True, help_text="The pull request a check run checks."
    )
    held = flag(
        default=False,
        help_text="Held for an approval before any test runs (a fork's pull request).",
    )
    requested_by = models.CharField(max_length=200, blank=True)
    requester = optional_char(
        max_length=40,
        help_text="Who asked, for the four-eyes rule: user:<id> (a person, or the owner of the "
        "token used), token:<id> (a service token), oidc:<rule id>:<repository id> (a CI by "
        "OpenID Connect); empty for webhooks and the CLI.",
    )
    request_key = models.CharField(
        max_length=200,
        null=True,
        blank=True,
        help_text="Idempotency-Key of the request (or webhook delivery) that created the run.",
    )
    traceparent = optional_char(
        max_length=55,
        help_text="The W3C traceparent of the request that accepted the run (empty when not "
        "traced): its workflow joins that trace.",
    )
    head_branch = models.CharField(max_length=255, blank=True)
    pr_number = models.PositiveIntegerField(null=True, blank=True)
    pr_url = models.CharField(max_length=500, blank=True)
    error_type = models.CharField(max_length=100, blank=True)
    error_message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "runs"
        ordering = ["-created_at"]
        constraints = [
            *one_of_each("runs", status=RunStatus, trigger=Trigger, kind=RunKind),
            one_of("depth_level", DepthLevel, "runs_depth_valid"),
            one_of("target_framework", Framework, "runs_framework_valid"),
            # A constraint, not unique=True: the field form adds a LIKE index nothing asks for.
            models.UniqueConstraint(fields=["request_key"], name="runs_request_key_unique"),
        ]
        # Each ends in the page order (created_at, run_id), so a page, a deep page and a cursor
        # page are index scans, and includes the low-cardinality filter columns, checked in the
        # index. Newest first alone serves the framework and depth filters (a fifth and a
        # quarter of the runs: a page reads a few hundred entries), so they have none of their
        # own; status (pending and running are rare), repository, repository name (the API)
        # and trigger (with a repository) do. Then one per admin search column
        # (amtp_site.lists.PrefixSearchMixin). scripts/bench_lists.py prints each one's scans.
        indexes = [
            *newest_first(
                "runs",
                "run_id",
                *("status", "repository", "repo_full_name", None, "trigger"),
                # repository: a list narrowed to the repositories one may see
                # (repositories.access) is checked in the index too.
                include=("status", "target_framework", "trigger", "depth_level", "repository"),
            ),
            *prefix_search("runs", "repo_full_name", "ref", "requested_by"),
        ]

    def __str__(self) -> str:
        return f"{self.repo_full_name}@{self.ref} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL


class Stage(Timed, models.Model):
    Name = StageName

    Status = StageStatus

    # In the workflow's order; StageName() refuses a stage the choices do not know.
    ORDER = [StageName(stage) for _, stage in STAGES]
    OF_KIND = {kind: [StageName(s) for s in stages] for kind, stages in KIND_STAGES.items()}
    OPEN = (Status.PENDING, Status.RUNNING, Status.AWAITING_APPROVAL)

    stage_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="stages")
    name = models.CharField(max_length=32, choices=Name.choices)
    position = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error_type = models.CharField(max_length=100, blank=True)
    error_message = models.TextField(blank=True)
    note = optional_text(
        help_text="Why a stage was skipped, or what it found.",
    )

    class Meta:
        db_table = "stages"
        ordering = ["run", "position"]
        constraints = [
            *one_of_each("stages", status=StageStatus, name=StageName),
            models.UniqueConstraint(fields=["run", "name"], name="stages_one_per_run_and_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name}: {self.status}"


class Artifact(models.Model):
    Kind = ArtifactKind

    artifact_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="artifacts")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    schema_id = models.CharField(max_length=300)
    content = models.JSONField(help_text="The validated object, verbatim.")
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "artifacts"
        ordering = ["run", "created_at"]
        constraints = [
            one_of("kind", ArtifactKind, "artifacts_kind_valid"),
            models.UniqueConstraint(fields=["run", "kind"], name="artifacts_one_per_run_and_kind"),
        ]
        indexes = [*newest_first("artifacts", "artifact_id", None, "kind")]

    def __str__(self) -> str:
        return f"{self.kind} {self.artifact_id}"


class ActivityIdempotency(models.Model):
    """sha256(run_id ":" activity ":" canonical_json(input)) → result: a retried stage's answer."""

    idem_key = models.CharField(max_length=64, primary_key=True)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="idempotency_keys")
    activity_name = models.CharField(max_length=64)
    result = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "activity_idempotency"
        verbose_name_plural = "activity idempotency keys"
        constraints = [
            models.CheckConstraint(
                condition=Q(idem_key__regex=r"^[0-9a-f]{64}$"), name="activity_idempotency_key_hex"
            ),
        ]


class RunStart(models.Model):
    """A run accepted whose workflow is not started yet: the outbox that ``run_worker``'s
    dispatcher drains (``runs.temporal.dispatcher.run_starts_dispatch``). It goes in with the run, and
    every insert notifies the ``amtp_run_starts`` channel (a trigger, migration 0007)."""

    run = models.OneToOneField(
        Run, on_delete=models.CASCADE, primary_key=True, related_name="start", db_column="run_id"
    )
    task_queue = models.CharField(
        max_length=200, help_text="Where its workflow goes: TEMPORAL_TASK_QUEUE when accepted."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "run_starts"
        indexes = [models.Index(fields=["created_at"], name="run_starts_oldest_first")]


class RunCost(models.Model):
    # run_costs_one_per_agent_and_model starts with it.
    run = models.ForeignKey(
        "runs.Run", on_delete=models.CASCADE, related_name="costs", db_index=False
    )
    agent = models.CharField(max_length=40)
    provider = models.CharField(max_length=40)
    model = models.CharField(max_length=200)
    calls = models.PositiveIntegerField(default=0)
    input_tokens = models.BigIntegerField(
        default=0, help_text="Every prompt token, cache reads and writes included."
    )
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cost_usd = models.DecimalField(
        max_digits=16,
        decimal_places=8,
        null=True,
        blank=True,
        help_text="At the prices of when it was stored; empty: the model's price is unknown.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "run_costs"
        constraints = [
            models.UniqueConstraint(
                fields=["run", "agent", "model"], name="run_costs_one_per_agent_and_model"
            ),
        ]
