"""The retry policy's non-retryable list is derived from the error hierarchy."""

import importlib
import json
import subprocess
import sys

from agents.errors import BudgetExceeded, LlmProviderError, MalformedLlmOutput
from amtp_site import errors
from repositories.errors import BranchProtectionViolation, StaleBaseBranch
from runs.temporal.client import retry_settings
from schemas.errors import ContractViolation, SchemaValidationError

SPEC_NON_RETRYABLE = {
    "StaleBaseBranch",
    "BranchProtectionViolation",
    "SchemaValidationError",
    "GitHubForbidden",
    "RateLimitExceeded",
}


def error_class(name: str) -> type:
    """The class of that name, in whichever app's errors module it lives."""
    modules = [errors, *map(importlib.import_module, errors.ERROR_MODULES)]
    return next(getattr(m, name) for m in modules if hasattr(m, name))


def test_spec_classes_have_the_spec_retryability():
    assert MalformedLlmOutput.retryable is True
    assert errors.RepoPrLockContended.retryable is True
    for name in SPEC_NON_RETRYABLE | {"GitTreesApi409"}:
        assert error_class(name).retryable is False, name


def test_non_retryable_list_is_derived_and_used_by_the_retry_policy():
    derived = set(errors.non_retryable_error_types())
    assert SPEC_NON_RETRYABLE <= derived
    assert "ConfigurationError" in derived  # a setting to fix: retrying cannot help
    assert "MalformedLlmOutput" not in derived and "RepoPrLockContended" not in derived
    assert set(retry_settings().non_retryable_error_types) == derived
    assert {"VerificationTimedOut", "SandboxUnavailable"} <= derived


def test_stale_base_branch_carries_the_failure_report_fields():
    exc = StaleBaseBranch("main", "b" * 40, "a" * 40)
    assert exc.to_dict() == {
        "error": "StaleBaseBranch",
        "message": exc.message,
        "base_branch": "main",
        "observed_head": "b" * 40,
        "expected_parent": "a" * 40,
    }
    assert "start a new run" in exc.message


def test_an_error_keeps_its_class_through_task_groups_and_cause_chains():
    final = BudgetExceeded("too big; raise AMTP_MAX_INPUT_TOKENS")
    # What the MCP client's task groups make of an error raised inside them.
    group = ExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("inner", [final])])
    assert errors.amtp_error_in(group) is final
    try:
        raise RuntimeError("session closed") from group
    except RuntimeError as wrapper:
        assert errors.amtp_error_in(wrapper) is final
    retried = LlmProviderError("overloaded")
    assert errors.amtp_error_in(ExceptionGroup("both", [retried, final])) is final
    assert errors.amtp_error_in(ExceptionGroup("one", [retried])) is retried
    assert errors.amtp_error_in(ValueError("plain")) is None
    looped = RuntimeError("loop")
    looped.__cause__ = ExceptionGroup("g", [looped])
    assert errors.amtp_error_in(looped) is None


def test_the_activity_wrapper_reports_a_wrapped_final_error_as_itself():
    from temporalio.exceptions import ApplicationError

    from runs.temporal.failures import activity_failure

    wrapped = ExceptionGroup("unhandled errors in a TaskGroup", [BudgetExceeded("big")])
    failure = activity_failure(wrapped)
    assert isinstance(failure, ApplicationError)
    assert failure.type == "BudgetExceeded" and failure.non_retryable
    assert failure.message == "big"


def test_every_error_survives_pickling_with_its_type_and_details():
    """An agent process hands its error to the worker pickled; subclasses whose ``__init__``
    takes other arguments than the message must arrive whole all the same."""
    import pickle

    raised = [
        SchemaValidationError(
            "test_case_generator/output", [{"path": "$.x", "rule": "type", "message": "bad"}]
        ),
        ContractViolation("entry points must be listed", ["$.entry_points[0]"]),
        StaleBaseBranch("main", "b" * 40, "a" * 40),
        BranchProtectionViolation('{"message": "protected"}'),
        MalformedLlmOutput("not JSON", attempt=2),
    ]
    for exc in raised:
        again = pickle.loads(pickle.dumps(exc))
        assert type(again) is type(exc)
        assert again.to_dict() == exc.to_dict() and str(again) == str(exc)


# A process that has imported no app's errors yet (a web process starting a run, say).
LIST_IN_A_FRESH_PROCESS = """
import json
from amtp_site.errors import non_retryable_error_types
print(json.dumps(non_retryable_error_types()))
"""


def test_the_list_holds_every_apps_errors_in_a_process_that_imported_none():
    answer = subprocess.run(
        [sys.executable, "-c", LIST_IN_A_FRESH_PROCESS], capture_output=True, text=True, check=True
    )
    listed = set(json.loads(answer.stdout))
    assert listed == set(errors.non_retryable_error_types())
    for name in ("SchemaValidationError", "LlmRefusal", "StaleBaseBranch", "RunNotActive"):
        assert name in listed, name
    assert "ApprovalAlreadyDecided" in listed and "TargetUnreachable" in listed
