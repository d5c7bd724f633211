"""The base of one hierarchy of typed errors, with the spec's names, and its retryable /
non-retryable split; each app keeps its own errors (``<app>/errors.py``, :data:`ERROR_MODULES`).

Temporal matches ``non_retryable_error_types`` by the exception's *class name*, not by
ancestry, so :func:`non_retryable_error_types` walks this hierarchy and lists every class
whose ``retryable`` is False. The retry policy is derived from code, never typed twice.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, ClassVar

# Where the layers above keep their errors: imported by name (they sit above this module)
# before the hierarchy is walked, so the list is complete in any process, whatever it has
# imported so far.
ERROR_MODULES = (
    "schemas.errors",
    "repositories.errors",
    "agents.errors",
    "runs.errors",
    "verification.boot.errors",
    "verification.errors",
    "verification.boot.failures",
    "approvals.errors",
)


class AmtpError(Exception):
    """Base of every AMTP error. ``retryable`` tells Temporal whether to try again."""

    retryable: ClassVar[bool] = True

    def __init__(self, message: str = "", **details: Any) -> None:
        super().__init__(message or self.__class__.__name__)
        self.message = message or self.__class__.__name__
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": type(self).__name__, "message": self.message, **self.details}

    def __reduce__(self):
        # Rebuilt without calling __init__ (subclasses take other arguments): an error raised
        # in an agent process reaches the worker whole, with its type and details.
        return _unpickle, (type(self), self.args, self.__dict__)


def _unpickle(cls: type[AmtpError], args: tuple, state: dict) -> AmtpError:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class RetryableError(AmtpError):
    retryable = True


class NonRetryableError(AmtpError):
    retryable = False


class ConfigurationError(NonRetryableError):
    """A setting is missing or wrong; no retry can fix it. The message says what to set."""


class RepoPrLockContended(RetryableError):
    """Another run holds the repository's pr_lock (amtp_site.valkey); back off and retry."""


def amtp_error_in(exc: BaseException) -> AmtpError | None:
    """The AmtpError an exception is or wraps: inside exception groups (task groups, e.g. the
    MCP client's) and ``__cause__`` chains. A final (non-retryable) one wins over a retryable
    one, so a wrapper never turns a final error into a retry; None if there is none."""
    found: list[AmtpError] = []
    pending, seen = [exc], set()
    while pending:
        current = pending.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, AmtpError):
            found.append(current)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.append(current.__cause__)
    return next((e for e in found if not e.retryable), found[0] if found else None)


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


def non_retryable_error_types() -> list[str]:
    """Every error class name Temporal must not retry, derived from the hierarchy."""
    return list(_non_retryable())


@functools.cache  # once per process: a run's start asks twice, and the classes do not change
def _non_retryable() -> tuple[str, ...]:
    for module in ERROR_MODULES:
        importlib.import_module(module)
    return tuple(sorted({c.__name__ for c in _subclasses(AmtpError) if not c.retryable}))
