"""What the two SDK-backed providers (anthropic, openai) do alike: one SDK client per provider
instance built from the settings with the SDK's retries off, and the translation of SDK
exceptions into our hierarchy with API keys kept out of every message.

One SDK client per instance, and the runner makes one provider per agent invocation, so no
connection pool, header or conversation state outlives a session (spec 001). The SDK's own
retries are off: Temporal owns retries, and a hidden SDK retry would blur the activity's
timing and attempt count.
"""

from __future__ import annotations

import email.utils
import time
from abc import abstractmethod
from types import ModuleType
from typing import Any, ClassVar
from urllib.parse import urlsplit

from agents.providers.base import Completion, Provider, ProviderOptions, ToolSpec
from amtp_site.errors import ConfigurationError, LlmProviderError, LlmProviderRejected

# As the SDKs' own retry policies: 408/409/429 and every 5xx are transient, other 4xx final.
RETRYABLE_STATUSES = {408, 409, 429}
BAD_BASE_URL = (
    "{setting}={url!r} is not an http(s) URL; set it to one such as {example}, "
    "or leave it empty for the vendor's own API"
)


class VendorProvider(Provider):
    """A provider behind an official vendor SDK. Subclasses name the SDK and the settings,
    build the request, send it and read the answer; this class does the rest."""

    sdk: ClassVar[ModuleType]  # the SDK module: its client class and exception types
    client_class: ClassVar[type]
    settings_prefix: ClassVar[str]  # "ANTHROPIC" → ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
    example_base_url: ClassVar[str]
    missing_key: ClassVar[str]  # the ConfigurationError message when no key is set

    def __init__(
        self,
        options: ProviderOptions,
        *,
        agent: str,
        api_key: str,
        base_url: str | None = None,
    ) -> None:
        super().__init__(options, agent=agent)
        self._check_base_url(base_url)
        api_key = self._client_key(api_key, base_url)
        self._api_key = api_key  # kept only to scrub it from error messages
        self._client = self.client_class(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=options.timeout_seconds,
        )

    def _check_base_url(self, base_url: str | None) -> None:
        # The SDKs take any string and fail each call with a "connection failed" that Temporal
        # would retry; a URL that cannot work is a setting to fix, said once.
        if base_url is None:
            return
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(
                BAD_BASE_URL.format(
                    setting=f"{self.settings_prefix}_BASE_URL",
                    url=base_url,
                    example=self.example_base_url,
                ),
                vendor=self.name,
            )

    def _client_key(self, api_key: str, base_url: str | None) -> str:
        """The key the SDK client gets; without one the provider cannot start."""
        if not api_key:
            raise ConfigurationError(self.missing_key, vendor=self.name)
        return api_key

    def complete(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> Completion:
        request = self.build_request(system=system, messages=messages, tools=tools)
        try:
            answer = self._send(request)
        except self.sdk.APIError as exc:
            # `from None`: the SDK exception carries the request (auth header included) and a
            # body dump; Temporal serialises causes, so only our scrubbed summary travels on.
            raise self._translate(exc) from None
        return self._completion(answer, tools)

    @abstractmethod
    def build_request(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> dict[str, Any]:
        """The keyword arguments of the SDK call (public so tests can read them)."""

    @abstractmethod
    def _send(self, request: dict[str, Any]) -> Any:
        """Make the SDK call."""

    @abstractmethod
    def _completion(self, answer: Any, tools: list[ToolSpec]) -> Completion:
        """The SDK's answer in the neutral shape."""

    @abstractmethod
    def _status_error(self, exc: Any) -> tuple[str, str, dict[str, Any]]:
        """(error type, vendor message, extra details) of an SDK ``APIStatusError``."""

    def _translate(self, exc: Exception) -> LlmProviderError | LlmProviderRejected:
        details: dict[str, Any] = {"vendor": self.name, "model": self.options.model}
        failed = self._transport_error(exc, details)
        if failed is not None:
            return failed
        kind, text, extra = self._status_error(exc)
        details = {**details, "request_id": exc.request_id, **extra}
        text = redact(text, self._api_key)
        return from_status(self.name, exc.status_code, kind, text, exc.response.headers, details)

    def _transport_error(self, exc: Any, details: dict) -> LlmProviderError | None:
        """Errors without an HTTP status (timeout, connection, unreadable 2xx), all transient;
        None for a status error, which :func:`from_status` maps."""
        vendor = self.name
        if isinstance(exc, self.sdk.APITimeoutError):
            timeout = self.options.timeout_seconds
            return LlmProviderError(f"{vendor}: no answer within {timeout:g} s", **details)
        if isinstance(exc, self.sdk.APIConnectionError):
            cause = type(exc.__cause__).__name__ if exc.__cause__ else "unknown cause"
            return LlmProviderError(f"{vendor}: connection failed ({cause})", **details)
        if not isinstance(exc, self.sdk.APIStatusError):
            # A 2xx the SDK could not read (strict validation); a fresh attempt may do better.
            text = redact(exc.message, self._api_key)
            return LlmProviderError(f"{vendor}: unreadable response: {text}", **details)
        return None


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
    """Vendors (OpenAI in 401 bodies) sometimes echo the key, whole or masked (e.g.
    ``sk-ab***wxyz``); drop the whole key and any word carrying its tail."""
    text = text.replace(api_key, "[redacted]")
    tail = api_key[-4:] if len(api_key) >= 12 else None
    if tail is None:
        return text
    return " ".join("[redacted]" if tail in word else word for word in text.split(" "))


def from_status(vendor: str, status: int, kind: str, text: str, headers: Any, details: dict):
    """A vendor's HTTP error answer as ``LlmProviderError`` (transient) or
    ``LlmProviderRejected`` (final), with the status, type and back-off hint in ``details``."""
    details = {**details, "status": status, "error_type": kind}
    retry_after = retry_after_seconds(headers)
    if retry_after is not None:
        details["retry_after"] = retry_after
    message = f"{vendor} {status} {kind}: {text}"
    if status >= 500 or status in RETRYABLE_STATUSES:  # Anthropic's 529 overloaded included
        return LlmProviderError(message, **details)
    return LlmProviderRejected(message, **details)


def body_text(body: object) -> str:
    """A non-JSON error body (a proxy's HTML page, say), kept short."""
    return body[:300] if isinstance(body, str) and body else "no error message"
