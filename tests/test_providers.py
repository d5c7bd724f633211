"""The Anthropic and OpenAI providers, through the real SDKs against the loopback fakes."""

from __future__ import annotations

import json
import logging
import re
import time
import typing
from datetime import date

import anthropic
import openai
import pytest
from anthropic._data import DEPRECATED_MODELS as ANTHROPIC_DEPRECATED
from anthropic.resources.messages import DEPRECATED_MODELS as ANTHROPIC_DEPRECATED_TOO
from django.core.management import call_command
from django.core.management.base import CommandError

import agents.providers as providers_module
import agents.providers.anthropic as anthropic_module
import agents.providers.models as models_module
import agents.providers.openai as openai_module
import agents.providers.probe as probe_module
import agents.providers.vendor as vendor_module
from agents.errors import (
    LlmContentFiltered,
    LlmContextOverflow,
    LlmOutputTruncated,
    LlmProviderError,
    LlmProviderRejected,
    LlmQuotaExhausted,
    LlmRefusal,
)
from agents.providers import DEFAULT_MODELS, make_provider
from agents.providers.anthropic import AnthropicProvider
from agents.providers.base import SEED, ProviderOptions, ToolCall, ToolResult, ToolSpec
from agents.providers.models import end_of_life, takes_temperature
from agents.providers.openai import INVALID_ARGUMENTS_KEY, OpenAIProvider
from agents.providers.probe import check_providers
from agents.runner import assistant_turn
from amtp_site import errors
from amtp_site.errors import ConfigurationError
from tests.fakes.llm_api import (
    CLAUDE_MODELS,
    SPEND_LIMITS,
    FakeAnthropic,
    FakeOpenAI,
    HttpError,
    Text,
    ToolUse,
    anthropic_spend_limit,
    openai_quota,
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
CLAUDE = DEFAULT_MODELS["anthropic"]  # thinks by default, takes no sampling parameter
OLD_CLAUDE = "claude-sonnet-4-6"  # still takes temperature, thinks only when asked
LOCAL_MODEL = "llama3.1"  # a local server's model: takes every sampling parameter


def options(**overrides) -> ProviderOptions:
    return ProviderOptions(**({"model": LOCAL_MODEL, "timeout_seconds": 5.0} | overrides))


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
        options(**({"model": CLAUDE} | overrides)),
        agent="repo_crawler",
        api_key=KEY,
        base_url=fake.url,
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
        assistant_turn(first),  # as the runner keeps it: the vendor's blocks for Anthropic
        {"role": "tool", "results": results(first.tool_calls)},
    ]
    second = ask(provider, conversation, tools=TOOLS)
    assert second.text == ANSWER and not second.tool_calls and not fake.pending
    return first, fake.requests[1]


