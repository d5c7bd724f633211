"""Provider selection: ``AMTP_LLM_PROVIDER`` (anthropic | openai | offline), model per agent."""

from __future__ import annotations

import logging

from django.conf import settings

from agents.providers.base import Provider, ProviderOptions
from agents.providers.models import model_notice
from amtp_site.errors import ConfigurationError

log = logging.getLogger("amtp.agents")
# Current models, none in its SDK's deprecation table (tests/test_providers.py checks that).
DEFAULT_MODELS = {
    "anthropic": "claude-sonnet-5-5",
    "openai": "gpt-5.4-mini",
    "offline": "amtp-rules-v1",
}
UNKNOWN_PROVIDER = "AMTP_LLM_PROVIDER={name!r} is not a provider; set it to one of {choices}"
BAD_TIMEOUT = (
    "AMTP_LLM_TIMEOUT_S={value!r} must be a positive number of seconds; set it to e.g. 120"
)


def model_for(agent: str, provider: str | None = None) -> str:
    return model_choice(agent, provider)[0]


def model_choice(agent: str, provider: str | None = None) -> tuple[str, str]:
    """(model, the setting it came from) for one agent."""
    provider = provider or settings.AMTP_LLM_PROVIDER
    per_agent = f"AMTP_MODEL_{agent.upper()}"
    if getattr(settings, "AMTP_MODELS", {}).get(agent):
        return settings.AMTP_MODELS[agent], per_agent
    if settings.AMTP_LLM_MODEL:
        return settings.AMTP_LLM_MODEL, "AMTP_LLM_MODEL"
    return DEFAULT_MODELS[provider], "AMTP_LLM_MODEL (unset: the default)"


def check_model(agent: str, name: str) -> str | None:
    """The deprecation warning for the agent's model, if any; a retired model raises
    ``ConfigurationError`` (the vendor would answer 404 to every call)."""
    model, source = model_choice(agent, name)
    return model_notice(name, model, source=source, default=DEFAULT_MODELS[name])


def provider_options(
    agent: str, name: str, output_schema: dict | None, max_output_tokens: int | None = None
) -> ProviderOptions:
    """The options of every provider, from settings; a setting no call could work with is a
    ``ConfigurationError`` here rather than a failure Temporal would retry."""
    if name not in DEFAULT_MODELS:
        raise ConfigurationError(
            UNKNOWN_PROVIDER.format(name=name, choices=", ".join(DEFAULT_MODELS))
        )
    if settings.AMTP_LLM_TIMEOUT_S <= 0:  # the SDKs would time every call out at once
        raise ConfigurationError(BAD_TIMEOUT.format(value=settings.AMTP_LLM_TIMEOUT_S))
    notice = check_model(agent, name)
    if notice:
        log.warning(notice)
    thinking, thinking_setting = agent_setting(agent, "THINKING", "AMTP_AGENT_THINKING")
    effort, effort_setting = agent_setting(agent, "EFFORT", "AMTP_AGENT_EFFORT")
    return ProviderOptions(
        model=model_for(agent, name),
        max_output_tokens=max_output_tokens or settings.AMTP_MAX_OUTPUT_TOKENS,
        timeout_seconds=settings.AMTP_LLM_TIMEOUT_S,
        output_schema=output_schema,
        thinking=(thinking or "auto").strip().lower(),
        effort=(effort or "").strip().lower() or None,
        thinking_setting=thinking_setting,
        effort_setting=effort_setting,
    )


def agent_setting(agent: str, kind: str, per_agent: str) -> tuple[str, str]:
    """(value, the setting it came from): AMTP_<KIND>_<AGENT>, else AMTP_LLM_<KIND>."""
    value = getattr(settings, per_agent, {}).get(agent)
    if value:
        return value, f"AMTP_{kind}_{agent.upper()}"
    return getattr(settings, f"AMTP_LLM_{kind}", ""), f"AMTP_LLM_{kind}"


def make_provider(
    agent: str, *, output_schema: dict | None = None, max_output_tokens: int | None = None
) -> Provider:
    """A NEW provider (and SDK client) for one agent invocation."""
    name = settings.AMTP_LLM_PROVIDER
    options = provider_options(agent, name, output_schema, max_output_tokens)
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
        structured_outputs=settings.OPENAI_STRUCTURED_OUTPUTS,
    )
