"""What a run cost: each vendor's usage fields read by its provider and priced
(``amtp_site.prices``), stored once with the artifact (``runs.artifacts``), and shown on the run
page and in the API, per agent and in all."""

from __future__ import annotations

import json
import pickle
from decimal import Decimal

import pytest
from django.test import override_settings

from agents.providers.base import ToolResult
from agents.runner import assistant_turn
from amtp_site.prices import Price, cost_usd, parse_override
from runs import artifacts, costs
from runs.models import RunCost
from runs.temporal.failures import stage_failure
from schemas.errors import SchemaValidationError
from tests.factories import RunFactory
from tests.fakes.llm_api import FakeAnthropic, FakeOpenAI, HttpError, tool_use
from tests.test_agent_runner import anthropic, generate
from tests.test_openai_responses import provider as responses_provider
from tests.test_providers import ANSWER, TOOLS, ask, make_claude, make_gpt

LONG = [{"role": "user", "content": '{"run_id":"r-1"} ' + "x" * 6000}]  # > 1,024 tokens


def two_calls(provider, fake) -> list:
    """A tool call, then the answer in the same conversation: the second call's prompt
    starts with the first's, which the vendor's prompt cache serves."""
    fake.script([tool_use("repo_tree", {}, id="call_1"), ANSWER])
    first = ask(provider, LONG, tools=TOOLS)
    turn = {"role": "tool", "results": [ToolResult("call_1", "src/main.py")]}
    second = ask(provider, [*LONG, assistant_turn(first), turn], tools=TOOLS)
    return [first, second]


def tally(completions) -> dict:
    """The usage the runner reports for these calls (agents.runner.call_model)."""
    names = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    return {name: sum(getattr(c, name) for c in completions) for name in names}


def test_anthropic_usage_with_cache_writes_and_reads_is_priced():
    with FakeAnthropic() as fake:
        calls = two_calls(make_claude(fake, model="claude-sonnet-5-5"), fake)
        billed = [r.usage for r in fake.requests]
    assert billed[0]["cache_creation_input_tokens"] > 0  # the fake bills as the API does
    assert billed[1]["cache_read_input_tokens"] > 0
    for call, usage in zip(calls, billed, strict=True):
        assert call.cache_write_tokens == usage["cache_creation_input_tokens"]
        assert call.cache_read_tokens == usage["cache_read_input_tokens"]
    # Sonnet 5.5: $2 input, $2.50 5-minute cache writes, $0.10 cache hits, $10 output.
    expected = sum(
        u["input_tokens"] * Decimal(2)
        + u["cache_creation_input_tokens"] * Decimal("2.50")
        + u["cache_read_input_tokens"] * Decimal("0.10")
        + u["output_tokens"] * Decimal(10)
        for u in billed
    ) / Decimal(1_000_000)
    assert cost_usd("anthropic", "claude-sonnet-5-5", tally(calls), {}) == expected


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_openai_usage_with_cached_prompt_tokens_is_priced(api):
    with FakeOpenAI() as fake:
        if api == "chat":
            model, provider = "gpt-4o", make_gpt(fake, model="gpt-4o")
        else:
            model = "gpt-5.4-mini"
            provider = responses_provider(fake, model=model)
        calls = two_calls(provider, fake)
        billed = [r.usage for r in fake.requests]
    # Chat Completions: prompt_tokens and prompt_tokens_details.cached_tokens; Responses:
    # input_tokens and input_tokens_details.cached_tokens. Cached tokens are part of the prompt.
    prompt, details = ("prompt_tokens", "prompt_tokens_details")
    if api == "responses":
        prompt, details = ("input_tokens", "input_tokens_details")
    out = "completion_tokens" if api == "chat" else "output_tokens"
    cached = [u[details]["cached_tokens"] for u in billed]
    assert cached[0] == 0 and cached[1] >= 1024
    assert [c.cache_read_tokens for c in calls] == cached
    assert [c.input_tokens for c in calls] == [u[prompt] for u in billed]
    rates = {"gpt-4o": ("2.50", "1.25", "10"), "gpt-5.4-mini": ("0.75", "0.075", "4.50")}
    plain, hit, output = (Decimal(r) for r in rates[model])
    expected = sum(
        (u[prompt] - u[details]["cached_tokens"]) * plain
        + u[details]["cached_tokens"] * hit
        + u[out] * output
        for u in billed
    ) / Decimal(1_000_000)
    assert cost_usd("openai", model, tally(calls), {}) == expected


def test_unknown_models_cost_unknown_offline_costs_nothing_and_overrides_apply():
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000}
    assert cost_usd("openai", "my-local-llama", usage, {}) is None  # not 0: unknown
    assert cost_usd("offline", "rules-v1", usage, {}) == 0
    assert cost_usd("anthropic", "claude-sonnet-4-5-20250929", usage, {}) == 18  # a snapshot
    mine = {"my-local-llama": Price(Decimal(0), Decimal("0.5"))}
    assert cost_usd("openai", "my-local-llama", usage, mine) == Decimal("0.5")
    # a prefix of a priced name is not that model
    assert cost_usd("openai", "gpt-5.4-mini-tuned", usage, {}) is None


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("[1]", "must be a JSON object"),
        ("{oops", "must be a JSON object"),
        ('{"m": {"input": 1}}', "AMTP_LLM_PRICES['m']: input and output are required"),
        ('{"m": {"input": -1, "output": 1}}', "input must be a number from 0"),
        ('{"m": {"input": "1", "output": 1}}', "input must be a number from 0"),
        ('{"m": {"input": 1, "output": 1, "cache": 1}}', "unknown field(s) ['cache']"),
    ],
)
def test_a_bad_price_override_names_the_model_and_the_rule(raw, words):
    with pytest.raises(ValueError, match="AMTP_LLM_PRICES") as caught:
        parse_override(raw)
    assert words in str(caught.value)


