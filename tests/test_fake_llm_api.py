"""The LLM API fakes, exercised through the real `anthropic` and `openai` SDKs."""

import json

import anthropic
import openai
import pytest

from tests.fakes.llm_api import (
    NO_REPLY_LEFT,
    FakeAnthropic,
    FakeOpenAI,
    HttpError,
    Text,
    ToolCall,
    ToolUse,
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

    message = ask_claude(
        client, system="You are a reviewer.", extra_body={"temperature": 0.1, "top_p": 0.9}
    )

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
    assert request.json["temperature"] == 0.1 and request.json["top_p"] == 0.9
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
