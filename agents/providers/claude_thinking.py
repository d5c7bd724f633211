"""Thinking, effort and ``max_tokens`` for one Claude request, from the agent's settings and
the model's row in ``models.CLAUDE_SPECS``.

Thinking tokens count against ``max_tokens`` ("max_tokens remains a hard limit on total
output (thinking plus response text)": the Sonnet 5 migration guide), so a request that thinks
gets ``max_tokens`` = the answer's budget (``AMTP_MAX_OUTPUT_TOKENS``) + room for thinking at
its effort, capped at the model's limit. The settings, per agent or for all:

* ``AMTP_THINKING_<AGENT>`` / ``AMTP_LLM_THINKING``: ``auto`` (the model's default), ``on`` or
  ``off`` (sent as the ``thinking.type`` that model uses for it);
* ``AMTP_EFFORT_<AGENT>`` / ``AMTP_LLM_EFFORT``: ``low`` ... ``max``, or empty for the model's
  default (``output_config.effort``).

A combination the model refuses with a 400 is a ``ConfigurationError`` naming the setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.providers.base import ProviderOptions
from agents.providers.models import EFFORTS, ClaudeSpec, claude_spec
from amtp_site.errors import ConfigurationError

CHOICES = ("auto", "on", "off")
# Output tokens kept for thinking above the answer's budget, by effort (ours: the docs give no
# figure; "high" is the default effort of most current models).
THINKING_ROOM = {"low": 8_000, "medium": 16_000, "high": 32_000, "xhigh": 48_000, "max": 64_000}
MIN_BUDGET = 1024  # extended thinking's budget_tokens: ≥1024 and < max_tokens (the SDK's doc)

BAD_CHOICE = (
    "{setting}={value!r} is not a thinking choice; set it to auto (the model's default), on or off"
)
BAD_EFFORT = (
    "{setting}={value!r} is not an effort level; set it to one of {levels}, or leave it empty "
    "for the model's default"
)
NO_EFFORT = (
    "{setting}={value!r}: {model} takes no effort parameter; leave {setting} empty or choose a "
    "model that takes one (docs/providers.md)"
)
OTHER_EFFORT = "{setting}={value!r}: {model} takes effort {levels}; set {setting} to one of them"
ALWAYS_ON = (
    "{setting}=off: {model} always thinks and refuses a request that turns thinking off; set "
    "{setting} to auto, or choose a model that can (docs/providers.md)"
)
OFF_EFFORT = (
    "{setting}=off on {model} (thinking {off}) works only at effort {levels}, and the effort is "
    "{effort}; set {effort_setting} to one of them, or {setting} to auto"
)
OVER_LIMIT = (
    "AMTP_MAX_OUTPUT_TOKENS={value} is outside 1..{limit}, the output limit of {model}; set it "
    "within that range"
)


@dataclass(frozen=True)
class ThinkingPlan:
    params: dict[str, Any]  # `thinking` and/or `output_config` for the request
    max_tokens: int
    thinks: bool
    effort: str | None  # the effort the request runs at (sent, or the model's default)


def plan(options: ProviderOptions) -> ThinkingPlan:
    """What to send; raises ``ConfigurationError`` for what the model would refuse."""
    spec = claude_spec(options.model)
    check(options, spec)
    choice = options.thinking
    thinks = spec.mode != "none" and (
        choice == "on" or (choice == "auto" and spec.thinks_by_default) or spec.off is None
    )
    effort = options.effort or spec.default_effort
    room = THINKING_ROOM[effort or "high"] if thinks else 0
    max_tokens = min(spec.max_output, options.max_output_tokens + room)
    params: dict[str, Any] = {}
    if choice == "off" and spec.off:
        params["thinking"] = {"type": spec.off}
    elif choice == "on" and spec.mode == "extended":
        budget = max(MIN_BUDGET, min(room, max_tokens - MIN_BUDGET))
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif choice == "on":
        params["thinking"] = {"type": "adaptive"}
    if options.effort:
        params["output_config"] = {"effort": options.effort}
    return ThinkingPlan(params, max_tokens, thinks, effort if thinks else None)


def check(options: ProviderOptions, spec: ClaudeSpec) -> None:
    model, value = options.model, options.max_output_tokens
    names = {"setting": options.thinking_setting, "model": model}
    if options.thinking not in CHOICES:
        raise ConfigurationError(BAD_CHOICE.format(value=options.thinking, **names))
    if not 1 <= value <= spec.max_output:
        raise ConfigurationError(OVER_LIMIT.format(value=value, limit=spec.max_output, model=model))
    if options.thinking == "off" and spec.off is None and spec.mode != "none":
        raise ConfigurationError(ALWAYS_ON.format(**names))
    _check_effort(options, spec)


def _check_effort(options: ProviderOptions, spec: ClaudeSpec) -> None:
    effort, setting, model = options.effort, options.effort_setting, options.model
    if effort is None:
        effort = spec.default_effort
    elif effort not in EFFORTS:
        levels = ", ".join(EFFORTS)
        raise ConfigurationError(BAD_EFFORT.format(setting=setting, value=effort, levels=levels))
    elif spec.mode != "none" and not spec.efforts:
        raise ConfigurationError(NO_EFFORT.format(setting=setting, value=effort, model=model))
    elif spec.efforts and effort not in spec.efforts:
        levels = ", ".join(spec.efforts)
        raise ConfigurationError(
            OTHER_EFFORT.format(setting=setting, value=effort, model=model, levels=levels)
        )
    if options.thinking == "off" and spec.off_efforts and effort not in spec.off_efforts:
        raise ConfigurationError(
            OFF_EFFORT.format(
                setting=options.thinking_setting,
                model=model,
                off=spec.off,
                levels=", ".join(spec.off_efforts),
                effort=effort,
                effort_setting=setting,
            )
        )
