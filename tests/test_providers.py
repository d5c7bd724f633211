"""The Anthropic and OpenAI providers, through the real SDKs against the loopback fakes."""

from __future__ import annotations

import json
import time

import anthropic
import openai
import pytest

import agents.providers as providers_module
import agents.providers.anthropic as anthropic_module
import agents.providers.openai as openai_module
import agents.providers.vendor as vendor_module
from agents.providers import make_provider
from agents.providers.anthropic import AnthropicProvider
from agents.providers.base import SEED, ProviderOptions, ToolCall, ToolResult, ToolSpec
from agents.providers.openai import INVALID_ARGUMENTS_KEY, OpenAIProvider
from amtp_site.errors import ConfigurationError, LlmProviderError, LlmProviderRejected
from tests.fakes.llm_api import (
    FakeAnthropic,
    FakeOpenAI,
    HttpError,
    Text,
    ToolUse,
    tool_results,
    tool_use,
)
from tests.fakes.llm_api import ToolCall as FakeCall

KEY = "sk-test-Secret0123456789wxyz"
SYSTEM = "You are the Repo Crawler. Answer with one JSON object."
FIRST = '{"payload":{"depth_level":"shallow"},"run_id":"r-1"}'
HELLO = [{"role": "user", "content": FIRST}]
TOOLS = [
    ToolSpec(
        "repo.tree",
        "List the filtered file tree.",
        {"type": "object", "properties": {"path": {"type": "string"}}},
    ),
    ToolSpec(
        "repo.read_file",
        "Read one file.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
]
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "RepoCrawlerAnswer",
    "type": "object",
    "required": ["entry_points"],
    "additionalProperties": False,
    "properties": {"entry_points": {"type": "array", "items": {"type": "string"}}},
}
ANSWER = '{"entry_points": ["src/main.py"]}'


def options(**overrides) -> ProviderOptions:
    return ProviderOptions(**({"model": "model-x", "timeout_seconds": 5.0} | overrides))


@pytest.fixture
def claude():
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def gpt():
    with FakeOpenAI() as fake:
        yield fake


def make_claude(fake, **overrides) -> AnthropicProvider:
    return AnthropicProvider(
        options(**overrides), agent="repo_crawler", api_key=KEY, base_url=fake.url
    )


def make_gpt(fake, *, structured_outputs=True, **overrides) -> OpenAIProvider:
    return OpenAIProvider(
        options(**overrides),
        agent="repo_crawler",
        api_key=KEY,
        base_url=fake.url + "/v1",
        structured_outputs=structured_outputs,
    )


def ask(provider, messages=HELLO, tools=()):
    return provider.complete(system=SYSTEM, messages=list(messages), tools=list(tools))


def round_trip(provider, fake, first_reply, results):
    """Ask once (the model calls tools), answer the calls as the runner does, ask again."""
    fake.script([first_reply, ANSWER])
    first = ask(provider, tools=TOOLS)
    conversation = HELLO + [
        {"role": "assistant", "content": first.text, "tool_calls": first.tool_calls},
        {"role": "tool", "results": results(first.tool_calls)},
    ]
    second = ask(provider, conversation, tools=TOOLS)
    assert second.text == ANSWER and not second.tool_calls and not fake.pending
    return first, fake.requests[1]


# -- request shapes ----------------------------------------------------------------------------
def test_anthropic_one_turn_request_and_usage(claude):
    claude.script([ANSWER])
    completion = ask(make_claude(claude, temperature=0.2, max_output_tokens=2048))

    (request,) = claude.requests
    assert request.system == SYSTEM and isinstance(request.json.get("system"), str)
    assert request.messages == [{"role": "user", "content": FIRST}]  # no system turn in there
    assert request.json.get("temperature") == 0.2  # sent through extra_body
    assert "top_p" not in request.json  # defaults to 1; newer models refuse both set at once
    assert request.json.get("model") == "model-x" and request.json.get("max_tokens") == 2048
    assert "tools" not in request.json and "output_config" not in request.json
    assert completion.text == ANSWER and completion.tool_calls == []
    assert completion.input_tokens > 0 and completion.output_tokens > 0
    assert completion.stop_reason == "end_turn"


def test_openai_one_turn_request_and_usage(gpt):
    gpt.script([ANSWER])
    completion = ask(make_gpt(gpt, max_output_tokens=2048))

    (request,) = gpt.requests
    assert request.messages == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": FIRST},
    ]
    assert request.json.get("temperature") == 0.1 and request.json.get("top_p") == 1
    assert request.json.get("seed") == SEED
    assert request.json.get("max_tokens") == 2048  # a compatible server: the name they all know
    assert "tools" not in request.json and "response_format" not in request.json
    assert completion.text == ANSWER and completion.tool_calls == []
    assert completion.input_tokens > 0 and completion.output_tokens > 0
    assert completion.stop_reason == "end_turn"


