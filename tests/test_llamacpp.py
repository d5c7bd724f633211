"""llama-cpp-python's server, as the fake's ``llamacpp`` flavour answers like it (each rule seen
on the real server by ``make llama``), and our OpenAI provider working with it: a tool round
trip, structured outputs switched off, the context overflow."""

from __future__ import annotations

import json

import openai
import pytest

from agents.errors import LlmContextOverflow, LlmProviderError
from agents.providers import make_provider
from agents.providers.base import ProviderOptions, ToolResult, ToolSpec
from agents.providers.openai import OpenAIProvider
from agents.runner import assistant_turn
from tests.fakes.llm_api import FakeOpenAI, Text, tool_use

SYSTEM = "You map a repository."
ASK = [{"role": "user", "content": "List the root."}]
TREE = ToolSpec("repo.tree", "List files.", {"type": "object", "properties": {}})
SCHEMA = {"type": "object", "properties": {"entry_points": {"type": "array"}}}
TOOL = {
    "type": "function",
    "function": {"name": "repo_tree", "parameters": {"type": "object", "properties": {}}},
}


@pytest.fixture
def llama():
    with FakeOpenAI(flavour="llamacpp", context_window=2048) as fake:
        yield fake


@pytest.fixture
def client(llama):
    return openai.OpenAI(base_url=llama.url + "/v1", api_key="x", max_retries=0)


def provider(fake, **options) -> OpenAIProvider:
    structured = options.pop("structured_outputs", True)
    return OpenAIProvider(
        ProviderOptions(model="smollm2", timeout_seconds=5.0, **options),
        agent="repo_crawler",
        api_key="",
        base_url=fake.url + "/v1",
        structured_outputs=structured,
    )


def test_a_tool_round_trip_works_on_llama_cpp(llama):
    # Before: no tool_choice (the server left the tools out and answered text) and the
    # tool-calling turn sent back with content null (a 500).
    llama.script([tool_use("repo_tree", {}), Text('{"entry_points": []}')])
    agent = provider(llama)
    first = agent.complete(system=SYSTEM, messages=ASK, tools=[TREE])
    assert [call.name for call in first.tool_calls] == ["repo.tree"]
    assert first.tool_calls[0].id.startswith("call__0_repo_tree_cmpl-")
    results = {"role": "tool", "results": [ToolResult(first.tool_calls[0].id, "README.md")]}
    second = agent.complete(
        system=SYSTEM, messages=[*ASK, assistant_turn(first), results], tools=[TREE]
    )
    assert second.text == '{"entry_points": []}' and not llama.pending
    sent = llama.requests[1].json
    assert sent["tool_choice"] == "auto" and sent["messages"][2]["content"] == ""


def test_without_tool_choice_llama_cpp_answers_text(client, llama):
    llama.script([tool_use("repo_tree", {}, text="I would look."), tool_use("repo_tree", {})])
    plain = client.chat.completions.create(model="m", messages=ASK, tools=[TOOL])
    assert plain.choices[0].message.tool_calls is None
    assert plain.choices[0].message.content == "I would look."
    asked = client.chat.completions.create(
        model="m", messages=ASK, tools=[TOOL], tool_choice="auto"
    )
    assert asked.choices[0].finish_reason == "tool_calls"
    raw = asked.choices[0].message
    assert raw.function_call.name == "repo_tree:"  # llama-cpp-python's legacy mirror, as sent


@pytest.mark.parametrize(
    "turn, words",
    [
        ({"role": "assistant", "content": None}, "ChatCompletionRequestAssistantMessage"),
        ({"role": "assistant"}, "'dict object' has no attribute 'content'"),
    ],
)
def test_llama_cpp_answers_a_turn_without_string_content_with_a_500(client, llama, turn, words):
    call = {"id": "c1", "type": "function", "function": {"name": "repo_tree", "arguments": "{}"}}
    messages = [*ASK, turn | {"tool_calls": [call]}, {"role": "tool", "tool_call_id": "c1"}]
    messages[-1]["content"] = "README.md"
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="m", messages=messages, tools=[TOOL])
    assert words in caught.value.message
    assert caught.value.response.headers.get("x-should-retry") is None  # as the real one


def test_json_schema_is_a_500_and_structured_outputs_can_be_switched_off(llama, settings):
    llama.script(['{"entry_points": []}'])
    with pytest.raises(LlmProviderError, match="Input should be 'text' or 'json_object'"):
        provider(llama, output_schema=SCHEMA).complete(system=SYSTEM, messages=ASK, tools=[])
    assert llama.pending  # refused before any answer was made

    settings.AMTP_LLM_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = llama.url + "/v1"
    settings.OPENAI_STRUCTURED_OUTPUTS = False
    agent = make_provider("test_case_generator", output_schema=SCHEMA)
    assert agent.complete(system=SYSTEM, messages=ASK, tools=[]).text == '{"entry_points": []}'
    assert "response_format" not in llama.requests[-1].json


def test_a_prompt_that_fills_the_window_is_refused_as_llama_cpp_words_it(llama):
    long = [{"role": "user", "content": "word " * 1700}]  # 2,125 of the fake's tokens
    with pytest.raises(LlmContextOverflow) as caught:
        provider(llama, max_output_tokens=100).complete(system=SYSTEM, messages=long, tools=[])
    error = caught.value.details
    assert error["status"] == 400 and error["error_code"] == "context_length_exceeded"
    body = json.loads(llama.requests[0].body)
    assert body["max_tokens"] == 100
    assert "maximum context length is 2048 tokens. However, you requested" in str(caught.value)
    assert "100 in the completion" in str(caught.value)
