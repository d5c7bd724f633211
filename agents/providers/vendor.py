"""What the two SDK-backed providers (anthropic, openai) do alike: one SDK client per provider
instance built from the settings with the SDK's retries off, and the translation of SDK
exceptions into our hierarchy with API keys kept out of every message.

One SDK client per instance, and the runner makes one provider per agent invocation, so no
connection pool, header or conversation state outlives a session (each agent
invocation is memoryless). The SDK's own
retries are off: Temporal owns retries, and a hidden SDK retry would blur the activity's
timing and attempt count. What the SDKs' retry logic knows we apply ourselves: the server's
``x-should-retry`` header decides when present, and 429s that a retry cannot clear (spend
limits, quota) are final.

An answer that did not end normally is a typed, final error naming what to change: cut off
at the output limit, refused, filtered, or out of context window. The same request would end
the same way, so Temporal must not repeat it.
"""

from __future__ import annotations

import email.utils
import time
from abc import abstractmethod
from types import ModuleType
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx2

from agents.errors import (
    LlmContentFiltered,
    LlmContextOverflow,
    LlmOutputTruncated,
    LlmProviderError,
    LlmProviderRejected,
    LlmQuotaExhausted,
    LlmRefusal,
    LlmStreamInterrupted,
)
from agents.providers.base import Completion, Provider, ProviderOptions, ToolSpec
from amtp_site.errors import ConfigurationError