def test_openai_hosted_uses_max_completion_tokens():
    provider = OpenAIProvider(options(), agent="repo_crawler", api_key=KEY)
    request = provider.build_request(system=SYSTEM, messages=HELLO, tools=[])
    assert request["max_completion_tokens"] == 8192 and "max_tokens" not in request


def test_temperature_above_the_spec_limit_is_refused(claude):
    with pytest.raises(ValueError, match="0.2"):
        make_claude(claude, temperature=0.3)


def test_tools_are_listed_with_vendor_names(claude, gpt):
    claude.script([ANSWER])
    gpt.script([ANSWER])
    ask(make_claude(claude), tools=TOOLS)
    ask(make_gpt(gpt), tools=TOOLS)

    for fake in (claude, gpt):
        (request,) = fake.requests
        assert request.tool_names == ["repo_tree", "repo_read_file"]
        assert not any("." in name for name in request.tool_names)
    assert claude.requests[0].json["tools"][1]["input_schema"] == TOOLS[1].input_schema
    function = gpt.requests[0].json["tools"][1]
    assert function["type"] == "function"
    assert function["function"]["parameters"] == TOOLS[1].input_schema
    # No structured output alongside tools: the answer turn comes after the tool turns.
    assert "output_config" not in claude.requests[0].json
    assert "response_format" not in gpt.requests[0].json


def test_anthropic_structured_output(claude):
    claude.script([ANSWER])
    ask(make_claude(claude, output_schema=SCHEMA))

    output_format = claude.requests[0].json["output_config"]["format"]
    assert output_format["type"] == "json_schema"
    assert output_format["schema"]["properties"]["entry_points"]["type"] == "array"
    assert output_format["schema"]["additionalProperties"] is False


def test_openai_structured_output_and_its_switch(gpt):
    gpt.script([ANSWER, ANSWER])
    ask(make_gpt(gpt, output_schema=SCHEMA))
    ask(make_gpt(gpt, output_schema=SCHEMA, structured_outputs=False))

    assert gpt.requests[0].json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "RepoCrawlerAnswer", "schema": SCHEMA, "strict": False},
    }
    assert "response_format" not in gpt.requests[1].json  # for servers without support


# -- tool use round trips ----------------------------------------------------------------------
def test_anthropic_tool_round_trip(claude):
    calls = (
        FakeCall("repo_tree", {"path": ""}, "toolu_1"),
        FakeCall("repo_read_file", {}, "toolu_2"),
    )
    first, request = round_trip(
        make_claude(claude),
        claude,
        ToolUse(calls, text="Looking at the tree."),
        lambda calls: [
            ToolResult(calls[0].id, "src/\nsrc/main.py"),
            ToolResult(calls[1].id, "path is required", is_error=True),
        ],
    )

    assert first.tool_calls == [
        ToolCall("toolu_1", "repo.tree", {"path": ""}),
        ToolCall("toolu_2", "repo.read_file", {}),
    ]
    assert first.text == "Looking at the tree." and first.stop_reason == "tool_use"
    assistant, results = request.messages[1:]
    assert assistant["content"][0] == {"type": "text", "text": "Looking at the tree."}
    assert [(b["id"], b["name"]) for b in assistant["content"][1:]] == [
        ("toolu_1", "repo_tree"),
        ("toolu_2", "repo_read_file"),
    ]
    assert tool_results(request.json) == {
        "toolu_1": "src/\nsrc/main.py",
        "toolu_2": "path is required",
    }
    assert [b["is_error"] for b in results["content"]] == [False, True]
    assert results["role"] == "user" and request.system == SYSTEM


def test_openai_tool_round_trip(gpt):
    first, request = round_trip(
        make_gpt(gpt),
        gpt,
        tool_use("repo_tree", {"path": "src"}, id="call_1"),
        lambda calls: [ToolResult(calls[0].id, "denied", is_error=True)],
    )

    assert first.tool_calls == [ToolCall("call_1", "repo.tree", {"path": "src"})]
    assert first.stop_reason == "tool_use"
    system, user, assistant, tool = request.messages
    assert system["role"] == "system" and user == {"role": "user", "content": FIRST}
    (call,) = assistant["tool_calls"]
    assert call["id"] == "call_1" and call["function"]["name"] == "repo_tree"
    assert json.loads(call["function"]["arguments"]) == {"path": "src"}
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "Error: denied"}


