"""The LLM API fakes, exercised through the real `anthropic` and `openai` SDKs."""

import json
import math

import anthropic
import openai
import pytest

from tests.fakes.llm_api import (
    NO_REPLY_LEFT,
    STOP_REASONS,
    FakeAnthropic,
    FakeOpenAI,
    HttpError,
    Text,
    ToolCall,
    ToolUse,
    anthropic_spend_limit,
    openai_quota,
    tool_results,
    tool_use,
)

CLAUDE = "claude-sonnet-4-6"
GPT = "gpt-4o-mini"
READ_FILE_ANTHROPIC = {
    "name": "read_file",
    "description": "Read a file of the repository.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
READ_FILE_OPENAI = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "parameters": READ_FILE_ANTHROPIC["input_schema"],
    },
}
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def claude():
    with FakeAnthropic() as fake:
        yield fake, anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=0)


@pytest.fixture
def gpt():
    with FakeOpenAI() as fake:
        yield fake, openai.OpenAI(base_url=fake.url + "/v1", api_key="test", max_retries=0)


def ask_claude(client, **overrides):
    kwargs = {"model": CLAUDE, "max_tokens": 1024, "messages": HELLO} | overrides
    return client.messages.create(**kwargs)


def ask_gpt(client, **overrides):
    return client.chat.completions.create(**({"model": GPT, "messages": HELLO} | overrides))


# -- text replies ------------------------------------------------------------------------------
def test_anthropic_text_reply_and_recorded_request(claude):
    fake, client = claude
    fenced = '```json\n{"verdict": "ok"}\n```'
    fake.script([fenced])

    message = ask_claude(client, system="You are a reviewer.", extra_body={"temperature": 0.1})

    assert message.type == "message" and message.role == "assistant"
    assert message.model == CLAUDE
    assert message.content[0].type == "text" and message.content[0].text == fenced
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert message.id.startswith("msg_")

    (request,) = fake.requests
    assert (request.method, request.path, request.status) == ("POST", "/v1/messages", 200)
    assert request.headers["authorization"] == "Bearer test"  # SDK 2.x: not x-api-key
    assert "anthropic-version" in request.headers
    assert request.system == "You are a reviewer."
    assert request.messages == HELLO
    assert request.json["temperature"] == 0.1
    assert json.loads(request.body) == request.json
    assert fake.pending == []


def test_openai_text_reply_and_recorded_request(gpt):
    fake, client = gpt
    fake.script(['Here you go: {"verdict": "ok"} -- hope that helps'])
    messages = [{"role": "system", "content": "You are a reviewer."}, *HELLO]

    completion = ask_gpt(client, messages=messages, temperature=0.2, top_p=0.5, seed=7)

    assert completion.object == "chat.completion" and completion.model == GPT
    (choice,) = completion.choices
    assert choice.index == 0 and choice.finish_reason == "stop"
    assert choice.message.role == "assistant" and choice.message.tool_calls is None
    assert choice.message.content == 'Here you go: {"verdict": "ok"} -- hope that helps'
    usage = completion.usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens

    (request,) = fake.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test"
    assert request.system == "You are a reviewer."
    assert (request.json["temperature"], request.json["top_p"], request.json["seed"]) == (
        0.2,
        0.5,
        7,
    )
    assert b'"seed":7' in request.body.replace(b" ", b"")


def test_explicit_truncation_and_max_tokens_clipping(claude, gpt):
    fake, client = claude
    fake.script([Text('{"a": 1, "b":', truncated=True), "x" * 400])
    assert ask_claude(client).stop_reason == "max_tokens"
    clipped = ask_claude(client, max_tokens=10)
    assert clipped.stop_reason == "max_tokens" and clipped.content[0].text == "x" * 40

    fake, client = gpt
    fake.script([Text("partial", truncated=True), "y" * 400])
    assert ask_gpt(client).choices[0].finish_reason == "length"
    clipped = ask_gpt(client, max_completion_tokens=5).choices[0]
    assert clipped.finish_reason == "length" and clipped.message.content == "y" * 20


