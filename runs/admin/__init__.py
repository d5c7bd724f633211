"""The operator admin of the runs app: runs, artifacts and API tokens (one module each)."""

from runs.admin import artifacts, runs, tokens  # noqa: F401  (register at autodiscovery)
