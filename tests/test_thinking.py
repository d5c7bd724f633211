"""Thinking models through the real SDK and the strict fake: turns go back verbatim, thinking
and effort follow the settings and the model's row, and thinking never starves the answer."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from agents.crawler import crawl
from agents.errors import LlmOutputTruncated, LlmProviderRejected
from agents.providers import DEFAULT_MODELS, make_provider
from agents.providers.anthropic import NONSTREAMING_MAX, AnthropicProvider
from agents.providers.base import ProviderOptions, ToolResult, ToolSpec
from agents.runner import Budgets
from amtp_site.errors import ConfigurationError
from tests.contract_examples import RUN_ID
from tests.factories import RepositoryFactory
from tests.fakes.llm_api import FakeAnthropic, Text, ToolCall, ToolUse, tool_use
from tests.gitrepo import git, make_git_repo

CLAUDE = DEFAULT_MODELS["anthropic"]
SYSTEM = "You are the Repo Crawler. Answer with one JSON object."
HELLO = [{"role": "user", "content": '{"run_id":"r-1"}'}]
TOOLS = [
    ToolSpec("repo.tree", "List files.", {"type": "object", "properties": {}}),
    ToolSpec(
        "repo.read_file",
        "Read one file.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
]
ANSWER = '{"entry_points": ["src/main.py"]}'
# What the default model answers in a tool loop: thinking (its text omitted by default, the
# signature kept), a redacted block, a line of text, then the tool call.
RECORDED = ToolUse(
    (ToolCall("repo_read_file", {"path": "package.json"}, "toolu_01"),),
    text="Reading the manifest.",
    thinking=("The manifest names the framework.", "Then the routes."),
    redacted=True,
)


@pytest.fixture
def claude():
    with FakeAnthropic() as fake:
        yield fake


def provider(fake, **options) -> AnthropicProvider:
    options = {"model": CLAUDE, "timeout_seconds": 5.0, "max_output_tokens": 16_000} | options
    return AnthropicProvider(
        ProviderOptions(**options), agent="repo_crawler", api_key="sk-test", base_url=fake.url
    )


def ask(p, messages=HELLO, tools=TOOLS):
    return p.complete(system=SYSTEM, messages=list(messages), tools=list(tools))


def loop(p, first, turn=None):
    """The second request of a tool loop, with the assistant turn as given (default: as the
    runner keeps it)."""
    turn = turn or {
        "role": "assistant",
        "content": first.text,
        "tool_calls": first.tool_calls,
        "vendor_turn": first.vendor_turn,
    }
    results = {"role": "tool", "results": [ToolResult("toolu_01", "{}")]}
    return ask(p, [*HELLO, turn, results])


# -- turns go back as they came ----------------------------------------------------------------
def test_a_thinking_turn_goes_back_verbatim(claude):
    claude.script([RECORDED, ANSWER])
    p = provider(claude)
    first = ask(p)
    kinds = [b["type"] for b in first.vendor_turn]
    assert kinds == ["thinking", "thinking", "redacted_thinking", "text", "tool_use"]
    assert all(b["signature"] for b in first.vendor_turn[:2])
    assert first.vendor_turn[0]["thinking"] == ""  # the default display is "omitted"
    assert loop(p, first).text == ANSWER
    sent = claude.requests[1].messages[1]["content"]
    returned = claude.requests[0]
    assert sent == first.vendor_turn  # blocks, order and signatures untouched
    assert returned.json["stream"] is True  # 16,000 + room for thinking: streamed


def test_a_turn_rebuilt_from_its_text_is_refused(claude):
    """The old behaviour: text and tool_use only. The API (and the fake) answer 400."""
    claude.script([RECORDED, ANSWER])
    p = provider(claude)
    first = ask(p)
    rebuilt = {"role": "assistant", "content": first.text, "tool_calls": first.tool_calls}
    with pytest.raises(LlmProviderRejected, match="Expected `thinking` or `redacted_thinking`"):
        loop(p, first, rebuilt)


@pytest.mark.parametrize("change", ["edit", "reorder", "drop_redacted", "other_model"])
def test_an_edited_or_reordered_turn_is_refused(claude, change):
    claude.script([RECORDED, ANSWER])
    p = provider(claude)
    first = ask(p)
    blocks = json.loads(json.dumps(first.vendor_turn))
    if change == "edit":
        blocks[0]["thinking"] = "I changed my mind."
    elif change == "reorder":
        blocks[0], blocks[1] = blocks[1], blocks[0]
    elif change == "drop_redacted":
        del blocks[2]
    turn = {"role": "assistant", "content": "", "tool_calls": [], "vendor_turn": blocks}
    other = provider(claude, model="claude-opus-5") if change == "other_model" else p
    with pytest.raises(LlmProviderRejected, match="Invalid `signature` in `thinking` block"):
        loop(other, first, turn)


def test_a_paused_turn_is_sent_back_unchanged_without_prefill(claude):
    class WithSearch(AnthropicProvider):  # our agents have no server tools; a user might
        def build_request(self, **kwargs):
            request = super().build_request(**kwargs)
            request["tools"] = [
                *request["tools"],
                {"type": "web_search_20260209", "name": "web_search"},
            ]
            return request

    p = WithSearch(
        ProviderOptions(model=CLAUDE, timeout_seconds=5.0),
        agent="repo_crawler",
        api_key="sk-test",
        base_url=claude.url,
    )
    claude.script([Text('{"entry_points":', stop="pause_turn"), '["src/main.py"]}'])
    completion = ask(p)
    assert completion.text == '{"entry_points":["src/main.py"]}'
    paused = claude.requests[0]
    continued = claude.requests[1].messages
    assert len(continued) == 2 and continued[-1]["role"] == "assistant"
    assert [b["type"] for b in continued[-1]["content"]] == ["thinking", "text"]
    assert "stream" in paused.json and completion.stop_reason == "end_turn"


def test_the_fake_gives_pause_turn_only_with_server_tools(claude):
    claude.script([Text('{"entry_points":', stop="pause_turn")])
    with pytest.raises(Exception, match="pause_turn comes only with server tools"):
        ask(provider(claude))


# -- thinking, effort and max_tokens from the settings -----------------------------------------
def test_max_tokens_covers_thinking_and_the_answer(claude):
    claude.script([ANSWER, ANSWER, ANSWER])
    ask(provider(claude))
    ask(provider(claude, effort="low", max_output_tokens=4000))
    ask(provider(claude, model="claude-sonnet-4-6"))  # thinks only when asked
    default, low, old = (r.json for r in claude.requests)
    assert default["max_tokens"] == 16_000 + 32_000 > NONSTREAMING_MAX and default["stream"]
    assert "thinking" not in default and "output_config" not in default  # the model's default
    assert low["max_tokens"] == 12_000 and low["output_config"] == {"effort": "low"}
    assert "stream" not in low  # short enough not to stream
    assert old["max_tokens"] == 16_000 and "thinking" not in old and old["temperature"] == 0.1


def test_thinking_off_uses_the_models_own_word(claude):
    claude.script([ANSWER, ANSWER])
    ask(provider(claude, thinking="off"))
    ask(provider(claude, model="claude-sonnet-5", thinking="off"))
    five_five, five = (r.json for r in claude.requests)
    assert five_five["thinking"] == {"type": "between_tools"} and five_five["max_tokens"] == 16_000
    assert five["thinking"] == {"type": "disabled"}


def test_thinking_on_for_an_extended_thinking_model(claude):
    claude.script([ANSWER])
    completion = ask(provider(claude, model="claude-haiku-4-5", thinking="on", effort=None))
    request = claude.requests[0].json
    assert request["thinking"] == {"type": "enabled", "budget_tokens": 32_000}
    assert request["max_tokens"] == 48_000 and "temperature" not in request
    assert completion.vendor_turn[0]["type"] == "thinking"


@pytest.mark.parametrize(
    "options, words",
    [
        (
            {"model": "claude-opus-5-5", "thinking": "off"},
            "AMTP_THINKING_X=off: claude-opus-5-5 always thinks",
        ),
        (
            {"model": "claude-haiku-4-5", "effort": "low"},
            "AMTP_EFFORT_X='low': claude-haiku-4-5 takes no effort",
        ),
        ({"effort": "extreme"}, "AMTP_EFFORT_X='extreme' is not an effort level"),
        (
            {"thinking": "off", "effort": "max"},
            "AMTP_THINKING_X=off on claude-sonnet-5-5 (thinking between_tools) works only at "
            "effort low, medium, high, and the effort is max",
        ),
        (
            {"model": "claude-opus-5", "thinking": "off", "effort": "xhigh"},
            "AMTP_THINKING_X=off on claude-opus-5 (thinking disabled) works only at effort low",
        ),
        (
            {"model": "claude-haiku-5-5", "thinking": "off", "effort": "max"},
            "set AMTP_EFFORT_X to one of them, or AMTP_THINKING_X to auto",
        ),
        ({"thinking": "maybe"}, "AMTP_THINKING_X='maybe' is not a thinking choice"),
        ({"max_output_tokens": 200_000}, "AMTP_MAX_OUTPUT_TOKENS=200000 is outside 1..128000"),
    ],
)
def test_settings_a_model_refuses_are_configuration_errors(claude, options, words):
    names = {"thinking_setting": "AMTP_THINKING_X", "effort_setting": "AMTP_EFFORT_X"}
    with pytest.raises(ConfigurationError, match=re.escape(words)):
        provider(claude, **names, **options)
    assert claude.requests == []


def test_per_agent_settings_reach_the_request(settings, claude):
    settings.AMTP_LLM_PROVIDER, settings.ANTHROPIC_API_KEY = "anthropic", "sk-test"
    settings.ANTHROPIC_BASE_URL, settings.AMTP_LLM_MODEL, settings.AMTP_MODELS = claude.url, "", {}
    settings.AMTP_LLM_EFFORT, settings.AMTP_AGENT_EFFORT = "medium", {"test_engineer": "high"}
    settings.AMTP_LLM_THINKING, settings.AMTP_AGENT_THINKING = "auto", {"repo_crawler": "off"}
    crawler, engineer = make_provider("repo_crawler"), make_provider("test_engineer")
    assert crawler.plan.params == {
        "thinking": {"type": "between_tools"},
        "output_config": {"effort": "medium"},
    }
    assert engineer.plan.params == {"output_config": {"effort": "high"}}
    settings.AMTP_AGENT_THINKING = {"test_engineer": "off"}
    settings.AMTP_AGENT_EFFORT = {"test_engineer": "max"}
    with pytest.raises(
        ConfigurationError, match="AMTP_THINKING_TEST_ENGINEER=off .* AMTP_EFFORT_TEST_ENGINEER"
    ):
        make_provider("test_engineer")


def test_an_answer_starved_by_thinking_says_so_and_names_the_setting(claude):
    claude.script([Text("", stop="max_tokens"), Text('{"entry', stop="max_tokens")])
    p = provider(claude, effort_setting="AMTP_EFFORT_REPO_CRAWLER")
    with pytest.raises(LlmOutputTruncated) as starved:
        ask(p)
    assert "spent all max_tokens=48000 output tokens thinking" in starved.value.message
    assert "lower AMTP_EFFORT_REPO_CRAWLER" in starved.value.message
    with pytest.raises(LlmOutputTruncated, match="cut off at max_tokens=48000"):
        ask(p)


# -- the crawler: a real-shaped tool loop round-trips ------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_the_crawler_sends_each_thinking_turn_back_verbatim(tmp_path, valkey, claude):
    files = {"package.json": '{"name": "web"}', "src/main.ts": "export {};\n"}
    path = make_git_repo(tmp_path / "web", files)
    RepositoryFactory(full_name="acme/web", host="local", local_path=str(path))
    second = tool_use("repo_tree", {}, id="toolu_02")
    claude.script(
        [
            RECORDED,
            ToolUse(second.calls, thinking=("Now the tree.",)),
            json.dumps({"entry_points": [], "detected_stack": {"runtime": "node"}}),
        ]
    )
    payload = {"run_id": RUN_ID, "repo_full_name": "acme/web", "ref": "main", "depth_level": "deep"}
    result = asyncio.run(
        crawl(
            payload=payload,
            commit_sha=git(path, "rev-parse", "main"),
            budgets=Budgets(),
            repairs=0,
            provider=provider(claude),
        )
    )
    assert result.output["detected_stack"] == {"runtime": "node"}
    assert [r.status for r in claude.requests] == [200, 200, 200]
    last = claude.requests[2].messages
    turns = [m["content"] for m in last if m["role"] == "assistant"]
    assert [[b["type"] for b in t] for t in turns] == [
        ["thinking", "thinking", "redacted_thinking", "text", "tool_use"],
        ["thinking", "tool_use"],
    ]
    assert all(b.get("signature") for t in turns for b in t if b["type"] == "thinking")


@pytest.mark.parametrize("model", ["claude-opus-4-8", "claude-opus-4-7"])
def test_opus_4_7_and_4_8_think_only_when_asked(claude, model):
    """The Opus 5 migration guide: "On Claude Opus 4.8, requests without a thinking field run
    without thinking". No thinking field, no room for thinking in max_tokens, no streaming."""
    claude.script([ANSWER, ANSWER])
    plain = provider(claude, model=model)
    assert (plain.plan.thinks, plain.plan.max_tokens) == (False, 16_000)
    assert ask(plain).vendor_turn[0]["type"] == "text"
    asked = provider(claude, model=model, thinking="on")
    assert asked.plan.thinks and asked.plan.max_tokens == 16_000 + 32_000
    assert ask(asked).vendor_turn[0]["type"] == "thinking"
    first, second = (r.json for r in claude.requests)
    assert "thinking" not in first and not first.get("stream")
    assert second["thinking"] == {"type": "adaptive"}