# -- tool use ----------------------------------------------------------------------------------
def test_anthropic_tool_use_round_trip(claude):
    fake, client = claude
    fake.script(
        [
            tool_use("read_file", {"path": "a.py"}, id="toolu_01A", text="Let me look."),
            lambda req: f"The file says: {tool_results(req)['toolu_01A']}",
        ]
    )
    messages = [{"role": "user", "content": "What is in a.py?"}]

    first = ask_claude(client, messages=messages, tools=[READ_FILE_ANTHROPIC])

    assert first.stop_reason == "tool_use"
    text, call = first.content
    assert text.text == "Let me look."
    assert (call.type, call.id, call.name, call.input) == (
        "tool_use",
        "toolu_01A",
        "read_file",
        {"path": "a.py"},
    )
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "print('hi')"}
    messages += [first.to_param(), {"role": "user", "content": [result]}]

    second = ask_claude(client, messages=messages, tools=[READ_FILE_ANTHROPIC])

    assert second.content[0].text == "The file says: print('hi')"
    assert [r.tool_names for r in fake.requests] == [["read_file"], ["read_file"]]
    sent_back = fake.requests[1].messages[1]["content"]
    assert any(b.get("id") == "toolu_01A" and b["type"] == "tool_use" for b in sent_back)


def test_openai_tool_calls_round_trip(gpt):
    fake, client = gpt
    calls = (
        ToolCall("read_file", {"path": "a.py"}, id="call_A"),
        ToolCall("read_file", {"path": "b.py"}),
    )
    fake.script([ToolUse(calls), lambda req: json.dumps(tool_results(req))])
    messages = [{"role": "user", "content": "What is in a.py and b.py?"}]

    first = ask_gpt(client, messages=messages, tools=[READ_FILE_OPENAI]).choices[0]

    assert first.finish_reason == "tool_calls" and first.message.content is None
    a, b = first.message.tool_calls
    assert (a.id, a.type, a.function.name) == ("call_A", "function", "read_file")
    assert json.loads(a.function.arguments) == {"path": "a.py"}
    assert b.id.startswith("call_") and json.loads(b.function.arguments) == {"path": "b.py"}
    calls_sent_back = [call.model_dump() for call in first.message.tool_calls]
    messages.append({"role": "assistant", "content": None, "tool_calls": calls_sent_back})
    messages += [{"role": "tool", "tool_call_id": c.id, "content": f"<{c.id}>"} for c in (a, b)]

    second = ask_gpt(client, messages=messages, tools=[READ_FILE_OPENAI]).choices[0]

    assert json.loads(second.message.content) == {"call_A": "<call_A>", b.id: f"<{b.id}>"}
    assert fake.requests[1].tool_names == ["read_file"]


def test_callable_reply_sees_the_request(claude):
    fake, client = claude
    seen = []
    fake.script([lambda req: seen.append(req) or f"model={req['model']}"])

    reply = ask_claude(client, extra_body={"temperature": 0.0})

    assert reply.content[0].text == f"model={CLAUDE}"
    assert seen[0]["temperature"] == 0.0 and seen[0]["messages"] == HELLO


# -- errors ------------------------------------------------------------------------------------
def test_rate_limit_errors_carry_retry_after(claude, gpt):
    fake, client = claude
    fake.script([HttpError(429, retry_after=7)])
    with pytest.raises(anthropic.RateLimitError) as caught:
        ask_claude(client)
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.body["type"] == "error"
    assert caught.value.type == "rate_limit_error" and caught.value.request_id

    fake, client = gpt
    fake.script([HttpError(429)])
    with pytest.raises(openai.RateLimitError) as caught:
        ask_gpt(client)
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.code == "rate_limit_exceeded" and caught.value.param is None


def test_sdk_retry_honours_retry_after_then_succeeds(claude):
    fake, _ = claude
    client = anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=2)
    fake.script([HttpError(429, retry_after=0.01), HttpError(529, retry_after=0.01), "done"])

    assert ask_claude(client).content[0].text == "done"
    assert [r.status for r in fake.requests] == [429, 529, 200]


@pytest.mark.parametrize(
    ("status", "error_class", "error_type"),
    [
        (500, anthropic.InternalServerError, "api_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
        (400, anthropic.BadRequestError, "invalid_request_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
    ],
)
def test_anthropic_scripted_errors(claude, status, error_class, error_type):
    fake, client = claude
    fake.script([HttpError(status)])
    with pytest.raises(error_class) as caught:
        ask_claude(client)
    assert caught.value.status_code == status and caught.value.type == error_type


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (500, openai.InternalServerError),
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
    ],
)
def test_openai_scripted_errors(gpt, status, error_class):
    fake, client = gpt
    fake.script([HttpError(status, "boom", code="some_code")])
    with pytest.raises(error_class) as caught:
        ask_gpt(client)
    assert caught.value.status_code == status and caught.value.code == "some_code"
    assert caught.value.body["message"] == "boom"  # the SDK unwraps {"error": {...}}


