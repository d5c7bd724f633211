"""The Anthropic fake is as strict as the API: each test here fails against the lenient fake of
before (issue 28), and each refusal is worded as the API words it (tests/fakes/claude_rules.py
names the sources)."""

from __future__ import annotations

import anthropic
import pytest

from tests.fakes.llm_api import FakeAnthropic, Text, tool_use

HELLO = [{"role": "user", "content": "hello"}]
TOOL = {"name": "read_file", "description": "Read.", "input_schema": {"type": "object"}}


@pytest.fixture
def claude():
    with FakeAnthropic() as fake:
        yield fake, anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=0)


def ask(client, **overrides):
    kwargs = {"model": "claude-sonnet-5-5", "max_tokens": 1024, "messages": HELLO} | overrides
    return client.messages.create(**kwargs)


def refused(client, words, **overrides):
    with pytest.raises(anthropic.BadRequestError) as caught:
        ask(client, **overrides)
    assert words in caught.value.api_message, caught.value.api_message
    assert caught.value.body["type"] == "error"  # the API's error body shape
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    return caught.value


def test_current_models_think_by_default_and_older_ones_do_not(claude):
    fake, client = claude
    fake.script(["ok", "ok", "ok"])
    current = ask(client)
    older = ask(client, model="claude-sonnet-4-6")
    asked = ask(client, model="claude-sonnet-4-6", thinking={"type": "adaptive"})
    assert [b.type for b in current.content] == ["thinking", "text"]
    assert current.content[0].signature and current.content[0].thinking == ""  # omitted
    assert [b.type for b in older.content] == ["text"]
    assert asked.content[0].type == "thinking" and asked.content[0].thinking  # summarized


@pytest.mark.parametrize(
    "model", ["claude-sonnet-4-6", "claude-opus-4-6", "claude-sonnet-5-5", "claude-fable-5"]
)
def test_prefill_is_refused_from_the_4_6_models_on(claude, model):
    fake, client = claude
    messages = [*HELLO, {"role": "assistant", "content": '{"verdict":'}]
    refused(client, "does not support assistant message prefill", model=model, messages=messages)


def test_a_prefill_ending_in_whitespace_is_refused_on_every_model(claude):
    fake, client = claude
    fake.script(["ok"])
    prefill = [*HELLO, {"role": "assistant", "content": '{"verdict": '}]
    refused(
        client, "cannot end with trailing whitespace", model="claude-haiku-4-5", messages=prefill
    )
    prefill[-1]["content"] = '{"verdict":'
    assert ask(client, model="claude-haiku-4-5", messages=prefill).content[0].text == "ok"


@pytest.mark.parametrize(
    "model, max_tokens, words",
    [
        ("claude-sonnet-5-5", 0, "max_tokens: Input should be greater than or equal to 1"),
        ("claude-sonnet-5-5", 128_001, "max_tokens: 128001 > 128000, which is the maximum"),
        (
            "claude-haiku-4-5",
            64_001,
            "64001 > 64000, which is the maximum allowed number of output tokens for claude-haiku-4-5",
        ),
    ],
)
def test_max_tokens_outside_the_models_range_is_refused(claude, model, max_tokens, words):
    fake, client = claude
    refused(client, words, model=model, max_tokens=max_tokens, stream=max_tokens > 21_333)


def test_a_tool_schema_must_be_an_object(claude):
    fake, client = claude
    tool = {**TOOL, "input_schema": {"type": "array"}}
    refused(client, "tools.0.custom.input_schema.type: Input should be 'object'", tools=[tool])


def test_empty_content_is_refused_except_in_a_final_assistant_message(claude):
    fake, client = claude
    messages = [{"role": "user", "content": ""}, {"role": "assistant", "content": "x"}, *HELLO]
    refused(client, "messages.0: all messages must have non-empty content", messages=messages)
    blocks = [{"role": "user", "content": [{"type": "text", "text": ""}]}]
    refused(client, "text content blocks must be non-empty", messages=blocks)


