"""The shape of a Chat Completions answer, and the field-by-field comparison of two of them.

Shared by ``scripts/llama_compare.py`` (a real llama.cpp server against our fake, the same
requests through our provider) and ``tests/test_wire_shapes.py``. A shape is what a client
relies on, not the model's words: the status, ``finish_reason``, the kind of ``content``, each
tool call's id, type, name and whether its ``arguments`` is a JSON string of an object, and for
an error the body's keys, type, code, param and message (its first line with the numbers
blanked, and where it lists validation errors, where each one is).
"""

from __future__ import annotations

import json
import re
from typing import Any

MISSING = "—"  # a field one answer has and the other has not


def answer_shape(status: int, body: Any) -> dict[str, str]:
    """The compared fields of one HTTP answer of ``POST /v1/chat/completions``."""
    shape = {"status": str(status)}
    if not isinstance(body, dict):
        return shape | {"body": "not a JSON object"}
    if status >= 400:
        return shape | error_shape(body)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        return shape | {"choices": "none"}
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    shape["keys"] = ", ".join(sorted(body))
    shape["message.keys"] = ", ".join(sorted(message))
    shape["finish_reason"] = str(choice.get("finish_reason"))
    shape["message.content"] = value_kind(message.get("content"))
    calls = message.get("tool_calls") or []
    shape["tool_calls"] = str(len(calls)) if isinstance(calls, list) else value_kind(calls)
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        shape |= call_shape(calls[0])
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    counted = all(isinstance(usage.get(k), int) for k in ("prompt_tokens", "completion_tokens"))
    shape["usage"] = "token counts" if counted else "missing"
    return shape


def call_shape(call: dict[str, Any]) -> dict[str, str]:
    """The first tool call: what our provider reads from it."""
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    return {
        "call.id": id_kind(call.get("id")),
        "call.type": repr(call.get("type")),
        "call.function.name": repr(function.get("name")),
        "call.function.arguments": arguments_kind(function.get("arguments")),
    }


def error_shape(body: dict[str, Any]) -> dict[str, str]:
    error = body.get("error")
    if not isinstance(error, dict):
        return {"error": f"no error object (body keys: {', '.join(sorted(body))})"}
    return {
        "error.keys": ", ".join(sorted(error)),
        "error.type": repr(error.get("type")),
        "error.code": repr(error.get("code")),
        "error.param": repr(error.get("param")),
        "error.message": message_shape(str(error.get("message"))),
    }


def value_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "empty string" if value == "" else "string"
    return type(value).__name__


def id_kind(value: Any) -> str:
    if not isinstance(value, str) or not value:
        return f"not a non-empty string ({value_kind(value)})"
    prefix = re.match(r"[a-z]+_", value)
    return f'string starting "{prefix.group(0)}"' if prefix else "string"


def arguments_kind(value: Any) -> str:
    if not isinstance(value, str):
        return f"not a string ({value_kind(value)})"
    try:
        parsed = json.loads(value)
    except ValueError:
        return "string, not JSON"
    return "JSON string of an object" if isinstance(parsed, dict) else "JSON string, not an object"


def message_shape(text: str) -> str:
    """The first line with numbers blanked, then the place (``loc``) of each validation error
    a pydantic message lists: what stays the same from one request to the next."""
    first = blank_numbers(text.split("\n", 1)[0])
    places = re.findall(r"'loc': \(([^)]*)\)", text)
    return first + "".join(f"; at ({blank_numbers(place)})" for place in places)


def blank_numbers(text: str) -> str:
    """A message with its numbers as N, so two servers' wordings compare, not their sizes."""
    return re.sub(r"\d+", "N", text)


def compare(real: dict[str, str], fake: dict[str, str]) -> list[tuple[str, str, str, bool]]:
    """(field, real value, fake value, same?) for every field either answer has, in order."""
    fields = list(dict.fromkeys([*real, *fake]))
    return [
        (name, real.get(name, MISSING), fake.get(name, MISSING), real.get(name) == fake.get(name))
        for name in fields
    ]