# -- request shapes ----------------------------------------------------------------------------
def test_anthropic_one_turn_request_and_usage(claude):
    claude.script([ANSWER])
    completion = ask(make_claude(claude, model=OLD_CLAUDE, temperature=0.2, max_output_tokens=2048))

    (request,) = claude.requests
    # The system prompt is one block marked for the prompt cache.
    assert request.json["system"] == [
        {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
    ]
    assert request.messages == [{"role": "user", "content": FIRST}]  # no system turn in there
    assert request.json.get("temperature") == 0.2  # sent through extra_body: Sonnet 4.6 takes it
    assert "top_p" not in request.json  # defaults to 1; these models refuse both set at once
    assert request.json.get("model") == OLD_CLAUDE and request.json.get("max_tokens") == 2048
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
    assert assistant["content"] == first.vendor_turn  # verbatim: the default model thinks
    assert assistant["content"][0]["type"] == "thinking" and assistant["content"][0]["signature"]
    assert assistant["content"][1] == {"type": "text", "text": "Looking at the tree."}
    assert [(b["id"], b["name"]) for b in assistant["content"][2:]] == [
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


def test_openai_truncated_answer_is_a_final_error_naming_the_setting(gpt):
    gpt.script([Text("x" * 400, truncated=True)])
    with pytest.raises(LlmOutputTruncated) as caught:
        ask(make_gpt(gpt, max_output_tokens=50))
    assert caught.value.message == vendor_module.TRUNCATED.format(
        vendor="openai", model=LOCAL_MODEL, limit=50
    )
    assert "raise AMTP_MAX_OUTPUT_TOKENS" in caught.value.message
    assert not caught.value.retryable and len(gpt.requests) == 1


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
            # 5 output tokens: the answer's own time (0.14 s) is below the setting.
            ask(make(fake, timeout_seconds=0.2, max_output_tokens=5))
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


# -- what each model accepts -------------------------------------------------------------------
def _current(vendor: str, names) -> list[str]:
    return sorted(n for n in names if (end_of_life(vendor, n) or date.max) > date.today())


CURRENT_CLAUDES = _current("anthropic", CLAUDE_MODELS)
OPENAI_MODELS = typing.get_args(openai.types.ChatModel)
CURRENT_GPTS = _current("openai", OPENAI_MODELS)


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_no_request_carries_a_parameter_the_model_refuses(claude):
    """Every model the SDK names (and the default) through the strict fake, with and without
    tools: no 400 for a sampling parameter, and temperature exactly where the model takes it."""
    models = sorted({*CURRENT_CLAUDES, DEFAULT_MODELS["anthropic"]})
    claude.script([ANSWER] * len(models) * 2)
    for model in models:
        provider = make_claude(claude, model=model)
        assert ask(provider).text == ANSWER
        assert ask(provider, tools=TOOLS).text == ANSWER
    assert [r.status for r in claude.requests] == [200] * len(models) * 2
    for request in claude.requests:
        model = request.json["model"]
        assert ("temperature" in request.json) == takes_temperature("anthropic", model), model
        assert "top_p" not in request.json and "top_k" not in request.json
    assert not takes_temperature("anthropic", DEFAULT_MODELS["anthropic"])
    assert {"claude-opus-4-7", "claude-opus-4-8", "claude-sonnet-5", "claude-fable-5"} <= set(
        m for m in models if not takes_temperature("anthropic", m)
    )


def test_no_openai_request_carries_a_parameter_the_model_refuses():
    models = sorted({*CURRENT_GPTS, DEFAULT_MODELS["openai"]})
    with FakeOpenAI(flavour="openai") as fake:
        fake.script([ANSWER] * len(models))
        for model in models:
            assert ask(make_gpt(fake, model=model)).text == ANSWER
        assert [r.status for r in fake.requests] == [200] * len(models)
        sent = {r.json["model"]: r.json for r in fake.requests}
    assert "temperature" not in sent["gpt-5.4-mini"] and "top_p" not in sent["gpt-5.4-mini"]
    assert sent["gpt-5.4-mini"]["max_completion_tokens"] == 8192
    assert sent["gpt-4o"]["temperature"] == 0.1 and sent["gpt-4o"]["max_tokens"] == 8192


def test_the_strict_fakes_do_refuse_what_the_services_refuse(claude):
    """The tests above only mean something if the fakes refuse: they do, in the vendors' words."""
    client = anthropic.Anthropic(base_url=claude.url, api_key=KEY, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="`temperature` is deprecated"):
        client.messages.create(
            model="claude-opus-4-7",
            max_tokens=5,
            messages=HELLO,
            extra_body={"temperature": 0.1},
        )
    with FakeOpenAI() as fake:
        client = openai.OpenAI(base_url=fake.url + "/v1", api_key=KEY, max_retries=0)
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="o3", messages=HELLO, temperature=0.1)
    assert caught.value.code == "unsupported_value"


def test_default_models_are_current():
    assert DEFAULT_MODELS["anthropic"] in CLAUDE_MODELS
    assert DEFAULT_MODELS["anthropic"] not in {**ANTHROPIC_DEPRECATED, **ANTHROPIC_DEPRECATED_TOO}
    assert DEFAULT_MODELS["openai"] in OPENAI_MODELS
    assert end_of_life("openai", DEFAULT_MODELS["openai"]) is None
    assert end_of_life("openai", "gpt-4o-mini") == date(2027, 1, 14)  # the old default
    assert end_of_life("anthropic", "claude-sonnet-4-5") == date(2026, 11, 30)  # the old default


def _use(settings, provider: str, url: str, model: str = "") -> None:
    settings.AMTP_LLM_PROVIDER = provider
    settings.AMTP_LLM_MODEL = model
    settings.AMTP_MODELS = {}
    settings.ANTHROPIC_API_KEY = settings.OPENAI_API_KEY = KEY
    settings.ANTHROPIC_BASE_URL = url if provider == "anthropic" else ""
    settings.OPENAI_BASE_URL = url + "/v1" if provider == "openai" else ""


def test_a_deprecated_model_warns_with_its_end_of_life(settings, monkeypatch, caplog, claude):
    _use(settings, "anthropic", claude.url, "claude-sonnet-4-5")
    monkeypatch.setattr(models_module, "today", lambda: date(2026, 11, 1))
    with caplog.at_level(logging.WARNING, logger="amtp.agents"):
        provider = make_provider("repo_crawler")
    assert provider.model == "claude-sonnet-4-5"
    assert caplog.messages == [
        models_module.DEPRECATED.format(
            source="AMTP_LLM_MODEL",
            model="claude-sonnet-4-5",
            vendor="anthropic",
            eol=date(2026, 11, 30),
            default=DEFAULT_MODELS["anthropic"],
        )
    ]
    assert "retires it on 2026-11-30" in caplog.messages[0]


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_a_retired_model_is_a_configuration_error(settings, claude):
    _use(settings, "anthropic", claude.url)
    settings.AMTP_MODELS = {"repo_crawler": "claude-opus-4-0"}
    with pytest.raises(ConfigurationError) as caught:
        make_provider("repo_crawler")
    assert caught.value.message.startswith(
        "AMTP_MODEL_REPO_CRAWLER='claude-opus-4-0' was retired on 2026-06-15"
    )
    assert not caught.value.retryable and claude.requests == []
    # The fake answers a retired model as the API does.
    with pytest.raises(LlmProviderRejected, match="404 not_found_error: model: claude-opus-4-0"):
        ask(make_claude(claude, model="claude-opus-4-0"))


# -- how an answer ends ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "stop, error_class, words",
    [
        ("max_tokens", LlmOutputTruncated, "raise AMTP_MAX_OUTPUT_TOKENS"),
        ("refusal", LlmRefusal, "refused to answer (cyber)"),
        ("model_context_window_exceeded", LlmContextOverflow, "lower AMTP_MAX_INPUT_TOKENS"),
    ],
)
def test_anthropic_stop_reasons_are_final_errors_saying_what_to_change(
    claude, stop, error_class, words
):
    claude.script([Text('{"entry', stop=stop, refusal_category="cyber")])
    with pytest.raises(error_class) as caught:
        ask(make_claude(claude))
    assert words in caught.value.message and caught.value.message.startswith("anthropic " + CLAUDE)
    assert error_class.__name__ in errors.non_retryable_error_types()
    assert caught.value.details["stop_reason"] == stop and len(claude.requests) == 1


