"""How runs went: the daily rollups the dashboard and ``/api/costs`` read (``run_days``,
``stage_days``) and ``run_health``. They keep the ``runs`` app label: tables and migrations
are unchanged (``runs/migrations``).

The rollups are kept by
PostgreSQL itself: a deferred trigger adds a run to them when its status becomes terminal,
whichever code ends it (migration 0013, ``amtp_rollup_runs``); a rollup row is one
repository's runs of one status that ended on one day (UTC). ``run_health`` is kept the same
way, one row per ended run with a verified report (migration 0018).
"""

from __future__ import annotations

from django.db import models

from amtp_site.moved import KeptInRuns
from repositories.models import Repository


class RunDay(KeptInRuns):
    day = models.DateField()
    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    status = models.CharField(max_length=16)
    runs = models.IntegerField(default=0)
    duration_s = models.FloatField(default=0, help_text="Sum of the runs' durations.")
    cost_usd = models.DecimalField(
        max_digits=20, decimal_places=8, default=0, help_text="Of the runs of known cost."
    )
    runs_cost_unknown = models.IntegerField(
        default=0, help_text="Runs with a model of unknown price (not in cost_usd)."
    )
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    tests = models.IntegerField(default=0, help_text="Tests verified (skipped ones left out).")
    tests_first_attempt = models.IntegerField(default=0, help_text="Passed on attempt 1.")
    tests_passed = models.IntegerField(default=0, help_text="Passed in the end: healed too.")

    class Meta(KeptInRuns.Meta):
        db_table = "run_days"
        constraints = [
            # Repository first: a reader who may see some repositories reads only theirs.
            models.UniqueConstraint(
                fields=["repository", "day", "status"], name="run_days_one_per_key"
            ),
        ]
        indexes = [models.Index(fields=["day"], name="run_days_by_day")]  # all repositories


class StageDay(KeptInRuns):
    """How many stages of one name took a duration in ``bucket``: (1.25^(b-1), 1.25^b]
    seconds, so a percentile read from it is within 12 % of the exact one. A row without a
    repository counts every repository's: what a reader who may see them all reads, a
    fiftieth of the rows at 50 repositories."""

    day = models.DateField()
    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="+", db_index=False, null=True
    )
    stage = models.CharField(max_length=32)
    bucket = models.SmallIntegerField()
    stages = models.IntegerField(default=0)

    class Meta(KeptInRuns.Meta):
        db_table = "stage_days"
        constraints = [
            # Repository first (NULL: all of them), counts included: an index-only scan of the
            # rows of the repositories one may see.
            models.UniqueConstraint(
                fields=["repository", "day", "stage", "bucket"],
                name="stage_days_one_per_key",
                nulls_distinct=False,
                include=["stages"],
            ),
        ]


class RunHealth(KeptInRuns):
    """The test counts of one ended run's verification report, and each test's outcome in a
    few words: what the repository health page and ``/api/repositories/.../health`` read
    instead of the report blobs. PostgreSQL fills it when a run with a ``verified`` report
    ends (migration 0018, ``amtp_health_runs``); counts come from the report's tests."""

    run = models.OneToOneField(
        "runs.Run", on_delete=models.CASCADE, primary_key=True, related_name="health"
    )
    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    kind = models.CharField(max_length=16)
    finished_at = models.DateTimeField()
    tests = models.IntegerField(default=0, help_text="Tests in the report, skipped ones too.")
    passed = models.IntegerField(default=0)
    flaky = models.IntegerField(default=0, help_text="Passed on a retry.")
    healed = models.IntegerField(default=0)
    quarantined = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)
    skipped = models.IntegerField(default=0)
    outcomes = models.JSONField(
        default=list,
        help_text="[file, title, status, reason] per test; the reason of quarantined ones only.",
    )

    class Meta(KeptInRuns.Meta):
        db_table = "run_health"
        indexes = [
            # A repository's newest points: an index scan, however many runs it has.
            models.Index(fields=["repository", "-finished_at"], name="run_health_newest"),
        ]
