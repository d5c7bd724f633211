"""The operator admin of the runs app: runs, artifacts and the audit trail (one module each)."""

from runs.admin import artifacts, audit, runs  # noqa: F401  (register at autodiscovery)