def test_empty_script_fails_clearly_and_is_not_retried(claude, gpt):
    fake, _ = claude
    client = anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=2)
    with pytest.raises(anthropic.InternalServerError, match=NO_REPLY_LEFT):
        ask_claude(client)
    assert len(fake.requests) == 1

    fake, client = gpt
    with pytest.raises(openai.InternalServerError, match=NO_REPLY_LEFT):
        ask_gpt(client)


def test_callable_that_raises_is_reported(gpt):
    fake, client = gpt
    fake.script([lambda req: req["no such key"]])
    with pytest.raises(openai.InternalServerError, match="reply callable raised KeyError"):
        ask_gpt(client)


# -- request validation ------------------------------------------------------------------------
def test_anthropic_rejects_missing_max_tokens(claude):
    fake, client = claude
    fake.script(["never sent"])
    with pytest.raises(anthropic.BadRequestError, match="max_tokens: Field required"):
        ask_claude(client, max_tokens=anthropic.omit, timeout=10)
    assert fake.requests[0].status == 400 and fake.pending == ["never sent"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"extra_body": {"seed": 1}}, "seed: Extra inputs are not permitted"),
        ({"extra_body": {"temperature": 1.5}}, "temperature: Input should be"),
        ({"messages": [{"role": "system", "content": "x"}, *HELLO]}, 'Unexpected role "system"'),
        ({"messages": []}, "at least one message is required"),
        (
            {"messages": [*HELLO, {"role": "assistant", "content": [READ_FILE_ANTHROPIC]}]},
            "messages.1.content",
        ),
    ],
)
def test_anthropic_rejects_malformed_requests(claude, overrides, message):
    fake, client = claude
    with pytest.raises(anthropic.BadRequestError, match=message):
        ask_claude(client, **overrides)
    assert fake.requests[0].status == 400


def test_anthropic_checks_tool_use_and_tool_result_pairing(claude):
    fake, client = claude
    use = {"type": "tool_use", "id": "toolu_X", "name": "read_file", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_Y", "content": "hi"}
    with pytest.raises(anthropic.BadRequestError, match="without `tool_result` blocks"):
        ask_claude(client, messages=[*HELLO, {"role": "assistant", "content": [use]}])
    with pytest.raises(anthropic.BadRequestError, match="unexpected `tool_use_id`.*toolu_Y"):
        ask_claude(client, messages=[{"role": "user", "content": [result]}])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"extra_body": {"top_k": 5}}, "Unrecognized request argument supplied: top_k"),
        ({"temperature": 3}, "Invalid 'temperature'"),
        ({"messages": []}, "empty array"),
        (
            {"messages": [*HELLO, {"role": "tool", "tool_call_id": "c", "content": "x"}]},
            "preceeding",
        ),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "f", "arguments": "{}"},
                            }
                        ],
                    }
                ]
            },
            "did not have response messages: c1",
        ),
    ],
)
def test_openai_rejects_malformed_requests(gpt, overrides, message):
    fake, client = gpt
    with pytest.raises(openai.BadRequestError, match=message):
        ask_gpt(client, **overrides)


def test_extra_params_can_be_allowed_for_compatible_servers():
    with FakeOpenAI(extra_params=["top_k"]) as fake:
        client = openai.OpenAI(base_url=fake.url + "/v1", api_key="test", max_retries=0)
        fake.script(["ok"])
        assert ask_gpt(client, extra_body={"top_k": 5}).choices[0].message.content == "ok"
        assert fake.requests[0].json["top_k"] == 5


def test_wrong_base_url_is_a_404(gpt):
    fake, _ = gpt
    client = openai.OpenAI(base_url=fake.url, api_key="test", max_retries=0)  # no "/v1"
    with pytest.raises(openai.NotFoundError, match="/chat/completions"):
        ask_gpt(client)


# -- as strict as the services -----------------------------------------------------------------
@pytest.mark.parametrize("stop", sorted(STOP_REASONS - {"tool_use"}))
def test_anthropic_every_stop_reason_is_producible(claude, stop):
    fake, client = claude
    fake.script([Text("partial", stop=stop, refusal_category="cyber")])
    search = [{"type": "web_search_20260209", "name": "web_search"}]  # pause_turn needs one
    message = ask_claude(client, tools=search) if stop == "pause_turn" else ask_claude(client)
    assert message.stop_reason == stop
    if stop == "refusal":
        assert message.stop_details.type == "refusal" and message.stop_details.category == "cyber"
    else:
        assert message.stop_details is None


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
@pytest.mark.parametrize(
    "model", ["claude-sonnet-9-9", "claude-opus-4-0", "claude-3-opus-20240229"]
)
def test_anthropic_unknown_and_retired_models_are_not_found(claude, model):
    fake, client = claude
    with pytest.raises(anthropic.NotFoundError) as caught:
        ask_claude(client, model=model)
    assert caught.value.type == "not_found_error" and caught.value.api_message == f"model: {model}"