def test_openai_malformed_tool_arguments_reach_the_runner_as_a_bad_call(gpt):
    raw = '{"path": "src'  # cut off mid-string
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_9",
                "type": "function",
                "function": {"name": "repo_tree", "arguments": raw},
            }
        ],
    }
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "model-x",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    # An HttpError with status 200 and a body sends a hand-made completion.
    first, request = round_trip(
        make_gpt(gpt),
        gpt,
        HttpError(200, body=body),
        lambda calls: [ToolResult(calls[0].id, "invalid arguments", is_error=True)],
    )

    assert first.tool_calls == [ToolCall("call_9", "repo.tree", {INVALID_ARGUMENTS_KEY: raw})]
    assert first.input_tokens == 0  # no usage in that body: counted as zero, not a crash
    assert request.messages[2]["tool_calls"][0]["function"]["arguments"] == raw  # verbatim


def test_openai_truncated_answer_is_reported_as_max_tokens(gpt):
    gpt.script([Text("x" * 400, truncated=True)])
    assert ask(make_gpt(gpt)).stop_reason == "max_tokens"


VENDORS = [(make_claude, FakeAnthropic), (make_gpt, FakeOpenAI)]


# -- errors ------------------------------------------------------------------------------------
def assert_no_key(exc: Exception) -> None:
    for text in (str(exc), repr(exc), json.dumps(exc.to_dict(), default=str)):
        assert KEY not in text and KEY[-4:] not in text
    # No SDK exception (carrying the request and its auth header) rides along as a cause.
    assert exc.__cause__ is None and exc.__suppress_context__


@pytest.mark.parametrize("make, fake_class", VENDORS)
def test_rate_limit_is_retryable_with_retry_after(make, fake_class):
    with fake_class() as fake:
        fake.script([HttpError(429, "Slow down, please.", retry_after=7)])
        with pytest.raises(LlmProviderError) as caught:
            ask(make(fake))
    exc = caught.value
    assert exc.retryable and exc.details["status"] == 429
    assert exc.details["retry_after"] == 7.0
    assert "429" in exc.message and "Slow down, please." in exc.message
    assert_no_key(exc)


@pytest.mark.parametrize(
    "make, fake_class, status",
    [(make_claude, FakeAnthropic, 500), (make_claude, FakeAnthropic, 529)]
    + [(make_gpt, FakeOpenAI, 500), (make_gpt, FakeOpenAI, 503)],
)
def test_server_errors_are_retryable(make, fake_class, status):
    with fake_class() as fake:
        fake.script([HttpError(status)])
        with pytest.raises(LlmProviderError) as caught:
            ask(make(fake))
    assert caught.value.retryable and caught.value.details["status"] == status
    assert str(status) in caught.value.message
    if status == 529:
        assert "overloaded_error: Overloaded" in caught.value.message


@pytest.mark.parametrize(
    "make, fake_class, status",
    [(make, fake_class, status) for make, fake_class in VENDORS for status in (400, 401, 403, 404)],
)
def test_client_errors_are_rejected_without_leaking_the_key(make, fake_class, status):
    # The vendor echoing the key, whole and masked, must not reach our message.
    masked = KEY[:6] + "*" * 12 + KEY[-4:]
    vendor_message = f"Incorrect API key provided: {masked}. Also {KEY}."
    with fake_class() as fake:
        fake.script([HttpError(status, vendor_message)])
        with pytest.raises(LlmProviderRejected) as caught:
            ask(make(fake))
    exc = caught.value
    assert not exc.retryable and exc.details["status"] == status
    assert f"{fake.vendor} {status}" in exc.message and "Incorrect API key provided" in exc.message
    assert_no_key(exc)


@pytest.mark.parametrize("make, fake_class", VENDORS)
def test_timeout_is_retryable(make, fake_class):
    def slow(_request):
        time.sleep(1.0)
        return ANSWER

    with fake_class() as fake:
        fake.script([slow])
        with pytest.raises(LlmProviderError, match="no answer within 0.2 s") as caught:
            ask(make(fake, timeout_seconds=0.2))
    assert_no_key(caught.value)


@pytest.mark.parametrize("provider_class", [AnthropicProvider, OpenAIProvider])
def test_connection_failure_is_retryable(provider_class):
    with FakeAnthropic() as fake:  # started then stopped: a port nobody listens on
        url = fake.url
    provider = provider_class(options(), agent="repo_crawler", api_key=KEY, base_url=url)
    with pytest.raises(LlmProviderError, match="connection failed") as caught:
        ask(provider)
    assert_no_key(caught.value)


