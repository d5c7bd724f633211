"""The stage vocabulary: the workflow's name, its signal, the activity names it schedules, the
stages in the order they run, how a run ends, and the plain values passed between the workflow
and the domain.

Django-free and Temporal-free, so the domain (models, transitions, slots, services) and the
Temporal adapter (``runs/temporal/``, whose workflow sandbox passes this module through) share
one vocabulary without the domain importing the adapter. Every name here is stored (recorded
histories, idempotency keys, the database): never rename one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

WORKFLOW_NAME = "TestGenerationWorkflow"
# Maintenance and check runs: the tests a repository already holds, re-verified (a
# maintenance run heals them and opens a PR; a check run reports them on a pull request).
MAINTENANCE_WORKFLOW = "MaintenanceWorkflow"
CHECK_WORKFLOW = "CheckWorkflow"
APPROVAL_SIGNAL = "approval_decided"

# Activities, by their stable names (the workflow refers to them by name only).
START_RUN = "MarkRunRunningAndTakeSlot"  # the run marked running, its slot taken
END_RUN = "EndRun"  # the run marked as the workflow decided (RunEnd), its slot given back
CRAWL_REPO = "CrawlRepo"
BOOT_APP = "BootApp"  # the run's own app started from its recipe (no target URL, no preview)
EXPLORE_APP = "ExploreApp"
GENERATE_TEST_CASES = "GenerateTestCases"
GENERATE_TEST_CODE = "GenerateTestCode"
VERIFY_TESTS = "VerifyTests"
CREATE_PULL_REQUEST = "CreatePullRequest"
REQUEST_APPROVAL = "RequestApproval"
EXPIRE_APPROVAL = "ExpireApproval"
DISCARD_PULL_REQUEST = "DiscardPullRequest"
# MaintenanceWorkflow's and CheckWorkflow's: the repository's tests re-verified (healed and quarantined in a
# maintenance run, only reported in a check run), then its PR or its GitHub check run.
REVERIFY_TESTS = "ReverifyTests"
OPEN_MAINTENANCE_PR = "OpenMaintenancePullRequest"
REPORT_CHECK_RUN = "ReportCheckRun"
# CheckWorkflow's, behind the patch CHECK_RUN_HOLD_PATCH: a fork's check run shown on the pull
# request while its approval is pending, then the approval's outcome (CheckRunHold). No stage of
# its own: it writes only the GitHub check run, which ReportCheckRun then completes.
REPORT_CHECK_RUN_HOLD = "ReportCheckRunHold"
CHECK_RUN_HOLD_PATCH = "check-run-reports-hold"
# A check run held before that patch (its hold not shown) shows its decision when the decision
# comes after the upgrade: the patch is asked at the decision, not at the hold.
CHECK_RUN_DECISION_PATCH = "check-run-reports-decision"
# The name under which a run's admission to its repository's rate window is recorded in
# ``activity_idempotency`` (runs.slots; part of stored keys: never rename it).
ACQUIRE_SLOT = "RateLimitCheckAndIncrRepoConcurrency"

# The stages in the order they run: (activity name, stage name). A run's ``stages`` rows
# (Stage.ORDER) are built from this table.
STAGES = (
    (CRAWL_REPO, "crawl_repo"),
    (BOOT_APP, "boot_app"),
    (EXPLORE_APP, "explore_app"),
    (GENERATE_TEST_CASES, "generate_test_cases"),
    (GENERATE_TEST_CODE, "generate_test_code"),
    (VERIFY_TESTS, "verify_tests"),
    (CREATE_PULL_REQUEST, "create_pull_request"),
)
STAGE_OF = {  # activity name -> stage name
    **dict(STAGES),
    REVERIFY_TESTS: "verify_tests",
    OPEN_MAINTENANCE_PR: "create_pull_request",
    REPORT_CHECK_RUN: "report_check",
}
# A run's kind (runs.models.RunKind values) -> its stages, in order.
GENERATION, MAINTENANCE, CHECK = "generation", "maintenance", "check"
KIND_STAGES = {
    GENERATION: tuple(stage for _, stage in STAGES),
    MAINTENANCE: ("verify_tests", "create_pull_request"),
    CHECK: ("verify_tests", "report_check"),
}
# The stages whose agent runs in a process of the worker's pool (AgentPoolGate admits them).
AGENT_STAGES = (CRAWL_REPO, GENERATE_TEST_CASES, GENERATE_TEST_CODE)

# How a run ends (runs.models.RunStatus values), as its workflow decides it.
PASSED, FAILED, CANCELLED = "passed", "failed", "cancelled"


@dataclass
class ApprovalRequest:
    run_id: str
    approver: str  # "branch-protection" or "policy"
    comment: str
    stage: str  # the stage held (awaiting_approval until decided), one of the run's


@dataclass
class ApprovalDecision:
    approval_id: str
    decision: str  # "approved" or "rejected"
    decided_by: str = ""
    comment: str = ""


# A held check run's states, as ReportCheckRunHold shows them on GitHub.
HOLD_HELD, HOLD_APPROVED, HOLD_REJECTED, HOLD_EXPIRED = "held", "approved", "rejected", "expired"


@dataclass
class CheckRunHold:
    run_id: str
    state: str  # HOLD_HELD, HOLD_APPROVED, HOLD_REJECTED or HOLD_EXPIRED
    # Who approved (approved); the run's failure message (rejected, expired).
    message: str = ""


@dataclass
class Failure:
    run_id: str
    stage: str
    error_type: str
    message: str
    details: dict = field(default_factory=dict)