# As the SDKs' own retry policies: 408/409/429 and every 5xx are transient, other 4xx final.
RETRYABLE_STATUSES = {408, 409, 429}
# Errors sent inside a stream that began with HTTP 200 carry no status of their own, so their
# `error.type` decides (Anthropic's errors page: api_error is its 500, overloaded_error its
# 529, rate_limit_error its 429, timeout_error its 504; every other type is a 4xx).
RETRYABLE_STREAM_TYPES = {"api_error", "overloaded_error", "rate_limit_error", "timeout_error"}
STREAM_CUT = (
    "{vendor} {model}: the answer's stream was cut after it began ({error}: {detail}); a new "
    "attempt starts a fresh stream"
)
STREAM_STALLED = (
    "{vendor} {model}: the answer's stream went silent (no event, not even a ping) for "
    "{timeout:g} s (AMTP_LLM_TIMEOUT_S); a new attempt starts a fresh stream"
)
# Error codes of limits no retry clears. Anthropic: `error.details.error_code` of its spend-limit
# 429s (anthropic/types/shared/*spend_limit_reached_error.py); OpenAI: `error.code` (and the type
# insufficient_quota) of billing 429s (help.openai.com/en/articles/5955604).
QUOTA_CODES = {
    "enforced_spend_limit_reached",
    "contract_spend_limit_reached",
    "linked_organization_spend_limit_reached",
    "insufficient_quota",
    "credit_balance_exhausted",
    "organization_spend_limit_exceeded",
    "project_spend_limit_exceeded",
    "organization_usage_limit_exceeded",
}
# A 400 when the spend limit set in Anthropic's console is reached (platform.claude.com errors).
QUOTA_TEXT = "reached your specified"
QUOTA_HINT = "; retrying cannot help: raise the spend limit or add credit in the vendor's console"
# Context-window overflows as each server words them: Anthropic "prompt is too long: N tokens >
# M maximum", OpenAI code context_length_exceeded ("This model's maximum context length is"; vLLM
# uses the same words), LM Studio "greater than the context length".
CONTEXT_CODES = {"context_length_exceeded"}
CONTEXT_TEXTS = ("prompt is too long", "maximum context length", "greater than the context length")
CONTEXT_HINT = (
    "; use a shallower depth level, lower AMTP_MAX_INPUT_TOKENS below the model's window, or "
    "give the model a larger window (Ollama: num_ctx / OLLAMA_CONTEXT_LENGTH; LM Studio: the "
    "model's context length; vLLM: --max-model-len)"
)
# Answers that ended early (the neutral stop reasons of base.Completion).
TRUNCATED = (
    "{vendor} {model}: the answer was cut off at AMTP_MAX_OUTPUT_TOKENS={limit} output tokens; "
    "raise AMTP_MAX_OUTPUT_TOKENS or use a shallower depth level"
)
REFUSED = (
    "{vendor} {model}: the model refused to answer{detail}; the same input gets the same "
    "refusal: check what the repository content asks for, or choose another model "
    "(AMTP_LLM_MODEL)"
)
FILTERED = (
    "{vendor} {model}: the vendor's content filter withheld the answer; the same input is "
    "filtered again: check the repository content or the deployment's content filter settings"
)
CONTEXT_FULL = "{vendor} {model}: the conversation filled the model's context window" + CONTEXT_HINT
STOP_ERRORS = {
    "max_tokens": (LlmOutputTruncated, TRUNCATED),
    "refusal": (LlmRefusal, REFUSED),
    "content_filter": (LlmContentFiltered, FILTERED),
    "model_context_window_exceeded": (LlmContextOverflow, CONTEXT_FULL),
}
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
        http_client: Any = None,
    ) -> None:
        super().__init__(options, agent=agent)
        self._check_base_url(base_url)
        api_key = self._client_key(api_key, base_url)
        self._api_key = api_key  # kept only to scrub it from error messages
        self.base_url = base_url
        self.timeout = self._timeout(options)
        # http_client: an httpx2.Client (the SDKs' HTTP library) of the caller's (scripts/llama_compare.py records the
        # raw answers through one); None: the SDK's own.
        self._client = self.client_class(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=self.timeout,
            http_client=http_client,
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

    def _timeout(self, options: ProviderOptions) -> float:
        return call_timeout(options)

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
        except httpx2.TransportError as exc:
            # The SDKs wrap transport errors while a request is sent, not while a stream is
            # read: a stream cut or stalled midway arrives as the HTTP library's own error.
            raise self._stream_broken(exc) from None
        completion = self._completion(answer, tools)
        self._check_stop(completion)
        return completion

    def _stream_broken(self, exc: httpx2.TransportError) -> LlmStreamInterrupted:
        fields = {"vendor": self.name, "model": self.options.model}
        if isinstance(exc, httpx2.TimeoutException):
            message = STREAM_STALLED.format(timeout=self.timeout, **fields)
        else:
            detail = redact(str(exc) or "no detail", self._api_key)[:200]
            message = STREAM_CUT.format(error=type(exc).__name__, detail=detail, **fields)
        return LlmStreamInterrupted(message, **fields, error_type=type(exc).__name__)

    def _check_stop(self, completion: Completion) -> None:
        check_stop(completion, vendor=self.name, options=self.options)

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
            return LlmProviderError(f"{vendor}: no answer within {self.timeout:g} s", **details)
        if isinstance(exc, self.sdk.APIConnectionError):
            cause = type(exc.__cause__).__name__ if exc.__cause__ else "unknown cause"
            return LlmProviderError(f"{vendor}: connection failed ({cause})", **details)
        if not isinstance(exc, self.sdk.APIStatusError):
            # A 2xx the SDK could not read (strict validation); a fresh attempt may do better.
            text = redact(exc.message, self._api_key)
            return LlmProviderError(f"{vendor}: unreadable response: {text}", **details)
        return None


def call_timeout(options: ProviderOptions, max_tokens: int | None = None) -> float:
    """The setting, raised to the time an answer of ``max_tokens`` (default: the options')
    may take: the anthropic SDK's own estimate (``_calculate_nonstreaming_timeout`` in
    anthropic/_base_client.py: an hour per 128,000 output tokens), so a long answer is not cut
    off by our timeout and paid for again."""
    tokens = options.max_output_tokens if max_tokens is None else max_tokens
    return max(options.timeout_seconds, 60 * 60 * tokens / 128_000)


def check_stop(completion: Completion, *, vendor: str, options: ProviderOptions) -> None:
    """Raise the final error of an answer that did not end normally (see ``STOP_ERRORS``)."""
    found = STOP_ERRORS.get(completion.stop_reason)
    if found is None:
        return
    error_class, template = found
    detail = f" ({completion.stop_detail})" if completion.stop_detail else ""
    message = template.format(
        vendor=vendor, model=options.model, limit=options.max_output_tokens, detail=detail
    )
    raise error_class(
        message, vendor=vendor, model=options.model, stop_reason=completion.stop_reason
    )


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
    """A vendor's HTTP error answer as ``LlmProviderError`` (transient) or a final error, with
    the status, type and back-off hint in ``details``. Spend limits and context overflows are
    final whatever their status; otherwise the server's ``x-should-retry`` decides when sent
    (as in the SDKs' ``_should_retry``), else the status does."""
    details = {**details, "status": status, "error_type": kind}
    retry_after = retry_after_seconds(headers)
    if retry_after is not None:
        details["retry_after"] = retry_after
    message = f"{vendor} {status} {kind}: {text}"
    code = details.get("error_code")
    if code in QUOTA_CODES or kind == "insufficient_quota" or QUOTA_TEXT in text:
        return LlmQuotaExhausted(message + QUOTA_HINT, **details)
    if code in CONTEXT_CODES or (status == 400 and any(t in text for t in CONTEXT_TEXTS)):
        return LlmContextOverflow(message + CONTEXT_HINT, **details)
    if status < 400:  # an error event inside a 200 stream: its type is all there is
        retryable = kind in RETRYABLE_STREAM_TYPES
        message = f"{vendor} {kind} inside the answer's stream: {text}"
        return (LlmProviderError if retryable else LlmProviderRejected)(message, **details)
    should_retry = headers.get("x-should-retry")
    if should_retry in ("true", "false"):
        retryable = should_retry == "true"
    else:  # Anthropic's 529 overloaded included
        retryable = status >= 500 or status in RETRYABLE_STATUSES
    return (LlmProviderError if retryable else LlmProviderRejected)(message, **details)


def body_text(body: object) -> str:
    """A non-JSON error body (a proxy's HTML page, say), kept short."""
    return body[:300] if isinstance(body, str) and body else "no error message"
