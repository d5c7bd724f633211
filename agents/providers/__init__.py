"""Provider selection: ``AMTP_LLM_PROVIDER`` (anthropic | openai | offline), model per agent."""

from __future__ import annotations

from django.conf import settings

from agents.providers.base import Provider, ProviderOptions
from amtp_site.errors import ConfigurationError

DEFAULT_MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-4o-mini",
    "offline": "amtp-rules-v1",
}
UNKNOWN_PROVIDER = "AMTP_LLM_PROVIDER={name!r} is not a provider; set it to one of {choices}"
BAD_TIMEOUT = (
    "AMTP_LLM_TIMEOUT_S={value!r} must be a positive number of seconds; set it to e.g. 120"
)


def model_for(agent: str, provider: str | None = None) -> str:
    provider = provider or settings.AMTP_LLM_PROVIDER
    return (
        getattr(settings, "AMTP_MODELS", {}).get(agent)
        or settings.AMTP_LLM_MODEL
        or DEFAULT_MODELS[provider]
    )


def provider_options(agent: str, name: str, output_schema: dict | None) -> ProviderOptions:
    """The options of every provider, from settings; a setting no call could work with is a
    ``ConfigurationError`` here rather than a failure Temporal would retry."""
    if name not in DEFAULT_MODELS:
        raise ConfigurationError(
            UNKNOWN_PROVIDER.format(name=name, choices=", ".join(DEFAULT_MODELS))
        )
    if settings.AMTP_LLM_TIMEOUT_S <= 0:  # the SDKs would time every call out at once
        raise ConfigurationError(BAD_TIMEOUT.format(value=settings.AMTP_LLM_TIMEOUT_S))
    return ProviderOptions(
        model=model_for(agent, name),
        max_output_tokens=settings.AMTP_MAX_OUTPUT_TOKENS,
        timeout_seconds=settings.AMTP_LLM_TIMEOUT_S,
        output_schema=output_schema,
    )


def make_provider(agent: str, *, output_schema: dict | None = None) -> Provider:
    """A NEW provider (and SDK client) for one agent invocation."""
    name = settings.AMTP_LLM_PROVIDER
    options = provider_options(agent, name, output_schema)
    if name == "offline":
        from agents.providers.offline import OfflineProvider

        return OfflineProvider(options, agent=agent)
    if name == "anthropic":
        from agents.providers.anthropic import AnthropicProvider

        return AnthropicProvider(
            options,
            agent=agent,
            api_key=settings.ANTHROPIC_API_KEY,
            base_url=settings.ANTHROPIC_BASE_URL or None,
        )
    from agents.providers.openai import OpenAIProvider

    return OpenAIProvider(
        options,
        agent=agent,
        api_key=settings.OPENAI_API_KEY,
        base_url=settings.OPENAI_BASE_URL or None,
    )