@pytest.mark.parametrize(
    "model, thinking, effort, words",
    [
        ("claude-sonnet-5-5", {"type": "disabled"}, None, 'Use "thinking.type.between_tools"'),
        (
            "claude-opus-5-5",
            {"type": "disabled"},
            None,
            '"thinking.type.disabled" is not supported',
        ),
        (
            "claude-sonnet-5",
            {"type": "enabled", "budget_tokens": 2000},
            None,
            '"thinking.type.enabled" is not supported',
        ),
        (
            "claude-sonnet-5",
            {"type": "between_tools"},
            None,
            '"thinking.type.between_tools" is not supported',
        ),
        ("claude-sonnet-5-5", {"type": "between_tools"}, "max", 'not supported with effort "max"'),
        (
            "claude-haiku-4-5",
            {"type": "adaptive"},
            None,
            '"thinking.type.adaptive" is not supported',
        ),
        ("claude-haiku-4-5", None, "low", 'output_config.effort: "low" is not supported'),
    ],
)
def test_thinking_settings_a_model_refuses(claude, model, thinking, effort, words):
    fake, client = claude
    extra = {"thinking": thinking} if thinking else {}
    if effort:
        extra["output_config"] = {"effort": effort}
    refused(client, words, model=model, **extra)


def test_thinking_refuses_temperature(claude):
    fake, client = claude
    refused(
        client,
        "`temperature` may only be set to 1 when thinking is enabled",
        model="claude-sonnet-4-6",
        thinking={"type": "adaptive"},
        extra_body={"temperature": 0.1},
    )


def test_a_thinking_turn_sent_back_is_checked_block_by_block(claude):
    fake, client = claude
    fake.script([tool_use("read_file", {"path": "a"}, id="toolu_1"), "done", "done"])
    first = ask(client, tools=[TOOL])
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "A"}],
    }
    verbatim = [b.to_dict() for b in first.content]
    # As it came: accepted.
    ask(client, tools=[TOOL], messages=[*HELLO, {"role": "assistant", "content": verbatim}, result])
    # Without its thinking block: "Expected `thinking` or `redacted_thinking`".
    dropped = [{"role": "assistant", "content": verbatim[1:]}]
    refused(
        client,
        "messages.1.content.0.type: Expected `thinking`",
        tools=[TOOL],
        messages=[*HELLO, *dropped, result],
    )
    # Its signature from another model: invalid.
    refused(
        client,
        "messages.1.content.0: Invalid `signature` in `thinking` block",
        model="claude-opus-5",
        tools=[TOOL],
        messages=[*HELLO, {"role": "assistant", "content": verbatim}, result],
    )
    # Thinking turned off on the follow-up: the old turn may then be rebuilt.
    off = {"type": "between_tools"}
    ask(client, tools=[TOOL], thinking=off, messages=[*HELLO, *dropped, result])


def test_pause_turn_comes_only_with_server_tools(claude):
    fake, client = claude
    fake.script([Text("partial", stop="pause_turn")] * 2)
    with pytest.raises(anthropic.InternalServerError, match="only with server tools"):
        ask(client)
    search = {"type": "web_search_20260209", "name": "web_search"}
    paused = ask(client, tools=[search])
    assert paused.stop_reason == "pause_turn"


def test_the_fake_streams_like_the_api(claude):
    fake, client = claude
    fake.script([tool_use("read_file", {"path": "a"}, id="toolu_9", text="Reading.")])
    with client.messages.stream(
        model="claude-sonnet-5-5", max_tokens=40_000, messages=HELLO, tools=[TOOL]
    ) as stream:
        message = stream.get_final_message()
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    assert message.content[0].signature and message.content[2].input == {"path": "a"}
    assert message.stop_reason == "tool_use" and message.usage.output_tokens > 1
