"""Repository names (``owner/name``): the one rule, for admin, ``launch_run`` and the API.

GitHub's alphabet: letters, digits, '.', '-' and '_', one '/' between owner and name. GitHub
also reserves '.' and '..' as names; here they would turn ``repos/{full_name}`` API paths into
path traversal. The ``repositories_full_name_valid`` CHECK constraint is a looser last line of
defence for writes that bypass the services (raw SQL).
"""

from __future__ import annotations

import re
from typing import Any

FULL_NAME_INVALID = "use the form owner/name (letters, digits, '.', '-' and '_' only)"
FULL_NAME_DOTS = "owner and name cannot be '.' or '..'"

# Also the API's OpenAPI pattern for ``repo_full_name``.
FULL_NAME_PATTERN = r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"
_FULL_NAME = re.compile(FULL_NAME_PATTERN)


def full_name_problem(value: Any) -> str | None:
    """Why ``value`` is not a repository's ``owner/name``, or None when it is."""
    if not isinstance(value, str) or not _FULL_NAME.fullmatch(value):
        return FULL_NAME_INVALID
    if {".", ".."} & set(value.split("/")):
        return FULL_NAME_DOTS
    return None
