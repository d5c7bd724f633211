"""Errors of the VerifyTests stage: the generated tests could not be run (not: they failed)."""

from __future__ import annotations

from amtp_site.errors import NonRetryableError

# TargetAnswersErrors' message, raised by ExploreApp (every page) and VerifyTests (every test).
ERRORS_ONLY = (
    "target answers errors only: {what} answered a server error "
    "({statuses}); the app at {url} is up but failing: fix or redeploy it (its log says why), or "
    "correct the URL (repository preview URL or the run's target_url), then run again"
)


class VerificationError(NonRetryableError):
    """The generated tests could not be run (not: they ran and failed). The message says what
    to do; retrying the same run would meet the same problem."""


class TargetUnreachable(VerificationError):
    """The run's target URL did not answer, or the network rule refuses it."""


class TargetAnswersErrors(VerificationError):
    """The target answers, but only server errors (5xx), and every test failed: the app is
    down, not the tests wrong. Final like TargetUnreachable: each attempt of the stage re-runs
    the whole suite in the browser, and an app that fails every page is fixed by a person
    (the run is started again then), rarely within Temporal's retry window."""


class VerifierNotInstalled(VerificationError):
    """Node, the pinned ``@playwright/test`` package or the Chromium browser is missing."""


class VerificationTimedOut(VerificationError):
    """The tests did not finish within ``AMTP_VERIFY_TIMEOUT_S``."""


class SandboxUnavailable(VerificationError):
    """The box for generated code (bubblewrap) cannot start here; nothing was executed."""


class TestDataFailed(VerificationError):
    """The repository's test data set-up failed (its URL answered an error, its command
    failed, or either timed out): the environment is not ready, the tests are not to blame."""

    __test__ = False  # not a pytest class


class LoginFailed(VerificationError):
    """The repository's login recipe did not log in ("login failed at <path>: <what was
    seen>"): wrong credentials, labels or button name, or a "logged in when" that never holds."""


class ReportNotTrustworthy(VerificationError):
    """What came back from the box is not a report of the listed tests: a test not in the
    specs, a listed test missing, a malformed field. The specs are hostile input; a report
    they may have forged never counts as passed."""
