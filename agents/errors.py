"""Errors of the agents and their LLM providers (vendor errors map onto these)."""

from __future__ import annotations

from amtp_site.errors import NonRetryableError, RetryableError


class MalformedLlmOutput(RetryableError):
    """Sanitised model output is not parseable JSON (spec 000: retryable)."""


class BudgetExceeded(NonRetryableError):
    """An agent call would exceed a configured budget (tokens, tool calls, bytes, time)."""


class LlmProviderError(RetryableError):
    """The LLM vendor answered with a transient error (429, 5xx, timeout)."""


class LlmStreamInterrupted(LlmProviderError):
    """A streamed answer that began (HTTP 200) broke off: the connection was cut, or nothing
    came, not even a ping, for the read timeout. The next attempt starts a fresh stream."""


class LlmProviderRejected(NonRetryableError):
    """The LLM vendor refused the request for good (401, 403, 400 bad request)."""


class LlmQuotaExhausted(LlmProviderRejected):
    """A spend limit or quota is used up (Anthropic's spend-limit 429s, OpenAI's
    ``insufficient_quota``): a 429 that no retry clears until someone raises the limit."""


class LlmOutputTruncated(NonRetryableError):
    """The answer stopped at the output token limit (``max_tokens`` / ``length``); the same
    request would stop there again."""


class LlmRefusal(NonRetryableError):
    """The model declined to answer (stop reason ``refusal``)."""


class LlmContentFiltered(NonRetryableError):
    """The vendor's content filter withheld the answer (``finish_reason: content_filter``)."""


class LlmContextOverflow(NonRetryableError):
    """The conversation does not fit the model's context window."""
