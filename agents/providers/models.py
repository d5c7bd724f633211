"""What a model accepts and when it goes away, read from the installed SDKs where they say it.

**Sampling.** The spec pins temperature ≤ 0.2, but newer models refuse sampling parameters
outright (400 "`temperature` is deprecated for this model." on Claude Opus 4.7+, Sonnet 5,
Fable; "Unsupported parameter: 'temperature'" on OpenAI's reasoning models). Omitting the
parameter is always accepted, so the tables below list the models that DO take it; any other
model, unknown ones included, gets the vendor's default sampling.

**Deprecation.** Anthropic's SDK ships ``DEPRECATED_MODELS`` (model → end-of-life date) in two
places (``anthropic/_data/deprecated_models.py`` and ``anthropic/resources/messages/
messages.py``); OpenAI's lists "Announced shutdown date"s in the docstring of
``openai/types/shared/chat_model.py``. A model past its date answers 404, so it is a
``ConfigurationError`` before any call; one still before it is a warning naming the date.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from amtp_site.errors import ConfigurationError

# Claude models that still take `temperature` (public reports of the 400 above name Opus 4.7,
# Opus 4.8, Opus 5, Sonnet 5 and Fable; the later families and Mythos are taken to follow).
ANTHROPIC_WITH_TEMPERATURE = (
    "claude-2",
    "claude-instant",
    "claude-3",
    "claude-haiku-4-",
    "claude-sonnet-4-",
    "claude-opus-4-0",
    "claude-opus-4-1",
    "claude-opus-4-2025",  # claude-opus-4-20250514, i.e. Opus 4.0
    "claude-opus-4-5",
    "claude-opus-4-6",
)
# OpenAI's reasoning models (o1, o3, o4-mini, gpt-5 and later) refuse temperature and top_p
# and want `max_completion_tokens`; other names, local servers' models included, take them.
OPENAI_REASONING = re.compile(r"o\d|gpt-[5-9]")

EFFORTS = ("low", "medium", "high", "xhigh", "max")


@dataclass(frozen=True)
class ClaudeSpec:
    """What one Claude model does with thinking and output, from its model page and the
    "Troubleshooting thinking" page (platform.claude.com/docs/en/build-with-claude/
    thinking-troubleshooting): the mode it thinks in, whether a request without ``thinking``
    thinks, the ``thinking.type`` that turns it off (None: it cannot be turned off), the
    ``output_config.effort`` levels it takes, its ``max_tokens`` ceiling, and whether it takes
    an assistant prefill (refused from the Claude 4.6 models on: "Prefill removal")."""

    max_output: int
    mode: str  # "adaptive" | "extended" (thinking: enabled + budget_tokens)
    thinks_by_default: bool
    off: str | None  # "disabled", "between_tools" (Sonnet 5.5 only), None: always on
    efforts: tuple[str, ...] = ()  # () = no effort parameter
    default_effort: str | None = None  # the API's own default, when there is one
    prefill: bool = False
    off_efforts: tuple[str, ...] | None = None  # efforts taken with thinking off; None: all


UP_TO_HIGH = ("low", "medium", "high")


def _adaptive(
    on: bool, off: str | None, default: str, efforts=EFFORTS, off_efforts=None
) -> ClaudeSpec:
    return ClaudeSpec(128_000, "adaptive", on, off, efforts, default, off_efforts=off_efforts)


def _extended(max_output: int, efforts: tuple[str, ...] = ()) -> ClaudeSpec:
    default = "high" if efforts else None
    return ClaudeSpec(max_output, "extended", False, "disabled", efforts, default, prefill=True)


# First match wins (str.startswith). Each row's source, under platform.claude.com/docs/en/:
CLAUDE_SPECS: tuple[tuple[str, ClaudeSpec], ...] = (
    # about-claude/models/whats-new-sonnet-5-5: between_tools replaces disabled (refused), and
    # works only up to effort high.
    ("claude-sonnet-5-5", _adaptive(True, "between_tools", "high", off_efforts=UP_TO_HIGH)),
    # models/opus-5-5/overview, "How it compares": adaptive, always on, default effort medium.
    ("claude-opus-5-5", _adaptive(True, None, "medium")),
    ("claude-fable-", _adaptive(True, None, "high")),  # the same table: always on
    ("claude-mythos-5", _adaptive(True, None, "high")),  # Fable's sibling
    # models/haiku-5-5/overview and whats-new-haiku-5-5: adaptive on by default, effort
    # medium by default, `disabled` only at effort high or below.
    ("claude-haiku-5-5", _adaptive(True, "disabled", "medium", off_efforts=UP_TO_HIGH)),
    ("claude-sonnet-5", _adaptive(True, "disabled", "high")),  # models/sonnet-5/migration-guide
    # models/opus-5/migration-guide, "Breaking changes": thinking on by default; `disabled`
    # with effort xhigh or max is a 400.
    ("claude-opus-5", _adaptive(True, "disabled", "high", off_efforts=UP_TO_HIGH)),
    # The same guide: "On Claude Opus 4.8, requests without a thinking field run without
    # thinking"; 4.8 keeps 4.7's API surface (about-claude/models/whats-new-claude-4-8).
    ("claude-opus-4-8", _adaptive(False, "disabled", "high")),
    ("claude-opus-4-7", _adaptive(False, "disabled", "high")),
    ("claude-mythos-preview", _adaptive(True, "disabled", "high")),
    # whats-new-claude-4-6: adaptive, off unless asked for, no prefill, no xhigh; 4.5 and
    # earlier: extended thinking only, prefill taken (build-with-claude/extended-thinking).
    ("claude-opus-4-6", _adaptive(False, "disabled", "high", ("low", "medium", "high", "max"))),
    ("claude-sonnet-4-6", _adaptive(False, "disabled", "high", ("low", "medium", "high", "max"))),
    ("claude-opus-4-5", _extended(64_000, ("low", "medium", "high"))),
    ("claude-sonnet-4-5", _extended(64_000)),
    ("claude-haiku-4-5", _extended(64_000)),
    ("claude-", _extended(32_000)),
)
# A model name no row knows (a gateway's alias, say): nothing is assumed about its thinking.
UNKNOWN_CLAUDE = ClaudeSpec(128_000, "none", False, None, prefill=True)


def claude_spec(model: str) -> ClaudeSpec:
    return next((spec for prefix, spec in CLAUDE_SPECS if model.startswith(prefix)), UNKNOWN_CLAUDE)


DEPRECATED = (
    "{source}={model!r} is deprecated: {vendor} retires it on {eol}; set {source} to a current "
    "model, e.g. {default}"
)
RETIRED = (
    "{source}={model!r} was retired on {eol} and {vendor} answers 404 for it; set {source} to a "
    "current model, e.g. {default}"
)


def today() -> date:
    return date.today()  # one clock for "retired", which tests can move


def takes_temperature(vendor: str, model: str) -> bool:
    if vendor == "anthropic":
        return model.startswith(ANTHROPIC_WITH_TEMPERATURE)
    return not is_openai_reasoning(model)


def is_openai_reasoning(model: str) -> bool:
    return OPENAI_REASONING.match(model) is not None


def openai_api(model: str, hosted: bool) -> str:
    """ "responses" for OpenAI's own reasoning models (the newest refuse function tools on Chat
    Completions, and reasoning items can only be passed back between turns there), "chat" for
    every other model and for every OpenAI-compatible server of one's own."""
    return "responses" if hosted and is_openai_reasoning(model) else "chat"


