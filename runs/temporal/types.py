"""Serialisable inputs and answers of the run workflows (their parameters, retry settings,
CrawlRepo's and GenerateTestCode's answers, EndRun's input); the names it schedules come from the stage
vocabulary, :mod:`runs.stages`.

Kept free of Django so the workflow sandbox can import it (passed through).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The stage vocabulary (runs/stages.py), here too so workflow code reads it as ``t.*``.
from runs.stages import (  # noqa: F401
    ACQUIRE_SLOT,
    AGENT_STAGES,
    APPROVAL_SIGNAL,
    BOOT_APP,
    CANCELLED,
    CHECK,
    CHECK_RUN_DECISION_PATCH,
    CHECK_RUN_HOLD_PATCH,
    CHECK_WORKFLOW,
    CRAWL_REPO,
    CREATE_PULL_REQUEST,
    DISCARD_PULL_REQUEST,
    END_RUN,
    EXPIRE_APPROVAL,
    EXPLORE_APP,
    FAILED,
    GENERATE_TEST_CASES,
    GENERATE_TEST_CODE,
    HOLD_APPROVED,
    HOLD_EXPIRED,
    HOLD_HELD,
    HOLD_REJECTED,
    MAINTENANCE,
    MAINTENANCE_WORKFLOW,
    OPEN_MAINTENANCE_PR,
    PASSED,
    REPORT_CHECK_RUN,
    REPORT_CHECK_RUN_HOLD,
    REQUEST_APPROVAL,
    REVERIFY_TESTS,
    STAGE_OF,
    STAGES,
    START_RUN,
    VERIFY_TESTS,
    WORKFLOW_NAME,
    ApprovalDecision,
    ApprovalRequest,
    CheckRunHold,
    Failure,
)


@dataclass
class RetrySettings:
    """Spec 003: 2 s, ×2, 30 s, 20 attempts, the non-retryable list derived from errors.py.
    ``maximum_attempts=0`` is Temporal's "no cap" (the bookkeeping activities')."""

    initial_interval_s: float = 2.0
    backoff_coefficient: float = 2.0
    maximum_interval_s: float = 30.0
    maximum_attempts: int = 20
    non_retryable_error_types: list[str] = field(default_factory=list)


@dataclass
class RepoMap:
    """CrawlRepo's answer: its artifact, and whether ExploreApp was closed as skipped with it
    (nothing to explore: no target URL, or a mobile app)."""

    artifact_id: str
    exploration_skipped: bool
    # Whether BootApp was closed as skipped (the run has a target, a mobile app). True by
    # default: histories recorded before BootApp existed replay without it.
    boot_skipped: bool = True


@dataclass
class TestCode:
    """GenerateTestCode's answer: its artifact, and whether VerifyTests was closed as skipped
    with it (nothing to run: web tests without a target URL)."""

    __test__ = False  # not a pytest test class

    artifact_id: str
    verification_skipped: bool


@dataclass
class WorkflowParams:
    run_id: str
    require_approval: bool = False
    retry: RetrySettings = field(default_factory=RetrySettings)
    # The activities that only write the run's own state (idempotent compare-and-swaps):
    # the same backoff without an attempt cap, so an outage of any length delays them only.
    bookkeeping_retry: RetrySettings = field(
        default_factory=lambda: RetrySettings(maximum_attempts=0)
    )
    agent_timeout_s: float = 900.0
    # Agent processes heartbeat; a worker that dies is noticed after this, not agent_timeout_s.
    heartbeat_timeout_s: float = 60.0
    bookkeeping_timeout_s: float = 60.0
    approval_timeout_s: float = 7 * 24 * 3600.0
    # How long a run waits for a concurrency slot (retrying at the policy's longest interval).
    slot_wait_s: float = 24 * 3600.0


@dataclass
class Reverified:
    """ReverifyTests' answer: its report ("" when there were no tests) and whether a
    maintenance pull request is to be opened (a file was healed or quarantined)."""

    artifact_id: str
    changed: bool


@dataclass
class RunEnd:
    """EndRun's input: how the workflow decided the run ends (PASSED, FAILED with
    ``failure``, CANCELLED)."""

    run_id: str
    status: str
    failure: Failure | None = None


@dataclass
class ScheduledStart:
    """StartScheduledMaintenance's input: the repository and the firing's key."""

    repository_id: int
    key: str
