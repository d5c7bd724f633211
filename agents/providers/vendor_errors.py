"""What both vendor SDKs' errors have in common: which statuses are transient, the server's
back-off hint, and keeping API keys out of messages."""

from __future__ import annotations

import email.utils
import time
from typing import Any

# As the SDKs' own retry policies: 408/409/429 and every 5xx are transient, other 4xx final.
RETRYABLE_STATUSES = {408, 409, 429}


def retry_after_seconds(headers: Any) -> float | None:
    """The server's back-off hint: ``retry-after-ms``, or ``retry-after`` in seconds or as an
    HTTP date. None when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def redact(text: str, api_key: str) -> str:
    """Vendors (OpenAI in 401 bodies) sometimes echo the key (whole or masked, e.g. ``sk-ab***wxyz``) in 401 bodies;
    drop the whole key and any word carrying its tail."""
    text = text.replace(api_key, "[redacted]")
    tail = api_key[-4:] if len(api_key) >= 12 else None
    if tail is None:
        return text
    return " ".join("[redacted]" if tail in word else word for word in text.split(" "))


def from_status(vendor: str, status: int, kind: str, text: str, headers: Any, details: dict):
    """A vendor's HTTP error answer as ``LlmProviderError`` (transient) or
    ``LlmProviderRejected`` (final), with the status, type and back-off hint in ``details``."""
    from amtp_site.errors import LlmProviderError, LlmProviderRejected

    details = {**details, "status": status, "error_type": kind}
    retry_after = retry_after_seconds(headers)
    if retry_after is not None:
        details["retry_after"] = retry_after
    message = f"{vendor} {status} {kind}: {text}"
    if status >= 500 or status in RETRYABLE_STATUSES:  # Anthropic's 529 overloaded included
        return LlmProviderError(message, **details)
    return LlmProviderRejected(message, **details)


def transport_error(
    sdk: Any, exc: Exception, *, vendor: str, timeout: float, api_key: str, details: dict
):
    """Errors without an HTTP status (timeout, connection, unreadable 2xx), all transient;
    None for a status error, which :func:`from_status` maps."""
    from amtp_site.errors import LlmProviderError

    if isinstance(exc, sdk.APITimeoutError):
        return LlmProviderError(f"{vendor}: no answer within {timeout:g} s", **details)
    if isinstance(exc, sdk.APIConnectionError):
        cause = type(exc.__cause__).__name__ if exc.__cause__ else "unknown cause"
        return LlmProviderError(f"{vendor}: connection failed ({cause})", **details)
    if not isinstance(exc, sdk.APIStatusError):
        # A 2xx the SDK could not read (strict validation); a fresh attempt may do better.
        text = redact(exc.message, api_key)
        return LlmProviderError(f"{vendor}: unreadable response: {text}", **details)
    return None
