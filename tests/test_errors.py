"""The retry policy's non-retryable list is derived from the error hierarchy."""

from django.conf import settings

from amtp_site import errors

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
    assert set(settings.AMTP_RETRY_POLICY["non_retryable_error_types"]) == derived


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