@pytest.mark.parametrize("stop", ["end_turn", "stop_sequence"])
def test_anthropic_normal_stops_pass(claude, stop):
    claude.script([Text(ANSWER, stop=stop)])
    assert ask(make_claude(claude)).text == ANSWER


@pytest.mark.parametrize(
    "reply, error_class, words",
    [
        (Text("x", stop="content_filter"), LlmContentFiltered, "content filter withheld"),
        (Text("I can't help with that.", stop="refusal"), LlmRefusal, "I can't help with that."),
        (Text("x" * 400, truncated=True), LlmOutputTruncated, "AMTP_MAX_OUTPUT_TOKENS=8192"),
    ],
)
def test_openai_finish_reasons_are_final_errors(gpt, reply, error_class, words):
    gpt.script([reply])
    with pytest.raises(error_class, match=words.replace("(", r"\(")) as caught:
        ask(make_gpt(gpt))
    assert not caught.value.retryable


# -- limits that retries cannot clear, and the server's own word -------------------------------
@pytest.mark.parametrize(
    "code",
    [
        "enforced_spend_limit_reached",
        "contract_spend_limit_reached",
        "linked_organization_spend_limit_reached",
    ],
)
def test_anthropic_spend_limits_are_final(claude, code):
    claude.script([anthropic_spend_limit(code)])
    with pytest.raises(LlmQuotaExhausted) as caught:
        ask(make_claude(claude))
    exc = caught.value
    assert not exc.retryable and exc.details["error_code"] == code
    assert exc.details["status"] == SPEND_LIMITS[code][0]  # 429 (402 for a linked organization)
    assert "raise the spend limit" in exc.message and "retry_after" not in exc.details