def session(agent, model, provider="anthropic", **usage) -> dict:
    counts = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0}
    return {
        "agent": agent,
        "provider": provider,
        "model": model,
        "llm_calls": 2,
        "usage": counts | usage,
    }


@pytest.mark.django_db
def test_costs_are_stored_once_with_the_artifact_and_heals_add_up():
    run = RunFactory()
    meta = session("repo_crawler", "claude-sonnet-5-5", input_tokens=1000, output_tokens=100)
    first = artifacts.store(run, "repo_crawler_output", "s", {}, meta, "a" * 64, "CrawlRepo")
    again = artifacts.store(run, "repo_crawler_output", "s", {}, meta, "b" * 64, "CrawlRepo")
    assert again.pk == first.pk
    heals = {
        "heal_sessions": [
            session("test_engineer_heal", "gpt-4o", "openai", input_tokens=2000),
            session("test_engineer_heal", "gpt-4o", "openai", input_tokens=3000, output_tokens=7),
            session("test_engineer_heal", "llama-3-local", "openai", input_tokens=5),
        ]
    }
    artifacts.store(run, "verification_report", "s", {}, heals, "c" * 64, "VerifyTests")
    rows = {(r.agent, r.model): r for r in RunCost.objects.filter(run=run)}
    assert len(rows) == 3  # the retry added nothing; one row per agent and model
    crawler = rows["repo_crawler", "claude-sonnet-5-5"]
    assert (crawler.input_tokens, crawler.output_tokens, crawler.calls) == (1000, 100, 2)
    assert crawler.cost_usd == Decimal("0.003")  # 1000 × $2 + 100 × $10, per million
    heal = rows["test_engineer_heal", "gpt-4o"]
    assert (heal.input_tokens, heal.output_tokens, heal.calls) == (5000, 7, 4)
    assert rows["test_engineer_heal", "llama-3-local"].cost_usd is None
    total = costs.run_costs(run)
    assert total["input_tokens"] == 6005 and total["cost_usd"] is None  # unknown, not a sum


@pytest.mark.django_db
@override_settings(AMTP_LLM_PRICES={"gpt-4o": Price(Decimal(1), Decimal(2))})
def test_hostile_meta_is_counted_as_nothing_and_never_breaks_the_store():
    run = RunFactory()
    meta = session("x" * 500, "gpt-4o", "openai", input_tokens=-5, output_tokens="1e9")
    meta["usage"]["cache_write_tokens"] = True
    artifacts.store(run, "repo_crawler_output", "s", {}, meta, "d" * 64, "CrawlRepo")
    (row,) = RunCost.objects.filter(run=run)
    assert (row.agent, row.input_tokens, row.output_tokens, row.cost_usd) == ("x" * 40, 0, 0, 0)


def test_a_meta_without_sessions_has_no_cost_rows():
    assert costs.cost_rows({}) == []
    assert costs.cost_rows({"heal_sessions": ["not a session", {"usage": 3}]}) == []
    assert json.dumps(costs.cost_rows(session("a", "gpt-4o", "openai", input_tokens=1)))


@pytest.mark.django_db
def test_a_failed_attempt_s_spend_is_recorded_and_its_retry_adds_to_it():
    """An agent whose answers fail validation for good spent tokens all the same: they go with
    its error (pickled out of the agent process), onto the run's cost when the stage records
    the failure, and the attempt that then succeeds adds its own to the same row."""
    run = RunFactory()
    with FakeAnthropic() as fake:
        fake.script(['{"not": "the contract"}', '{"still": "not"}'])
        with pytest.raises(SchemaValidationError) as caught:
            generate(anthropic(fake), repairs=1)
        billed = [r.usage for r in fake.requests]
    error = pickle.loads(pickle.dumps(caught.value))  # as the worker receives it
    assert error.spent["llm_calls"] == 2
    read = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    assert error.spent["usage"]["input_tokens"] == sum(u[k] for u in billed for k in read)
    assert error.spent["usage"]["output_tokens"] == sum(u["output_tokens"] for u in billed) > 0
    stage_failure(error, str(run.pk), "generate_test_cases")
    (row,) = RunCost.objects.filter(run=run)
    assert (row.agent, row.calls, row.input_tokens) == (
        "test_case_generator",
        2,
        error.spent["usage"]["input_tokens"],
    )
    failed_cost = row.cost_usd
    assert failed_cost > 0
    meta = session("test_case_generator", "claude-sonnet-4-6", input_tokens=1000)
    kind = "test_case_generator_output"
    artifacts.store(run, kind, "s", {}, meta, "e" * 64, "GenerateTestCases")
    row.refresh_from_db()
    succeeded = cost_usd("anthropic", "claude-sonnet-4-6", meta["usage"], {})
    assert (row.calls, row.cost_usd) == (4, failed_cost + succeeded)
    assert costs.run_costs(run)["cost_usd"] == row.cost_usd


def test_an_attempt_that_spent_nothing_carries_no_spend():
    with FakeAnthropic() as fake:
        fake.script([HttpError(400)])
        with pytest.raises(Exception) as caught:
            generate(anthropic(fake))
    assert not hasattr(caught.value, "spent")
