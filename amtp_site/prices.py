"""What an LLM call costs: USD per million tokens per model, and the cost of reported usage.

The defaults are the vendors' public list prices (standard tier, no batch discount):

- Anthropic, https://platform.claude.com/docs/en/about-claude/pricing ("Model pricing": base
  input, 5-minute cache writes, cache hits, output), read 2026-11. Sonnet 5.5's cache hits
  are $0.10 since 2026-10-07. Haiku 5.5 is priced by prompt length: the rows below are its
  band for prompts up to 100,000 tokens, which every AMTP call stays under
  (``AMTP_CONTEXT_TOKENS``, ``AMTP_MAX_INPUT_TOKENS``).
- OpenAI, https://developers.openai.com/api/docs/pricing ("Standard": input, cached input,
  output; rates for contexts under 270K tokens), read 2026-11. OpenAI has no cache writes.

``AMTP_LLM_PRICES`` (JSON, ``{"model": {"input": 3, "output": 15, "cache_read": 0.3,
"cache_write": 3.75}}``) adds models or replaces rows: a self-hosted model's zero price, a
negotiated rate, a price change before AMTP ships it. A model in neither table has an unknown
cost, never a guessed or zero one; the offline rule engine costs nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal

MILLION = Decimal(1_000_000)
FIELDS = ("input", "output", "cache_read", "cache_write")
FREE_PROVIDERS = ("offline",)
# Dated snapshots are priced as their model: claude-sonnet-4-5-20250929, gpt-4o-2024-08-06.
SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")

BAD_JSON = "AMTP_LLM_PRICES must be a JSON object of model → prices: {error}"
BAD_ROW = (
    "AMTP_LLM_PRICES[{model!r}]: {problem}; give USD per million tokens as "
    '{{"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}} '
    "(input and output required)"
)


@dataclass(frozen=True)
class Price:
    """USD per million tokens. ``cache_read``/``cache_write`` None: the vendor bills those
    tokens as plain input."""

    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None


def _p(input: str, output: str, read: str | None = None, write: str | None = None) -> Price:
    dec = lambda v: None if v is None else Decimal(v)  # noqa: E731
    return Price(Decimal(input), Decimal(output), dec(read), dec(write))


# Anthropic: input, output, cache hit, 5-minute cache write (the provider's only kind).
_OPUS_45 = _p("5", "25", "0.50", "6.25")
_OPUS_4 = _p("15", "75", "1.50", "18.75")
_SONNET_4 = _p("3", "15", "0.30", "3.75")
DEFAULT_PRICES: dict[str, Price] = {
    "claude-fable-5-1": _p("10", "50", "0.25", "12.50"),
    "claude-mythos-5-1": _p("10", "50", "0.25", "12.50"),
    "claude-fable-5": _p("10", "50", "1", "12.50"),
    "claude-mythos-5": _p("10", "50", "1", "12.50"),
    "claude-opus-5-5": _p("4", "20", "0.20", "5"),
    "claude-opus-5": _OPUS_45,
    "claude-opus-4-8": _OPUS_45,
    "claude-opus-4-7": _OPUS_45,
    "claude-opus-4-6": _OPUS_45,
    "claude-opus-4-5": _OPUS_45,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4": _OPUS_4,
    "claude-sonnet-5-5": _p("2", "10", "0.10", "2.50"),
    "claude-sonnet-5": _p("2", "10", "0.20", "2.50"),
    "claude-sonnet-4-6": _SONNET_4,
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4-0": _SONNET_4,
    "claude-sonnet-4": _SONNET_4,
    "claude-haiku-5-5": _p("0.10", "0.50", "0.01", "0.125"),
    "claude-haiku-4-5": _p("1", "5", "0.10", "1.25"),
    "claude-3-5-haiku": _p("0.80", "4", "0.08", "1"),
    "claude-3-haiku": _p("0.25", "1.25", "0.03", "0.30"),
    # OpenAI: input, output, cached input.
    "gpt-5.5": _p("5", "30", "0.50"),
    "gpt-5.5-pro": _p("30", "180"),
    "gpt-5.4": _p("2.50", "15", "0.25"),
    "gpt-5.4-pro": _p("30", "180"),
    "gpt-5.4-mini": _p("0.75", "4.50", "0.075"),
    "gpt-5.4-nano": _p("0.20", "1.25", "0.02"),
    "gpt-5": _p("1.25", "10", "0.125"),
    "gpt-5-mini": _p("0.25", "2", "0.025"),
    "gpt-5-nano": _p("0.05", "0.40", "0.005"),
    "gpt-4.1": _p("2", "8", "0.50"),
    "gpt-4.1-mini": _p("0.40", "1.60", "0.10"),
    "gpt-4.1-nano": _p("0.10", "0.40", "0.025"),
    "gpt-4o": _p("2.50", "10", "1.25"),
    "gpt-4o-mini": _p("0.15", "0.60", "0.075"),
    "o3": _p("2", "8", "0.50"),
    "o4-mini": _p("1.10", "4.40", "0.275"),
}


def _amount(value, model: str, field: str) -> Decimal:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e6
    if not ok:
        problem = f"{field} must be a number from 0 to 1,000,000, not {value!r}"
        raise ValueError(BAD_ROW.format(model=model, problem=problem))
    return Decimal(str(value))


def parse_override(raw: str) -> dict[str, Price]:
    """``AMTP_LLM_PRICES`` as prices; ValueError naming the model and field otherwise."""
    if not raw.strip():
        return {}
    try:
        table = json.loads(raw)
    except ValueError as exc:
        raise ValueError(BAD_JSON.format(error=exc)) from exc
    if not isinstance(table, dict):
        raise ValueError(BAD_JSON.format(error=f"got {type(table).__name__}"))
    prices = {}
    for model, row in table.items():
        if not isinstance(row, dict) or not {"input", "output"} <= row.keys():
            raise ValueError(BAD_ROW.format(model=model, problem="input and output are required"))
        unknown = sorted(set(row) - set(FIELDS))
        if unknown:
            raise ValueError(BAD_ROW.format(model=model, problem=f"unknown field(s) {unknown}"))
        amounts = {field: _amount(row[field], model, field) for field in row}
        prices[model] = Price(**amounts)
    return prices


def price_of(model: str, override: dict[str, Price]) -> Price | None:
    """The price of ``model`` (or of the model a dated snapshot of it is), None if unknown."""
    for name in dict.fromkeys((model, SNAPSHOT.sub("", model))):
        found = override.get(name) or DEFAULT_PRICES.get(name)
        if found is not None:
            return found
    return None


def cost_usd(provider: str, model: str, usage: dict, override: dict[str, Price]) -> Decimal | None:
    """USD for ``usage`` (the runner's tally: ``input_tokens`` counts every prompt token,
    cached or not, ``cache_read_tokens`` and ``cache_write_tokens`` are parts of it);
    None when the model's price is unknown."""
    if provider in FREE_PROVIDERS:
        return Decimal(0)
    price = price_of(model, override)
    if price is None:
        return None
    read = int(usage.get("cache_read_tokens") or 0)
    write = int(usage.get("cache_write_tokens") or 0)
    plain = max(int(usage.get("input_tokens") or 0) - read - write, 0)
    total = (
        plain * price.input
        + read * (price.input if price.cache_read is None else price.cache_read)
        + write * (price.input if price.cache_write is None else price.cache_write)
        + int(usage.get("output_tokens") or 0) * price.output
    )
    return total / MILLION