def test_anthropic_extra_models_are_served():
    with FakeAnthropic(extra_models=["claude-sonnet-9-9"]) as fake:
        client = anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=0)
        fake.script(["ok"])
        assert ask_claude(client, model="claude-sonnet-9-9").content[0].text == "ok"


@pytest.mark.parametrize(
    ("model", "sampling", "message"),
    [
        ("claude-opus-4-7", {"temperature": 0.1}, "`temperature` is deprecated for this model."),
        ("claude-fable-5", {"top_p": 0.5}, "`top_p` is deprecated for this model."),
        ("claude-sonnet-5-5", {"top_k": 5}, "`top_k` is deprecated for this model."),
        (
            "claude-sonnet-4-6",
            {"temperature": 0.1, "top_p": 0.9},
            "`temperature` and `top_p` cannot both be specified for this model. Please use only one.",
        ),
    ],
)
def test_anthropic_refuses_sampling_parameters_the_model_does_not_take(
    claude, model, sampling, message
):
    fake, client = claude
    with pytest.raises(anthropic.BadRequestError) as caught:
        ask_claude(client, model=model, extra_body=sampling)
    assert caught.value.api_message == message and caught.value.type == "invalid_request_error"


def test_anthropic_takes_sampling_where_the_model_does(claude):
    fake, client = claude
    fake.script(["a", "b"])
    ask_claude(client, model="claude-sonnet-4-6", extra_body={"temperature": 0.1})
    ask_claude(client, model="claude-sonnet-5-5")
    assert [r.status for r in fake.requests] == [200, 200]


def _marked(text: str) -> dict:
    return {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}


def test_anthropic_prompt_cache_writes_then_reads(claude):
    fake, client = claude
    fake.script(["one", "two", "three"])
    system = [_marked("You review code. " * 400)]  # ~2,300 tokens: cacheable
    first = ask_claude(client, system=system).usage
    second = ask_claude(client, system=system).usage
    short = ask_claude(client, system=[_marked("Be brief.")]).usage  # under the minimum
    assert first.cache_creation_input_tokens > 2000 and first.cache_read_input_tokens == 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0 and second.input_tokens == first.input_tokens
    assert short.cache_creation_input_tokens == short.cache_read_input_tokens == 0


def test_anthropic_refuses_more_than_four_cache_breakpoints(claude):
    fake, client = claude
    with pytest.raises(anthropic.BadRequestError, match="A maximum of 4 blocks with cache_control"):
        ask_claude(client, system=[_marked(f"part {i}") for i in range(5)])


def test_anthropic_count_tokens(claude):
    fake, client = claude
    counted = client.messages.count_tokens(model=CLAUDE, messages=HELLO, system="Be brief.")
    blocks = [
        '{"text": "Be brief.", "type": "text"}',
        '{"role": "user", "text": "hello", "type": "text"}',
    ]
    assert counted.input_tokens == sum(math.ceil(len(b) / 3) for b in blocks)  # 3 bytes a token
    assert fake.requests == [] and fake.token_counts[0].json["system"] == "Be brief."
    with pytest.raises(anthropic.BadRequestError, match="model: Field required"):
        client.messages.count_tokens(model=anthropic.omit, messages=HELLO)
    with FakeAnthropic(count_tokens=False) as gateway:
        client = anthropic.Anthropic(base_url=gateway.url, api_key="test", max_retries=0)
        with pytest.raises(anthropic.NotFoundError):
            client.messages.count_tokens(model=CLAUDE, messages=HELLO)


@pytest.mark.parametrize(
    ("code", "error_class"),
    [
        ("enforced_spend_limit_reached", anthropic.EnforcedSpendLimitReachedError),
        ("contract_spend_limit_reached", anthropic.ContractSpendLimitReachedError),
        (
            "linked_organization_spend_limit_reached",
            anthropic.LinkedOrganizationSpendLimitReachedError,
        ),
    ],
)
def test_anthropic_spend_limits_reach_the_sdk_as_its_own_classes(claude, code, error_class):
    fake, client = claude
    fake.script([anthropic_spend_limit(code)])
    with pytest.raises(error_class) as caught:
        ask_claude(client)
    assert caught.value.error_code == code and "retry-after" not in caught.value.response.headers


