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

# OpenAI's reasoning models (o1, o3, o4-mini, gpt-5 and later) refuse temperature and top_p
# and want `max_completion_tokens`; other names, local servers' models included, take them.
OPENAI_REASONING = re.compile(r"o\d|gpt-[5-9]")

EFFORTS = ("low", "medium", "high", "xhigh", "max")


@dataclass(frozen=True)
class ClaudeSpec:
    """What one Claude model does with thinking, sampling and output: the mode it thinks in,
    whether a request without ``thinking`` thinks, the ``thinking.type`` that turns it off
    (None: it cannot be turned off) and the efforts that take, the ``output_config.effort``
    levels and the API's default, its ``max_tokens`` ceiling, whether it takes ``temperature``
    and an assistant prefill, and the page (under platform.claude.com/docs/en/) that says so.
    The provider, ``check`` and docs/providers.md read this table; tests/test_thinking.py holds
    every row against the fake's own reading of those pages."""

    max_output: int
    mode: str  # "adaptive" | "extended" (thinking: enabled + budget_tokens)
    thinks_by_default: bool
    off: str | None  # "disabled", "between_tools" (Sonnet 5.5 only), None: always on
    efforts: tuple[str, ...] = ()  # () = no effort parameter
    default_effort: str | None = None  # the API's own default, when there is one
    prefill: bool = False
    off_efforts: tuple[str, ...] | None = None  # efforts taken with thinking off; None: all
    temperature: bool = False  # takes `temperature` (refused from Opus 4.7 on)
    source: str = ""


UP_TO_HIGH = ("low", "medium", "high")
WITHOUT_XHIGH = ("low", "medium", "high", "max")
# Temperature: public reports of the 400 "`temperature` is deprecated for this model." name
# Opus 4.7, Opus 4.8, Opus 5, Sonnet 5 and Fable; the later families and Mythos follow them.


def _adaptive(on, off, default, source, efforts=EFFORTS, off_efforts=None, temperature=False):
    return ClaudeSpec(
        128_000, "adaptive", on, off, efforts, default, False, off_efforts, temperature, source
    )


def _extended(max_output: int, source: str, efforts: tuple[str, ...] = ()) -> ClaudeSpec:
    default = "high" if efforts else None
    return ClaudeSpec(
        max_output, "extended", False, "disabled", efforts, default, True, None, True, source
    )


SONNET_55 = "about-claude/models/whats-new-sonnet-5-5"
OPUS_5 = "models/opus-5/migration-guide"
HAIKU_55 = "models/haiku-5-5/whats-new-haiku-5-5"
CLAUDE_46 = "about-claude/models/whats-new-claude-4-6"
EXTENDED = "build-with-claude/extended-thinking"
# First match wins (str.startswith).
CLAUDE_SPECS: tuple[tuple[str, ClaudeSpec], ...] = (
    (
        "claude-sonnet-5-5",
        _adaptive(True, "between_tools", "high", SONNET_55, off_efforts=UP_TO_HIGH),
    ),
    ("claude-opus-5-5", _adaptive(True, None, "medium", "models/opus-5-5/overview")),
    ("claude-fable-", _adaptive(True, None, "high", "about-claude/models/overview")),
    ("claude-mythos-5", _adaptive(True, None, "high", "about-claude/models/overview")),
    ("claude-haiku-5-5", _adaptive(True, "disabled", "medium", HAIKU_55, off_efforts=UP_TO_HIGH)),
    ("claude-sonnet-5", _adaptive(True, "disabled", "high", "models/sonnet-5/migration-guide")),
    ("claude-opus-5", _adaptive(True, "disabled", "high", OPUS_5, off_efforts=UP_TO_HIGH)),
    # OPUS_5: "On Claude Opus 4.8, requests without a thinking field run without thinking";
    # 4.8 keeps 4.7's API surface (about-claude/models/whats-new-claude-4-8).
    ("claude-opus-4-8", _adaptive(False, "disabled", "high", OPUS_5)),
    ("claude-opus-4-7", _adaptive(False, "disabled", "high", OPUS_5)),
    (
        "claude-mythos-preview",
        _adaptive(True, "disabled", "high", "build-with-claude/thinking-troubleshooting"),
    ),
    (
        "claude-opus-4-6",
        _adaptive(False, "disabled", "high", CLAUDE_46, WITHOUT_XHIGH, temperature=True),
    ),
    (
        "claude-sonnet-4-6",
        _adaptive(False, "disabled", "high", CLAUDE_46, WITHOUT_XHIGH, temperature=True),
    ),
    ("claude-opus-4-5", _extended(64_000, "build-with-claude/effort", UP_TO_HIGH)),
    ("claude-sonnet-4-5", _extended(64_000, EXTENDED)),
    ("claude-haiku-4-5", _extended(64_000, EXTENDED)),
    ("claude-", _extended(32_000, EXTENDED)),
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
        return claude_spec(model).temperature
    return not is_openai_reasoning(model)


def claude_table() -> str:
    """The table of docs/providers.md, one row per row of ``CLAUDE_SPECS``."""
    lines = [
        "| model | thinking | by default | off | effort (default) | temperature | prefill "
        "| max output | source |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for prefix, spec in CLAUDE_SPECS:
        name = f"`{prefix}*`" if prefix.endswith("-") else f"`{prefix}`"
        default = "always" if spec.off is None else "on" if spec.thinks_by_default else "off"
        off = f"`{spec.off}`" if spec.off else "—"
        if spec.off_efforts:
            off += f" (effort ≤ {spec.off_efforts[-1]})"
        efforts = ", ".join(spec.efforts) or "none"
        if spec.default_effort:
            efforts += f" ({spec.default_effort})"
        fields = [
            name,
            "extended (`budget_tokens`)" if spec.mode == "extended" else spec.mode,
            default,
            off,
            efforts,
            "0.1 (not with thinking)" if spec.temperature else "refused",
            "taken" if spec.prefill else "refused",
            f"{spec.max_output:,}",
            f"[{spec.source}](https://platform.claude.com/docs/en/{spec.source})",
        ]
        lines.append("| " + " | ".join(fields) + " |")
    return "\n".join(lines) + "\n"


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
