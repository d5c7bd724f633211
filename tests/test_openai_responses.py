"""OpenAI's Responses API for hosted reasoning models, through the real SDK and the strict
fake: chosen by the model table, reasoning items sent back verbatim between turns."""

from __future__ import annotations

import openai
import pytest

from agents.errors import LlmOutputTruncated, LlmProviderRejected
from agents.providers.base import ProviderOptions, ToolResult, ToolSpec
from agents.providers.openai import OpenAIProvider
from agents.runner import assistant_turn
from amtp_site.errors import ConfigurationError
from tests.fakes.llm_api import FakeOpenAI, Text, tool_use

MODEL = "gpt-5.6-terra"  # refuses function tools on Chat Completions
SYSTEM = "You are the Repo Crawler. Answer with one JSON object."
HELLO = [{"role": "user", "content": '{"run_id":"r-1"}'}]
TOOLS = [ToolSpec("repo.tree", "List files.", {"type": "object", "properties": {}})]
ANSWER = '{"entry_points": []}'


@pytest.fixture
def gpt():
    with FakeOpenAI() as fake:
        yield fake


def provider(fake, api="responses", **options):
    options = {"model": MODEL, "timeout_seconds": 5.0} | options
    return OpenAIProvider(
        ProviderOptions(**options),
        agent="repo_crawler",
        api_key="sk-test",
        base_url=fake.url + "/v1",
        api=api,
    )


def ask(p, messages=HELLO, tools=TOOLS):
    return p.complete(system=SYSTEM, messages=list(messages), tools=list(tools))


def test_the_model_table_picks_the_api():
    hosted = {"api_key": "sk-test", "agent": "repo_crawler"}
    for model, api in (
        ("gpt-5.6-terra", "responses"),
        ("gpt-5.4-mini", "responses"),
        ("gpt-4o", "chat"),
    ):
        assert OpenAIProvider(ProviderOptions(model=model), **hosted).api == api
    local = OpenAIProvider(
        ProviderOptions(model="gpt-5.6-terra"), base_url="http://localhost:11434/v1", **hosted
    )
    assert local.api == "chat"  # a server of one's own speaks Chat Completions


def test_a_tool_loop_sends_the_reasoning_items_back_verbatim(gpt):
    gpt.script([tool_use("repo_tree", {}, id="call_1"), ANSWER])
    p = provider(gpt)
    first = ask(p)
    assert [i["type"] for i in first.vendor_turn] == ["reasoning", "function_call"]
    assert first.vendor_turn[0]["encrypted_content"]
    assert [(c.id, c.name) for c in first.tool_calls] == [("call_1", "repo.tree")]
    results = {"role": "tool", "results": [ToolResult("call_1", "src/main.py")]}
    second = ask(p, [*HELLO, assistant_turn(first), results])
    assert second.text == ANSWER and second.stop_reason == "end_turn"
    request = gpt.requests[1].json
    assert request["input"][1:3] == first.vendor_turn
    assert request["input"][3] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "src/main.py",
    }
    assert request["instructions"] == SYSTEM and request["store"] is False
    assert request["include"] == ["reasoning.encrypted_content"]
    assert request["tools"][0]["name"] == "repo_tree" and "temperature" not in request
    assert gpt.requests[1].path == "/v1/responses"


def test_a_turn_with_text_goes_back_without_its_message_id(gpt):
    """Under store: false a prior message's msg_* id names nothing on the server: sent back, it
    is a 404 (vercel/ai#7543); the reasoning item (with its encrypted content) and the
    function call keep theirs, which pair them."""
    gpt.script([tool_use("repo_tree", {}, id="call_1", text="Listing files."), ANSWER])
    p = provider(gpt)
    first = ask(p)
    assert [i["type"] for i in first.vendor_turn] == ["reasoning", "message", "function_call"]
    assert first.vendor_turn[1]["id"].startswith("msg_")
    results = {"role": "tool", "results": [ToolResult("call_1", "src/main.py")]}
    assert ask(p, [*HELLO, assistant_turn(first), results]).text == ANSWER
    sent = gpt.requests[1].json["input"][1:4]
    assert "id" not in sent[1] and sent[1]["content"] == first.vendor_turn[1]["content"]
    assert sent[0] == first.vendor_turn[0] and sent[2] == first.vendor_turn[2]
    client = openai.OpenAI(base_url=gpt.url + "/v1", api_key="sk-test", max_retries=0)
    with pytest.raises(openai.NotFoundError, match="Items are not persisted when `store`"):
        client.responses.create(
            model=MODEL,
            input=[*gpt.requests[1].json["input"][:1], first.vendor_turn[1]],
            store=False,
        )


def test_a_turn_without_its_reasoning_item_is_refused(gpt):
    gpt.script([tool_use("repo_tree", {}, id="call_1"), ANSWER])
    p = provider(gpt)
    first = ask(p)
    turn = {
        "role": "assistant",
        "content": "",
        "tool_calls": [],
        "vendor_turn": first.vendor_turn[1:],
    }
    results = {"role": "tool", "results": [ToolResult("call_1", "x")]}
    with pytest.raises(LlmProviderRejected, match="without its required 'reasoning' item"):
        ask(p, [*HELLO, turn, results])


def test_chat_completions_would_refuse_the_tools(gpt):
    with pytest.raises(LlmProviderRejected, match="use /v1/responses"):
        ask(provider(gpt, api="chat"))


def test_structured_output_effort_and_truncation(gpt):
    gpt.script([ANSWER, Text('{"entry', truncated=True)])
    schema = {"title": "RepoCrawlerAnswer", "type": "object"}
    p = provider(gpt, output_schema=schema, effort="low")
    assert ask(p, tools=[]).text == ANSWER
    request = gpt.requests[0].json
    assert request["text"]["format"]["type"] == "json_schema"
    assert request["text"]["format"]["name"] == "RepoCrawlerAnswer"
    assert request["reasoning"] == {"effort": "low"}
    with pytest.raises(LlmOutputTruncated, match="AMTP_MAX_OUTPUT_TOKENS"):
        ask(p, tools=[])


def test_an_effort_openai_does_not_take_names_the_setting(gpt):
    with pytest.raises(ConfigurationError, match="AMTP_EFFORT_REPO_CRAWLER='extreme'"):
        provider(gpt, effort="extreme", effort_setting="AMTP_EFFORT_REPO_CRAWLER")
    # `minimal` was gpt-5's alone; the 5.x family refuses it (and so does the fake).
    with pytest.raises(ConfigurationError, match="AMTP_EFFORT_X='minimal': gpt-5.4-mini"):
        provider(gpt, model="gpt-5.4-mini", effort="minimal", effort_setting="AMTP_EFFORT_X")
    assert gpt.requests == []
    gpt.script([ANSWER])
    assert ask(provider(gpt, effort="max"), tools=[]).text == ANSWER  # in the SDK's list
    assert gpt.requests[0].json["reasoning"] == {"effort": "max"}
    client = openai.OpenAI(base_url=gpt.url + "/v1", api_key="sk-test", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="'minimal' is not supported"):
        client.responses.create(model="gpt-5.4-mini", input="hi", reasoning={"effort": "minimal"})