def test_the_model_table_and_the_fake_agree_on_every_row(claude):
    """Each row of CLAUDE_SPECS against the fake's own reading of the vendor's pages: a request
    without ``thinking`` thinks exactly when the row says so; every effort the row lists is
    taken and every other is refused; with thinking off, the efforts the row allows are taken
    and the others refused. Sent with the raw SDK, so our request building plays no part."""
    import anthropic

    from agents.providers.models import CLAUDE_SPECS, EFFORTS
    from tests.fakes.llm_api import CLAUDE_MODELS

    client = anthropic.Anthropic(base_url=claude.url, api_key="sk-test", max_retries=0)
    checked = []
    for prefix, spec in CLAUDE_SPECS[:-1]:  # the last row is the catch-all "claude-"
        model = min(m for m in CLAUDE_MODELS if m.startswith(prefix))
        if any(model.startswith(p) for p, _ in CLAUDE_SPECS[: CLAUDE_SPECS.index((prefix, spec))]):
            continue  # an earlier row owns every listed model of this prefix
        checked.append(model)

        def sent(model=model, **extra):
            claude.script(["ok"])
            try:
                message = client.messages.create(
                    model=model, max_tokens=4096, messages=HELLO, **extra
                )
            except anthropic.BadRequestError:
                return None
            return message

        try:
            answer = sent()
        except anthropic.NotFoundError:  # retired by the SDK's DEPRECATED_MODELS dates
            checked.pop()
            continue
        assert answer is not None, model
        assert (answer.content[0].type == "thinking") == spec.thinks_by_default, model
        for effort in EFFORTS:
            taken = sent(output_config={"effort": effort}) is not None
            assert taken == (effort in spec.efforts), (model, effort)
        if spec.off and spec.mode == "adaptive":
            for effort in spec.efforts:
                off = {"thinking": {"type": spec.off}, "output_config": {"effort": effort}}
                allowed = spec.off_efforts is None or effort in spec.off_efforts
                assert (sent(**off) is not None) == allowed, (model, effort)
    assert {"claude-opus-4-8", "claude-opus-5", "claude-haiku-5-5", "claude-sonnet-4-6"} <= set(
        checked
    )


def test_the_docs_show_the_model_table_the_code_uses():
    from pathlib import Path

    from agents.providers.models import claude_table

    page = (Path(__file__).resolve().parent.parent / "docs" / "providers.md").read_text()
    assert claude_table() in page, "docs/providers.md: paste models.claude_table() over the table"
