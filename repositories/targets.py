"""Target URLs (a repository's ``preview_url``, a run's ``target_url``): the one rule, for the
admin form, the launch form, ``launch_run`` and the API.

The generated tests run against this URL with ``BASE_URL`` set to it, so it must be an absolute
http(s) URL with a host. Credentials in it are refused: the URL is shown in the admin, the API,
the verification report and the pull request body.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

MAX_TARGET_URL_LENGTH = 500
TARGET_URL_INVALID = (
    "give an absolute http:// or https:// URL with a host, e.g. https://preview.example.com"
)
TARGET_URL_CREDENTIALS = "leave user names and passwords out of the URL"
TARGET_URL_TOO_LONG = f"at most {MAX_TARGET_URL_LENGTH} characters"
TARGET_URL_PATTERN = r"^https?://[^\s/?#@]+(/[^\s#]*)?$"


def target_url_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a target URL, or None when it can ("" means none: allowed)."""
    if value == "":
        return None
    if not isinstance(value, str):
        return TARGET_URL_INVALID
    if len(value) > MAX_TARGET_URL_LENGTH:
        return TARGET_URL_TOO_LONG
    if any(ord(c) <= 32 or ord(c) == 127 for c in value):
        return TARGET_URL_INVALID
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises on a port that is not a number)
    except ValueError:
        return TARGET_URL_INVALID
    if parts.username is not None or parts.password is not None:
        return TARGET_URL_CREDENTIALS
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        return TARGET_URL_INVALID
    return None