# -- sessions ----------------------------------------------------------------------------------
def test_a_new_sdk_client_per_provider_instance(claude, gpt):
    claude_a, claude_b = make_claude(claude), make_claude(claude)
    gpt_a, gpt_b = make_gpt(gpt), make_gpt(gpt)
    assert isinstance(claude_a._client, anthropic.Anthropic)
    assert isinstance(gpt_a._client, openai.OpenAI)
    assert claude_a._client is not claude_b._client and gpt_a._client is not gpt_b._client
    for module, client_class in (
        (anthropic_module, anthropic.Anthropic),
        (openai_module, openai.OpenAI),
    ):
        assert not [value for value in vars(module).values() if isinstance(value, client_class)]


def test_missing_keys_are_configuration_errors_naming_the_setting(gpt):
    with pytest.raises(ConfigurationError) as caught:
        AnthropicProvider(options(), agent="repo_crawler", api_key="")
    assert caught.value.message == anthropic_module.MISSING_KEY
    assert "ANTHROPIC_API_KEY" in caught.value.message
    with pytest.raises(ConfigurationError) as caught:
        OpenAIProvider(options(), agent="repo_crawler", api_key="")
    assert caught.value.message == openai_module.MISSING_KEY
    assert "OPENAI_API_KEY" in caught.value.message and "OPENAI_BASE_URL" in caught.value.message
    assert not caught.value.retryable
    # A local server needs no key; the SDK still wants one, so a placeholder is sent.
    gpt.script([ANSWER])
    local = OpenAIProvider(options(), agent="repo_crawler", api_key="", base_url=gpt.url + "/v1")
    assert ask(local).text == ANSWER
    assert (
        gpt.requests[0].headers["authorization"] == f"Bearer {openai_module.LOCAL_PLACEHOLDER_KEY}"
    )


@pytest.mark.parametrize("provider_class", [AnthropicProvider, OpenAIProvider])
@pytest.mark.parametrize("url", ["localhost:11434/v1", "ftp://example.com", "http//x"])
def test_a_base_url_that_cannot_work_is_a_configuration_error(provider_class, url):
    with pytest.raises(ConfigurationError) as caught:
        provider_class(options(), agent="repo_crawler", api_key=KEY, base_url=url)
    setting = f"{provider_class.settings_prefix}_BASE_URL"
    assert caught.value.message == vendor_module.BAD_BASE_URL.format(
        setting=setting, url=url, example=provider_class.example_base_url
    )
    assert caught.value.message.startswith(f"{setting}={url!r} is not an http(s) URL")


# -- configuration -----------------------------------------------------------------------------
def test_an_unknown_provider_says_which_ones_exist(settings):
    settings.AMTP_LLM_PROVIDER = "foo"
    with pytest.raises(ConfigurationError) as caught:
        make_provider("repo_crawler")
    assert caught.value.message == (
        "AMTP_LLM_PROVIDER='foo' is not a provider; set it to one of anthropic, openai, offline"
    )
    assert not caught.value.retryable


@pytest.mark.parametrize(
    "provider, message",
    [("anthropic", anthropic_module.MISSING_KEY), ("openai", openai_module.MISSING_KEY)],
)
def test_a_chosen_provider_without_its_key_says_what_to_set(settings, provider, message):
    settings.AMTP_LLM_PROVIDER = provider
    settings.ANTHROPIC_API_KEY = settings.OPENAI_API_KEY = ""
    settings.ANTHROPIC_BASE_URL = settings.OPENAI_BASE_URL = ""
    with pytest.raises(ConfigurationError) as caught:
        make_provider("test_case_generator")
    assert caught.value.message == message


def test_openai_with_a_base_url_needs_no_key(settings, gpt):
    settings.AMTP_LLM_PROVIDER = "openai"
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = gpt.url + "/v1"
    assert isinstance(make_provider("test_case_generator"), OpenAIProvider)


@pytest.mark.parametrize("timeout", [0.0, -5.0])
def test_a_timeout_that_cannot_work_is_a_configuration_error(settings, timeout):
    settings.AMTP_LLM_PROVIDER = "offline"
    settings.AMTP_LLM_TIMEOUT_S = timeout
    with pytest.raises(ConfigurationError) as caught:
        make_provider("repo_crawler")
    assert caught.value.message == providers_module.BAD_TIMEOUT.format(value=timeout)