def test_the_sdks_obey_x_should_retry(claude, gpt):
    fake, _ = claude
    client = anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=2)
    fake.script(
        [
            HttpError(429, retry_after=0.01, headers={"x-should-retry": "false"}),
            HttpError(400, headers={"x-should-retry": "true"}, retry_after=0.01),
            "done",
        ]
    )
    with pytest.raises(anthropic.RateLimitError):
        ask_claude(client)
    assert ask_claude(client).content[0].text == "done"  # the 400 was retried
    assert [r.status for r in fake.requests] == [429, 400, 200]


@pytest.mark.parametrize("code", ["insufficient_quota", "credit_balance_exhausted"])
def test_openai_quota_429(gpt, code):
    fake, client = gpt
    fake.script([openai_quota(code)])
    with pytest.raises(openai.RateLimitError) as caught:
        ask_gpt(client)
    assert caught.value.code == code and caught.value.type == "insufficient_quota"
    assert "retry-after" not in caught.value.response.headers


def test_openai_finish_reasons_and_refusal(gpt):
    fake, client = gpt
    fake.script([Text("", stop="content_filter"), Text("I can't help with that.", stop="refusal")])
    filtered = ask_gpt(client).choices[0]
    assert filtered.finish_reason == "content_filter"
    refused = ask_gpt(client).choices[0]
    assert refused.finish_reason == "stop" and refused.message.content is None
    assert refused.message.refusal == "I can't help with that."


def test_openai_reasoning_models_refuse_sampling_and_max_tokens(gpt):
    fake, client = gpt
    with pytest.raises(openai.BadRequestError, match="Only the default \\(1\\) value"):
        ask_gpt(client, model="o3", temperature=0.1)
    with pytest.raises(openai.BadRequestError, match="Use 'max_completion_tokens' instead"):
        ask_gpt(client, model="gpt-5.4-mini", max_tokens=100)
    with pytest.raises(openai.BadRequestError) as caught:
        ask_gpt(client, model="gpt-5.4-mini", top_p=1)
    assert caught.value.code == "unsupported_parameter" and caught.value.param == "top_p"
    fake.script(["ok"])
    assert ask_gpt(client, model="gpt-5.4-mini", max_completion_tokens=100).choices[0]


def _client(fake) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.url + "/v1", api_key="x", max_retries=0)


@pytest.mark.parametrize(
    ("flavour", "status", "words"),
    [
        ("ollama", 404, 'model "qwen3" not found, try pulling it first'),
        ("vllm", 404, "The model `qwen3` does not exist."),
        ("openai", 404, "does not exist or you do not have access to it"),
    ],
)
def test_openai_compatible_missing_model(flavour, status, words):
    with FakeOpenAI(flavour=flavour, models={"llama3.1"}) as fake:
        with pytest.raises(openai.NotFoundError) as caught:
            ask_gpt(_client(fake), model="qwen3")
    assert words in str(caught.value)


def test_openai_compatible_servers_without_tools():
    tools = {"tools": [READ_FILE_OPENAI]}
    with FakeOpenAI(flavour="vllm", tools=False) as fake:
        fake.script(["no tools asked: fine"])
        assert ask_gpt(_client(fake)).choices[0].message.content == "no tools asked: fine"
        with pytest.raises(openai.BadRequestError) as caught:
            ask_gpt(_client(fake), **tools)
    assert caught.value.body["object"] == "error" and caught.value.code == "400"
    assert '"auto" tool choice requires --enable-auto-tool-choice' in caught.value.body["message"]
    with FakeOpenAI(flavour="ollama", tools=False) as fake:
        with pytest.raises(openai.BadRequestError, match="gemma3:4b does not support tools"):
            ask_gpt(_client(fake), model="gemma3:4b", **tools)
    with pytest.raises(ValueError):
        FakeOpenAI(flavour="openai", tools=False)


@pytest.mark.parametrize(
    ("flavour", "words"),
    [
        ("openai", "This model's maximum context length is 10 tokens"),
        ("vllm", "you requested"),
        ("lmstudio", "greater than the context length (n_keep:"),
    ],
)
def test_openai_compatible_prompt_over_the_window_is_refused(flavour, words):
    with FakeOpenAI(flavour=flavour, context_window=10) as fake:
        with pytest.raises(openai.BadRequestError) as caught:
            ask_gpt(_client(fake), messages=[{"role": "user", "content": "x" * 100}])
    assert words in str(caught.value.body)  # LM Studio's `error` is a bare string


def test_ollama_cuts_a_long_prompt_silently():
    with FakeOpenAI(flavour="ollama", context_window=10) as fake:
        fake.script(["ok"])
        completion = ask_gpt(_client(fake), messages=[{"role": "user", "content": "x" * 100}])
    assert completion.choices[0].finish_reason == "stop" and completion.usage.prompt_tokens == 10