def test_a_ramp_limit_429_is_still_retried(claude):
    # ramp_limit_exceeded: "Retry after the time in the retry-after header" (SDK docstring)
    claude.script([HttpError(429, "Ramp limit", code="ramp_limit_exceeded", retry_after=3)])
    with pytest.raises(LlmProviderError) as caught:
        ask(make_claude(claude))
    assert caught.value.retryable and caught.value.details["retry_after"] == 3.0


@pytest.mark.parametrize("code", ["insufficient_quota", "credit_balance_exhausted"])
def test_openai_quota_is_final(gpt, code):
    gpt.script([openai_quota(code)])
    with pytest.raises(LlmQuotaExhausted, match="You exceeded your current quota") as caught:
        ask(make_gpt(gpt))
    assert caught.value.details["error_code"] == code and not caught.value.retryable


@pytest.mark.parametrize("make, fake_class", VENDORS)
def test_x_should_retry_decides_when_sent(make, fake_class):
    with fake_class() as fake:
        fake.script(
            [
                HttpError(429, "busy", headers={"x-should-retry": "false"}),
                HttpError(400, "try again", headers={"x-should-retry": "true"}),
            ]
        )
        with pytest.raises(LlmProviderRejected):
            ask(make(fake))
        with pytest.raises(LlmProviderError):
            ask(make(fake))


def test_context_overflow_errors_are_final_whatever_the_server(claude):
    with FakeAnthropic(context_window=50) as small:
        small.script([ANSWER])
        with pytest.raises(LlmContextOverflow, match="prompt is too long: \\d+ tokens > 50"):
            ask(make_claude(small))
    for flavour, words in (("openai", "maximum context length is 20"), ("lmstudio", "n_ctx: 20")):
        with FakeOpenAI(flavour=flavour, context_window=20) as fake:
            with pytest.raises(LlmContextOverflow, match=words) as caught:
                ask(make_gpt(fake))
        assert "OLLAMA_CONTEXT_LENGTH" in caught.value.message


# -- timeouts, caching, counting ---------------------------------------------------------------
def test_the_timeout_grows_with_the_output_budget(claude, gpt):
    big = make_claude(claude, model=OLD_CLAUDE, timeout_seconds=120, max_output_tokens=16_000)
    assert big.timeout == 450 and big._client.timeout == 450  # the SDK's own estimate
    # 16,000 + room to think is streamed: the timeout is the wait for each event.
    thinking = make_claude(claude, timeout_seconds=120, max_output_tokens=16_000)
    assert thinking.plan.max_tokens == 48_000 and thinking.timeout == 120
    small = make_gpt(gpt, timeout_seconds=120, max_output_tokens=1000)
    assert small.timeout == 120 and small._client.timeout == 120


