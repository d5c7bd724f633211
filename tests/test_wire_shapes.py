"""The comparison behind ``make llama`` (tests/wire_shapes.py): bodies recorded from
llama-cpp-python's server against the fake's, field by field."""

from __future__ import annotations

import json

from tests.wire_shapes import MISSING, answer_shape, compare, message_shape

# Recorded from llama-cpp-python 0.3.36 serving SmolLM2-135M-Instruct (make llama).
LLAMA_TOOL_CALL = {
    "id": "chatcmpl-574e5100-dffe-4883-b675-3c518d7e4822",
    "object": "chat.completion",
    "created": 1795702978,
    "model": "x",
    "choices": [
        {
            "index": 0,
            "message": {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call__0_repo_tree_cmpl-dc619ea7-4d4a-4d11-a376-035199a175f7",
                        "type": "function",
                        "function": {
                            "name": "repo_tree",
                            "arguments": '{ "path": "/Users/john-doe/my_repo.git" }',
                        },
                    }
                ],
                "role": "assistant",
                "function_call": {
                    "name": "repo_tree:",
                    "arguments": '{ "path": "/Users/john-doe/my_repo.git" }',
                },
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 240, "completion_tokens": 20, "total_tokens": 260},
}
LLAMA_JSON_SCHEMA_REFUSED = {
    "error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
        "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
        "'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File "
        '"/srv/venv/lib/python3.11/site-packages/llama_cpp/server/app.py", line 376, in '
        "create_chat_completion\n    POST /v1/chat/completions",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}


def test_a_tool_call_shape_is_what_the_provider_reads():
    shape = answer_shape(200, LLAMA_TOOL_CALL)
    assert shape["finish_reason"] == "tool_calls" and shape["message.content"] == "null"
    assert shape["call.id"] == 'string starting "call_"'
    assert shape["call.type"] == "'function'" and shape["call.function.name"] == "'repo_tree'"
    assert shape["call.function.arguments"] == "JSON string of an object"
    assert shape["message.keys"] == "content, function_call, role, tool_calls"


def test_arguments_sent_as_an_object_or_broken_json_differ():
    call = LLAMA_TOOL_CALL["choices"][0]["message"]["tool_calls"][0]
    as_object = json.loads(json.dumps(LLAMA_TOOL_CALL))
    as_object["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = {"path": "."}
    rows = {
        row[0]: row
        for row in compare(answer_shape(200, LLAMA_TOOL_CALL), answer_shape(200, as_object))
    }
    assert rows["call.function.arguments"] == (
        "call.function.arguments",
        "JSON string of an object",
        "not a string (dict)",
        False,
    )
    assert rows["call.id"][3] and call["id"].startswith("call_")
    cut = json.loads(json.dumps(LLAMA_TOOL_CALL))
    cut["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"path": "sr'
    assert answer_shape(200, cut)["call.function.arguments"] == "string, not JSON"


def test_errors_compare_by_place_not_by_the_servers_path_or_numbers():
    ours = json.loads(json.dumps(LLAMA_JSON_SCHEMA_REFUSED))
    ours["error"]["message"] = ours["error"]["message"].replace("/srv/venv", "/venv")
    real, fake = answer_shape(500, LLAMA_JSON_SCHEMA_REFUSED), answer_shape(500, ours)
    assert all(same for *_, same in compare(real, fake))
    assert real["error.message"] == "N validation error:; at ('body', 'response_format', 'type')"
    fastapi = answer_shape(422, {"detail": [{"loc": ["body"], "msg": "x"}]})
    assert fastapi == {"status": "422", "error": "no error object (body keys: detail)"}


def test_a_field_only_one_side_has_is_a_difference():
    text = answer_shape(200, {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]})
    rows = compare(answer_shape(200, LLAMA_TOOL_CALL), text)
    missing = [row for row in rows if row[2] == MISSING]
    assert {row[0] for row in missing} >= {"call.id", "call.type", "call.function.arguments"}
    assert not any(row[3] for row in missing)
    assert message_shape("maximum context length is 2048 tokens\nmore") == (
        "maximum context length is N tokens"
    )
