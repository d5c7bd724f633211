"""Tokens and cost of a run: the ``run_costs`` rows an artifact's meta reports, and the sums
the run page, the API and ``/api/costs`` show.

An agent's artifact meta has its provider, model and ``usage`` (what the vendor reported,
summed over the session's calls); a verification report's has ``heal_sessions``, one such meta
per healing session. Each (agent, model) becomes one row, priced when stored with
``settings.AMTP_LLM_PRICES`` (``amtp_site.prices``): a later price change does not rewrite
what a run cost. A cost of None is "unknown" (a model without a price), and so is any sum
it is part of.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings

from amtp_site.prices import cost_usd

TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _count(value) -> int:
    # Meta comes from our own runner, but is JSON: anything but a plain count is 0.
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def sessions(meta: dict) -> list[dict]:
    """The LLM sessions ``meta`` reports: the agent's own, or the healing sessions."""
    found = [meta] if isinstance(meta.get("usage"), dict) else meta.get("heal_sessions") or []
    return [m for m in found if isinstance(m, dict) and isinstance(m.get("usage"), dict)]


def cost_rows(meta: dict) -> list[dict]:
    """One row per (agent, model) of the sessions in ``meta``, with its tokens and cost."""
    rows: dict[tuple[str, str], dict] = {}
    for session in sessions(meta):
        agent = str(session.get("agent") or "unknown")[:40]
        model = str(session.get("model") or "unknown")[:200]
        provider = str(session.get("provider") or "unknown")[:40]
        usage = {name: _count(session["usage"].get(name)) for name in TOKENS}
        row = rows.setdefault(
            (agent, model),
            {"agent": agent, "provider": provider, "model": model, "calls": 0, "cost_usd": 0}
            | dict.fromkeys(TOKENS, 0),
        )
        row["calls"] += _count(session.get("llm_calls"))
        for name in TOKENS:
            row[name] += usage[name]
        cost = cost_usd(provider, model, usage, settings.AMTP_LLM_PRICES)
        row["cost_usd"] = (
            None if cost is None or row["cost_usd"] is None else row["cost_usd"] + cost
        )
    return [
        {**row, "cost_usd": None if row["cost_usd"] is None else str(row["cost_usd"])}
        for row in rows.values()
    ]


def total(rows: list) -> dict:
    """Tokens summed over ``rows`` (RunCost), and the cost: None when any is unknown."""
    summed = {name: sum(getattr(row, name) for row in rows) for name in TOKENS}
    costs = [row.cost_usd for row in rows]
    unknown = any(cost is None for cost in costs)
    summed["cost_usd"] = None if unknown else sum(costs, Decimal(0))
    return summed


def run_costs(run) -> dict:
    """The run's tokens and cost, in all and per agent (in the order they were stored)."""
    rows = list(run.costs.order_by("created_at", "id"))
    return {**total(rows), "agents": rows}
