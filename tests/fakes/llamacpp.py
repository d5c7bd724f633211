"""The fake's ``llamacpp`` flavour: llama-cpp-python's OpenAI-compatible server (0.3.x, the one
``make llama`` builds), where it answers otherwise than OpenAI. Each rule names the file of
llama-cpp-python it comes from and was seen on the real server (scripts/llama_compare.py).

Its request types are pydantic models behind FastAPI, and its route handler
(llama_cpp/server/errors.py, ``RouteErrorHandler``) answers every exception it has no pattern
for, validation errors included, with a 500 ``internal_server_error`` quoting the error and
the server's source line: a request it can never take looks like a server fault, which a
client retries.
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.fakes.llm_base import HttpError, Text, ToolUse

SOURCE_LINE = (
    '\n\n  File "/venv/lib/python3.11/site-packages/llama_cpp/server/app.py", line 376, in '
    "create_chat_completion\n    POST /v1/chat/completions"
)
NO_CONTENT = "'dict object' has no attribute 'content'"


def server_fault(message: str) -> HttpError:
    # as_real: the real 500 carries no x-should-retry, so a client sees a retryable status.
    return HttpError(500, message, type="internal_server_error", as_real=True)


def problem(body: dict[str, Any]) -> HttpError | None:
    kind = (body.get("response_format") or {}).get("type")
    if kind is not None and kind not in ("text", "json_object"):
        # llama_types.py, ChatCompletionRequestResponseFormat: type "text" | "json_object".
        error = pydantic_error(
            [
                (
                    "literal_error",
                    ("response_format", "type"),
                    "Input should be 'text' or 'json_object'",
                    repr(kind),
                    "'text' or 'json_object'",
                )
            ]
        )
        return server_fault(error + SOURCE_LINE)
    for i, message in enumerate(body.get("messages") or []):
        if message.get("role") == "assistant" and "content" in message:
            if not isinstance(message["content"], str):
                return server_fault(assistant_content_error(i, message) + SOURCE_LINE)
        if "content" not in message:
            # The ChatML template reads message.content of every message (jinja2's error).
            return server_fault(NO_CONTENT)
    return None


def assistant_content_error(i: int, message: dict[str, Any]) -> str:
    """llama_types.py, ChatCompletionRequestAssistantMessage: ``content: NotRequired[str]``, so
    null fails every member of the message union, in its order."""
    echo = repr(message)
    role = ("role",)
    errors = [
        (
            "literal_error",
            (i, "ChatCompletionRequestSystemMessage", *role),
            "Input should be 'system'",
            "'assistant'",
            "'system'",
        ),
        (
            "literal_error",
            (i, "ChatCompletionRequestUserMessage", *role),
            "Input should be 'user'",
            "'assistant'",
            "'user'",
        ),
        (
            "string_type",
            (i, "ChatCompletionRequestAssistantMessage", "content"),
            "Input should be a valid string",
            repr(message["content"]),
            None,
        ),
        (
            "literal_error",
            (i, "ChatCompletionRequestToolMessage", *role),
            "Input should be 'tool'",
            "'assistant'",
            "'tool'",
        ),
        (
            "missing",
            (i, "ChatCompletionRequestToolMessage", "tool_call_id"),
            "Field required",
            echo,
            None,
        ),
        (
            "literal_error",
            (i, "ChatCompletionRequestFunctionMessage", *role),
            "Input should be 'function'",
            "'assistant'",
            "'function'",
        ),
        (
            "missing",
            (i, "ChatCompletionRequestFunctionMessage", "name"),
            "Field required",
            echo,
            None,
        ),
    ]
    return pydantic_error(
        [(kind, ("messages", *loc), msg, given, ctx) for kind, loc, msg, given, ctx in errors]
    )


def pydantic_error(errors: list[tuple]) -> str:
    """pydantic's ValidationError as the route handler prints it: a count, then one repr'd
    error dict a line (type, loc under 'body', msg, input, ctx)."""
    lines = []
    for kind, loc, msg, given, expected in errors:
        where = repr(("body", *loc))
        quoted = f'"{msg}"' if "'" in msg else f"'{msg}'"
        line = f"{{'type': '{kind}', 'loc': {where}, 'msg': {quoted}, 'input': {given}"
        line += f", 'ctx': {{'expected': \"{expected}\"}}}}" if expected else "}"
        lines.append("  " + line)
    noun = "error" if len(errors) == 1 else "errors"
    return f"{len(errors)} validation {noun}:\n" + "\n".join(lines)


def window_problem(body: dict[str, Any], prompt: int, window: int) -> HttpError | None:
    """llama.py, ``Llama._create_completion``: a prompt of n_ctx tokens or more is refused, in
    the OpenAI-style body of server/errors.py (``context_length_exceeded``: the completion
    part is the request's ``max_tokens``, "None" when absent); a prompt that fits but leaves
    less room than max_tokens is answered, cut off at the window."""
    if prompt < window:
        return None
    wanted = body.get("max_tokens")
    text = f"This model's maximum context length is {window} tokens. However, you requested {(wanted or 0) + prompt} tokens ({prompt} in the messages, {wanted} in the completion). Please reduce the length of the messages or completion."
    return HttpError(
        400, text, type="invalid_request_error", param="messages", code="context_length_exceeded"
    )


def reply_seen(reply: Text | ToolUse, request: dict[str, Any]) -> Text | ToolUse:
    """llama_chat_format.py, chatml_function_calling ("Case 1: No tool choice by user"): without
    tool_choice (or with "none") the tools never reach the prompt, so the model answers text."""
    if isinstance(reply, ToolUse) and request.get("tool_choice") in (None, "none"):
        return Text(reply.text or "")
    return reply


def reshape(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer in llama-cpp-python's shape (llama_chat_format.py, _convert_completion_to_chat
    and chatml_function_calling): no OpenAI-only keys, call ids ``call__<i>_<name>_cmpl-<id>``,
    and the legacy ``function_call`` beside ``tool_calls`` (its name ends in ":", as sent)."""
    completion = f"cmpl-{uuid.uuid4()}"
    choice = answer["choices"][0]
    message = {"content": choice["message"]["content"]}
    calls = choice["message"].get("tool_calls")
    if calls:
        for i, call in enumerate(calls):
            call["id"] = f"call__{i}_{call['function']['name']}_{completion}"
        message |= {"tool_calls": calls, "role": "assistant"}
        first = calls[0]["function"]
        message["function_call"] = {"name": first["name"] + ":", "arguments": first["arguments"]}
    else:
        message["role"] = "assistant"
    usage = {k: answer["usage"][k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    return {
        "id": f"chatcmpl-{uuid.uuid4()}",
        "object": "chat.completion",
        "created": answer["created"],
        "model": answer["model"],
        "choices": [{**choice, "message": message}],
        "usage": usage,
    }
