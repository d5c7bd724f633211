"""The admin of API access: tokens and OIDC trust rules."""

from access.admin import oidc_rules, tokens  # noqa: F401  (register at autodiscovery)