def test_the_crawler_conversation_is_cached_up_to_its_newest_message(claude):
    provider = make_claude(claude)
    long_first = [{"role": "user", "content": FIRST + " " + "x" * 6000}]
    claude.script([tool_use("repo_tree", {}, id="toolu_1"), ANSWER])
    first = ask(provider, long_first, tools=TOOLS)
    conversation = long_first + [
        assistant_turn(first),
        {"role": "tool", "results": [ToolResult("toolu_1", "src/main.py")]},
    ]
    second = ask(provider, conversation, tools=TOOLS)

    one, two = (r.json["messages"] for r in claude.requests)
    assert one[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert two[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in two[0]["content"][-1]  # only the newest message is marked
    assert first.cache_read_tokens == 0 and second.cache_read_tokens > 2000
    # Budgets count every prompt token, cached or not.
    assert second.input_tokens > first.input_tokens


def test_token_counting_uses_the_vendor_and_falls_back(claude, caplog):
    provider = make_claude(claude)
    counted = provider.count_tokens(system=SYSTEM, messages=HELLO, tools=TOOLS)
    (request,) = claude.token_counts
    assert request.path == "/v1/messages/count_tokens" and claude.requests == []
    assert request.json["tools"] and "max_tokens" not in request.json
    estimate = (len(SYSTEM) + len(json.dumps(HELLO))) // 4 + 1
    assert counted > estimate  # the fake counts 3 bytes per token, not 4 characters
    with FakeAnthropic(count_tokens=False) as gateway:
        provider = make_claude(gateway)
        with caplog.at_level(logging.WARNING, logger="amtp.agents"):
            assert provider.count_tokens(system=SYSTEM, messages=HELLO, tools=[]) is None
            assert provider.count_tokens(system=SYSTEM, messages=HELLO, tools=[]) is None
        assert len(gateway.token_counts) == 1  # not asked again
    assert "estimating 4 characters per token" in caplog.text and KEY not in caplog.text
    with FakeOpenAI() as fake:  # no counting endpoint: the runner estimates
        assert make_gpt(fake).count_tokens(system=SYSTEM, messages=HELLO, tools=[]) is None


# -- the start-up probe (manage.py check_providers) --------------------------------------------
def levels(findings) -> list[str]:
    return [f.level for f in findings]


def structured(request: dict) -> str:
    """A case generator's answer to the probe's structured ask, for the run id it names."""
    run_id = re.search(r"run_id ([0-9a-f-]{36})", json.dumps(request)).group(1)
    case = {
        "id": "tc_home",
        "title": "Home page loads",
        "preconditions": [],
        "steps": ["Open /"],
        "expected": "The home page is shown",
        "priority": "critical",
    }
    return json.dumps({"run_id": run_id, "test_cases": [case], "coverage_notes": "probe"})


PROBE_OK = ["OK", tool_use("amtp_probe", {}, id="toolu_p"), "OK", structured]


def test_probe_of_a_working_anthropic_setup(settings, claude):
    """The default model thinks: the probe's second turn sends the tool_use turn back with its
    thinking blocks, or the (strict) fake refuses it as the API would; the structured answer
    goes through the vendor's structured outputs and our own contract."""
    _use(settings, "anthropic", claude.url)
    claude.script(PROBE_OK)
    findings = check_providers()
    assert levels(findings) == ["ok", "ok", "ok"]
    assert findings[0].text == f"anthropic answered with model {DEFAULT_MODELS['anthropic']!r}"
    assert "two-turn tool call" in findings[1].text
    assert "test_case_generator/output contract accepts" in findings[2].text
    assert claude.requests[1].tool_names == ["amtp_probe"]
    # An answer's budget with room to think on top: a reasoning model is not starved.
    assert claude.requests[0].json["max_tokens"] == 1024 + 32_000
    turn = claude.requests[2].messages[1]["content"]
    assert [b["type"] for b in turn] == ["thinking", "tool_use"]
    assert tool_results(claude.requests[2].json) == {"toolu_p": "OK"}
    assert claude.requests[3].json["output_config"]["format"]["type"] == "json_schema"
    assert claude.pending == []


def test_probe_checks_every_agents_own_setup(settings, claude):
    """Per-agent model, thinking and effort settings are each probed, with the settings a run
    would send: three setups here, so three groups of findings, each naming its agents."""
    _use(settings, "anthropic", claude.url)
    settings.AMTP_MODELS = {"test_engineer": "claude-opus-4-6"}
    settings.AMTP_AGENT_THINKING = {"test_case_generator": "off"}
    settings.AMTP_AGENT_EFFORT = {"test_engineer": "low"}
    crawler = ["OK", tool_use("amtp_probe", {}), "OK"]
    claude.script([*crawler, "OK", structured, "OK", structured])
    findings = check_providers()
    assert levels(findings) == ["ok"] * 6
    assert [f.text.rsplit("(used by ", 1)[1] for f in findings] == [
        "repo_crawler)",
        "repo_crawler)",
        "test_case_generator)",
        "test_case_generator)",
        "test_engineer)",
        "test_engineer)",
    ]
    sent = [
        (r.json["model"], r.json.get("thinking"), r.json.get("output_config", {}).get("effort"))
        for r in claude.requests
    ]
    default = DEFAULT_MODELS["anthropic"]
    assert sent == [
        (default, None, None),
        (default, None, None),
        (default, None, None),
        (default, {"type": "between_tools"}, None),
        (default, {"type": "between_tools"}, None),
        ("claude-opus-4-6", None, "low"),
        ("claude-opus-4-6", None, "low"),
    ]
    assert "claude-opus-4-6" in findings[5].text and "contract accepts" in findings[5].text


@pytest.mark.parametrize(
    "script, broken, level, words",
    [
        (
            ["OK", Text("Let me think", truncated=True), structured],
            1,
            "warning",
            "its first turn was cut off at max_tokens=33024",
        ),
        (
            ["OK", tool_use("amtp_probe", {}), Text("x", truncated=True), structured],
            1,
            "warning",
            "its second turn was cut off",
        ),
        (
            ["OK", tool_use("amtp_probe", {}), HttpError(400, "messages.2: bad turn")],
            1,
            "error",
            "refused the second turn of a tool call",
        ),
        (
            ["OK", tool_use("amtp_probe", {}), "OK", '{"run_id": "nope"}'],
            2,
            "error",
            "could not give a structured answer",
        ),
        (
            ["OK", tool_use("amtp_probe", {}), "OK", "Sure! Here are your tests."],
            2,
            "error",
            "model output is not JSON",
        ),
        (
            ["OK", tool_use("amtp_probe", {}), "OK", Text("{", truncated=True)],
            2,
            "warning",
            "structured-answer check was not completed",
        ),
    ],
)
def test_probe_reports_each_broken_check(settings, claude, script, broken, level, words):
    """A fake that breaks one check at a time: that check, and only it, is not "ok"."""
    _use(settings, "anthropic", claude.url)
    claude.script(script)
    findings = check_providers()
    assert levels(findings)[:broken] == ["ok"] * broken
    assert findings[broken].level == level and words in findings[broken].text, findings[broken]
    assert all(f.level == "ok" for f in findings[broken + 1 :])


def test_probe_warns_when_the_model_calls_no_tool(settings, claude):
    _use(settings, "anthropic", claude.url)
    claude.script(["OK", "OK", structured])
    findings = check_providers()
    assert levels(findings) == ["ok", "warning", "ok"] and "without calling" in findings[1].text


def test_probe_says_the_key_is_bad(settings, claude):
    _use(settings, "anthropic", claude.url)
    claude.script([HttpError(401)])
    (finding,) = check_providers()
    assert finding.level == "error" and "check ANTHROPIC_API_KEY" in finding.text
    assert KEY not in finding.text


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_probe_warns_of_a_deprecated_model_and_stops_at_a_retired_one(
    settings, monkeypatch, claude
):
    monkeypatch.setattr(models_module, "today", lambda: date(2026, 11, 1))
    _use(settings, "anthropic", claude.url, "claude-sonnet-4-5")
    claude.script(PROBE_OK)
    findings = check_providers()
    assert levels(findings) == ["warning", "ok", "ok", "ok"]
    assert "retires it on 2026-11-30" in findings[0].text
    _use(settings, "anthropic", claude.url, "claude-opus-4-0")
    (finding,) = check_providers()
    assert finding.level == "error" and "was retired on 2026-06-15" in finding.text
    assert len(claude.requests) == 4


def test_probe_says_a_claude_model_is_unknown(settings):
    with FakeAnthropic() as fake:
        _use(settings, "anthropic", fake.url, "claude-sonnet-9")
        (finding,) = check_providers()
    assert finding.level == "error" and "model: claude-sonnet-9" in finding.text
    assert f"e.g. {DEFAULT_MODELS['anthropic']}" in finding.text


def test_probe_says_an_ollama_model_is_missing(settings):
    with FakeOpenAI(flavour="ollama", models={"llama3.1"}) as fake:
        _use(settings, "openai", fake.url, "qwen3")
        (finding,) = check_providers()
    assert finding.level == "error"
    assert 'model "qwen3" not found, try pulling it first' in finding.text
    assert "`ollama pull qwen3`" in finding.text


def test_probe_says_vllm_needs_its_tool_flags(settings):
    with FakeOpenAI(flavour="vllm", tools=False) as fake:
        _use(settings, "openai", fake.url, "Qwen/Qwen2.5-7B-Instruct")
        fake.script(["OK"])
        findings = check_providers()
    assert levels(findings) == ["ok", "error"]
    assert "--enable-auto-tool-choice --tool-call-parser" in findings[1].text
    assert '"auto" tool choice requires' in findings[1].text  # what vLLM said


def test_probe_finds_an_ollama_window_that_cuts_prompts(settings):
    with FakeOpenAI(flavour="ollama", context_window=2048) as fake:
        _use(settings, "openai", fake.url, "llama3.1")
        fake.script([*PROBE_OK, "OK"])
        findings = check_providers()
    assert levels(findings) == ["ok", "ok", "ok", "error"]
    needed = settings.AMTP_MAX_INPUT_TOKENS + settings.AMTP_MAX_OUTPUT_TOKENS
    assert "kept only 2048 of a prompt of about" in findings[3].text
    assert f"OLLAMA_CONTEXT_LENGTH={needed}" in findings[3].text
    with FakeOpenAI(flavour="ollama", context_window=200_000) as fake:
        _use(settings, "openai", fake.url, "llama3.1")
        fake.script([*PROBE_OK, "OK"])
        assert levels(check_providers()) == ["ok", "ok", "ok", "ok"]


def test_probe_finds_an_lm_studio_window_that_refuses_prompts(settings):
    with FakeOpenAI(flavour="lmstudio", context_window=4096) as fake:
        _use(settings, "openai", fake.url, "qwen2.5-7b-instruct")
        fake.script(PROBE_OK)
        findings = check_providers()
    assert levels(findings) == ["ok", "ok", "ok", "error"]
    assert "refused a prompt of about" in findings[3].text and "n_ctx: 4096" in findings[3].text


def test_check_providers_command_prints_and_fails_on_errors(settings, capsys):
    settings.AMTP_LLM_PROVIDER = "offline"
    call_command("check_providers")
    assert "offline provider" in capsys.readouterr().out
    with FakeOpenAI(flavour="ollama", models=set()) as fake:
        _use(settings, "openai", fake.url, "qwen3")
        with pytest.raises(CommandError, match="check found errors"):
            call_command("check_providers")
    assert "ERROR" in capsys.readouterr().out and probe_module.AGENT == "repo_crawler"