def end_of_life(vendor: str, model: str) -> date | None:
    """The day the vendor retires ``model`` according to its SDK; None when none is announced."""
    table = (
        _anthropic_eol() if vendor == "anthropic" else _openai_eol() if vendor == "openai" else {}
    )
    return table.get(model)


def model_notice(
    vendor: str, model: str, *, source: str, default: str, on: date | None = None
) -> str | None:
    """None for a current model, a warning for a deprecated one; a retired one raises."""
    eol = end_of_life(vendor, model)
    if eol is None:
        return None
    fields = {"source": source, "model": model, "vendor": vendor, "eol": eol, "default": default}
    if eol <= (on or today()):
        raise ConfigurationError(RETIRED.format(**fields), vendor=vendor, model=model)
    return DEPRECATED.format(**fields)


@functools.cache
def _anthropic_eol() -> dict[str, date]:
    from anthropic._data import DEPRECATED_MODELS as data_table
    from anthropic.resources.messages import DEPRECATED_MODELS as messages_table

    # "November 30th, 2026": drop the ordinal suffix, then it is "%B %d, %Y".
    return {
        model: datetime.strptime(re.sub(r"(\d)(st|nd|rd|th)", r"\1", text), "%B %d, %Y").date()
        for model, text in {**messages_table, **data_table}.items()
    }


@functools.cache
def _openai_eol() -> dict[str, date]:
    from openai.types.shared import chat_model

    source = Path(chat_model.__file__).read_text()
    notes = source.partition("Deprecated values:")[2]
    table: dict[str, date] = {}
    for item in notes.split("\n- "):  # '- "gpt-4o", "gpt-4o-mini": Announced shutdown date: …'
        names, _, rest = item.partition("Announced shutdown")
        found = re.search(r"date:\s*(\d{4}-\d{2}-\d{2})", rest)
        if found:
            for name in re.findall(r'"([^"]+)"', names):
                table[name] = date.fromisoformat(found.group(1))
    return table
