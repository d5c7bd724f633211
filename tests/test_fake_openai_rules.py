"""The OpenAI fake refuses function tools on Chat Completions where OpenAI does (issue 28):
these tests fail against the fake of before, which took tools on every model."""

from __future__ import annotations

import openai
import pytest

from tests.fakes.llm_api import FakeOpenAI

HELLO = [{"role": "user", "content": "hello"}]
TOOL = {
    "type": "function",
    "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}},
}


@pytest.fixture
def client():
    with FakeOpenAI() as fake:
        fake.script(["ok"] * 4)
        yield openai.OpenAI(base_url=fake.url + "/v1", api_key="test", max_retries=0)


@pytest.mark.parametrize("model", ["gpt-5.6-terra", "gpt-6-astra", "gpt-6.1-sol"])
def test_the_newest_reasoning_models_refuse_tools_on_chat_completions(client, model):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=model, messages=HELLO, tools=[TOOL])
    assert "use /v1/responses or set reasoning_effort to 'none'" in caught.value.message
    assert caught.value.param == "reasoning_effort"
    answer = client.chat.completions.create(
        model=model, messages=HELLO, tools=[TOOL], reasoning_effort="none"
    )
    assert answer.choices[0].message.content == "ok"


def test_gpt_5_4_refuses_tools_only_with_a_reasoning_effort(client):
    with pytest.raises(openai.BadRequestError, match="Please use /v1/responses instead"):
        client.chat.completions.create(
            model="gpt-5.4", messages=HELLO, tools=[TOOL], reasoning_effort="low"
        )
    answer = client.chat.completions.create(model="gpt-5.4-mini", messages=HELLO, tools=[TOOL])
    assert answer.choices[0].message.content == "ok"
