"""Serialisable inputs of TestGenerationWorkflow and the activity names it schedules.

Kept free of Django so the workflow sandbox can import it (passed through).
"""

from __future__ import annotations

from dataclasses import dataclass, field

WORKFLOW_NAME = "TestGenerationWorkflow"
APPROVAL_SIGNAL = "approval_decided"

# Activities, by their stable names (the workflow refers to them by name only).
START_RUN = "MarkRunRunningAndTakeSlot"  # the run marked running, its slot taken
END_RUN = "EndRun"  # the run marked as the workflow decided (RunEnd), its slot given back
CRAWL_REPO = "CrawlRepo"
GENERATE_TEST_CASES = "GenerateTestCases"
GENERATE_TEST_CODE = "GenerateTestCode"
VERIFY_TESTS = "VerifyTests"
CREATE_PULL_REQUEST = "CreatePullRequest"
REQUEST_APPROVAL = "RequestApproval"
EXPIRE_APPROVAL = "ExpireApproval"
DISCARD_PULL_REQUEST = "DiscardPullRequest"
# The name under which a run's admission to its repository's rate window is recorded in
# ``activity_idempotency`` (runs.slots; part of stored keys: never rename it).
ACQUIRE_SLOT = "RateLimitCheckAndIncrRepoConcurrency"

# The stages in the order they run: (activity name, stage name). A run's ``stages`` rows
# (Stage.ORDER) are built from this table. Both names are stored
# (recorded histories, idempotency keys, the database): never rename one.
STAGES = (
    (CRAWL_REPO, "crawl_repo"),
    (GENERATE_TEST_CASES, "generate_test_cases"),
    (GENERATE_TEST_CODE, "generate_test_code"),
    (VERIFY_TESTS, "verify_tests"),
    (CREATE_PULL_REQUEST, "create_pull_request"),
)
STAGE_OF = dict(STAGES)  # activity name -> stage name
# The stages whose agent runs in a process of the worker's pool (AgentPoolGate admits them).
AGENT_STAGES = (CRAWL_REPO, GENERATE_TEST_CASES, GENERATE_TEST_CODE)

# How a run ends (runs.models.RunStatus values), as its workflow decides it.
PASSED, FAILED, CANCELLED = "passed", "failed", "cancelled"


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
class ApprovalRequest:
    run_id: str
    approver: str  # "branch-protection" or "policy"
    comment: str


@dataclass
class ApprovalDecision:
    approval_id: str
    decision: str  # "approved" or "rejected"
    decided_by: str = ""
    comment: str = ""


@dataclass
class Failure:
    run_id: str
    stage: str
    error_type: str
    message: str
    details: dict = field(default_factory=dict)


@dataclass
class RunEnd:
    """EndRun's input: how the workflow decided the run ends (PASSED, FAILED with
    ``failure``, CANCELLED)."""

    run_id: str
    status: str
    failure: Failure | None = None
