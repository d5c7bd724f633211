"""The operator admin of the runs app: runs, artifacts, API tokens, OIDC trust rules,
notifications and the audit trail (one module each)."""

from runs.admin import artifacts, audit, notifications, oidc_rules, runs, tokens  # noqa: F401  (register at autodiscovery)
