"""The operator admin of the runs app: runs, artifacts, API tokens and the audit trail (one
module each)."""

from runs.admin import artifacts, audit, runs, tokens  # noqa: F401  (register at autodiscovery)
