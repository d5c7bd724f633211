"""Serialisable inputs of TestGenerationWorkflow and the activity names it schedules.

Kept free of Django so the workflow sandbox can import it (passed through).
"""

from __future__ import annotations

from dataclasses import dataclass, field

WORKFLOW_NAME = "TestGenerationWorkflow"
APPROVAL_SIGNAL = "approval_decided"

# Activities, by their stable names (the workflow refers to them by name only).
MARK_RUNNING = "MarkRunRunning"
ACQUIRE_SLOT = "RateLimitCheckAndIncrRepoConcurrency"
RELEASE_SLOT = "DecrRepoConcurrency"
CRAWL_REPO = "CrawlRepo"
GENERATE_TEST_CASES = "GenerateTestCases"
GENERATE_TEST_CODE = "GenerateTestCode"
VERIFY_TESTS = "VerifyTests"
CREATE_PULL_REQUEST = "CreatePullRequest"
REQUEST_APPROVAL = "RequestApproval"
EXPIRE_APPROVAL = "ExpireApproval"
MARK_PASSED = "MarkRunPassed"
MARK_FAILED = "MarkRunFailed"
MARK_CANCELLED = "MarkRunCancelled"
DISCARD_PULL_REQUEST = "DiscardPullRequest"
# VerifyTests when there is nothing to run (no target URL): closes the stage as skipped with
# the same report, without an agent process. Answers whether it did.
SKIP_VERIFICATION = "SkipVerificationWithoutTarget"
# What an activity's answer (a dict, where it used to be the artifact id alone) may say it
# did already, so the workflow has no step of its own to take: GenerateTestCode closed
# VerifyTests as skipped (nothing to run), CreatePullRequest marked the run passed and gave its
# slot back. An answer without it (a recorded history, a worker of an earlier version) gets
# that step as before; so no patch marker is needed, the history itself says which it was.
VERIFICATION_SKIPPED = "verification_skipped"
RUN_PASSED = "run_passed"
# Runs started before a cancel stopped CreatePullRequest replay without it (workflow.patched).
CANCEL_PATCH = "cancel-stops-pull-request"
# Runs started before a run waited for its slot (instead of failing) replay without it.
SLOT_WAIT_PATCH = "wait-for-a-slot"
# Bookkeeping runs as local activities (no task-queue round trip, no workflow task of its
# own) and VerifyTests without a target URL is closed without an agent process. Runs started
# before replay with regular bookkeeping activities and a VerifyTests activity.
LOCAL_BOOKKEEPING_PATCH = "local-bookkeeping"
# A run started since CURRENT_PATCH starts (mark running, take the slot) and, when it passed,
# ends (mark passed, give the slot back) with one local activity each, not two.
START_RUN = "MarkRunRunningAndTakeSlot"
FINISH_RUN = "MarkRunPassedAndReleaseSlot"
# Every change above (and BOOKKEEPING_RETRY_PATCH, VERIFY_PATCH) at once, plus the one-step
# start and finish: a run started since records this one marker instead of one per change;
# older runs replay theirs. A change made after it needs a patch of its own, asked with
# workflow.patched (not the workflow's _patched).
CURRENT_PATCH = "changes-to-2026-11-24"

# The stages in the order they run: (activity name, stage name). The agent activities and a
# run's ``stages`` rows (Stage.ORDER) are built from this table. Both names are stored
# (recorded histories, idempotency keys, the database): never rename one.
STAGES = (
    (CRAWL_REPO, "crawl_repo"),
    (GENERATE_TEST_CASES, "generate_test_cases"),
    (GENERATE_TEST_CODE, "generate_test_code"),
    (VERIFY_TESTS, "verify_tests"),
    (CREATE_PULL_REQUEST, "create_pull_request"),
)
STAGE_OF = dict(STAGES)  # activity name -> stage name
AGENT_STAGES = (CRAWL_REPO, GENERATE_TEST_CASES, GENERATE_TEST_CODE)  # the workflow's first loop
# Workflows started before VerifyTests existed replay without it (workflow.patched).
VERIFY_PATCH = "verify-tests"


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
