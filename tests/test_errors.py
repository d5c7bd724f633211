"""The retry policy's non-retryable list is derived from the error hierarchy."""

from amtp_site import errors
from runs.temporal.client import retry_settings

SPEC_NON_RETRYABLE = {
    "StaleBaseBranch",
    "BranchProtectionViolation",
    "SchemaValidationError",
    "GitHubForbidden",
    "RateLimitExceeded",
}


def test_spec_classes_have_the_spec_retryability():
    assert errors.MalformedLlmOutput.retryable is True
    assert errors.RepoPrLockContended.retryable is True
    for name in SPEC_NON_RETRYABLE | {"GitTreesApi409"}:
        assert getattr(errors, name).retryable is False, name


def test_non_retryable_list_is_derived_and_used_by_the_retry_policy():
    derived = set(errors.non_retryable_error_types())
    assert SPEC_NON_RETRYABLE <= derived
    assert "ConfigurationError" in derived  # a setting to fix: retrying cannot help
    assert "MalformedLlmOutput" not in derived and "RepoPrLockContended" not in derived
    assert set(retry_settings().non_retryable_error_types) == derived
    assert {"VerificationTimedOut", "SandboxUnavailable"} <= derived


def test_stale_base_branch_carries_the_failure_report_fields():
    exc = errors.StaleBaseBranch("main", "b" * 40, "a" * 40)
    assert exc.to_dict() == {
        "error": "StaleBaseBranch",
        "message": exc.message,
        "base_branch": "main",
        "observed_head": "b" * 40,
        "expected_parent": "a" * 40,
    }
    assert "start a new run" in exc.message


def test_an_error_keeps_its_class_through_task_groups_and_cause_chains():
    final = errors.BudgetExceeded("too big; raise AMTP_MAX_INPUT_TOKENS")
    # What the MCP client's task groups make of an error raised inside them.
    group = ExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("inner", [final])])
    assert errors.amtp_error_in(group) is final
    try:
        raise RuntimeError("session closed") from group
    except RuntimeError as wrapper:
        assert errors.amtp_error_in(wrapper) is final
    retried = errors.LlmProviderError("overloaded")
    assert errors.amtp_error_in(ExceptionGroup("both", [retried, final])) is final
    assert errors.amtp_error_in(ExceptionGroup("one", [retried])) is retried
    assert errors.amtp_error_in(ValueError("plain")) is None
    looped = RuntimeError("loop")
    looped.__cause__ = ExceptionGroup("g", [looped])
    assert errors.amtp_error_in(looped) is None


def test_the_activity_wrapper_reports_a_wrapped_final_error_as_itself():
    from temporalio.exceptions import ApplicationError

    from runs.temporal.failures import activity_failure

    wrapped = ExceptionGroup("unhandled errors in a TaskGroup", [errors.BudgetExceeded("big")])
    failure = activity_failure(wrapped)
    assert isinstance(failure, ApplicationError)
    assert failure.type == "BudgetExceeded" and failure.non_retryable
    assert failure.message == "big"


def test_every_error_survives_pickling_with_its_type_and_details():
    """An agent process hands its error to the worker pickled; subclasses whose ``__init__``
    takes other arguments than the message must arrive whole all the same."""
    import pickle

    raised = [
        errors.SchemaValidationError(
            "test_case_generator/output", [{"path": "$.x", "rule": "type", "message": "bad"}]
        ),
        errors.ContractViolation("entry points must be listed", ["$.entry_points[0]"]),
        errors.StaleBaseBranch("main", "b" * 40, "a" * 40),
        errors.BranchProtectionViolation('{"message": "protected"}'),
        errors.MalformedLlmOutput("not JSON", attempt=2),
    ]
    for exc in raised:
        again = pickle.loads(pickle.dumps(exc))
        assert type(again) is type(exc)
        assert again.to_dict() == exc.to_dict() and str(again) == str(exc)
