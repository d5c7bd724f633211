"""The fake OpenAI-compatible API (``FakeOpenAI``): Chat Completions in four servers' flavours
and OpenAI's Responses API (``openai_responses.py``); see ``llm_api.py`` for what it checks."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable
from typing import Any

from tests.fakes import llamacpp, openai_responses
from tests.fakes.llm_base import (
    _SYSTEM_ROLES,
    HttpError,
    RecordedRequest,
    Text,
    ToolUse,
    _clip,
    _FakeServer,
    _in_range,
    _new_id,
    _tokens,
)


def openai_quota(code: str = "insufficient_quota") -> HttpError:
    """OpenAI's billing 429: type insufficient_quota and a code naming the cause
    (help.openai.com/en/articles/5955604; the body as quoted in NVIDIA-NeMo/Guardrails#371)."""
    message = (
        "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, read the docs: "
        "https://platform.openai.com/docs/guides/error-codes/api-errors."
    )
    return HttpError(429, message, type="insufficient_quota", code=code, no_retry_after=True)


# -- OpenAI-compatible -------------------------------------------------------------------------
OPENAI_REASONING = re.compile(r"o\d|gpt-[5-9]")
RESPONSES = "/v1/responses"
FLAVOURS = ("openai", "ollama", "vllm", "lmstudio", "llamacpp")


class FakeOpenAI(_FakeServer):
    """`POST /v1/chat/completions`. Client: `openai.OpenAI(base_url=fake.url + "/v1", ...)`.
    Answers a single choice whatever `n` asks for.

    `flavour` picks whose wording errors use (``llamacpp``: llama-cpp-python's server, see
    ``_llamacpp_problem``); `models` (None: any name) are the models served;
    `tools=False` is a server that cannot take tools (vLLM without a tool-call parser, an Ollama
    model without the tools capability); `context_window` is the prompt size in tokens the
    loaded model takes."""

    vendor, endpoint, request_id_header = "openai", "/v1/chat/completions", "x-request-id"
    other_endpoints = (RESPONSES,)  # OpenAI's Responses API (tests/fakes/openai_responses.py)
    known_params = frozenset(
        "audio frequency_penalty function_call functions logit_bias logprobs max_completion_tokens"
        " max_tokens messages metadata modalities model moderation n parallel_tool_calls"
        " prediction presence_penalty prompt_cache_key prompt_cache_options"
        " prompt_cache_retention reasoning_effort response_format safety_identifier seed"
        " service_tier stop store stream stream_options temperature tool_choice tools"
        " top_logprobs top_p user verbosity web_search_options".split()
    )
    ERRORS = {  # status: (type, code, message)
        401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
        429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
        500: ("server_error", None, "The server had an error while processing your request."),
        503: ("server_error", None, "The server is overloaded or not ready yet."),
    }

    def __init__(
        self,
        *,
        extra_params: Iterable[str] = (),
        flavour: str = "openai",
        models: Iterable[str] | None = None,
        tools: bool = True,
        context_window: int | None = None,
    ) -> None:
        super().__init__(extra_params=extra_params)
        if flavour not in FLAVOURS or (not tools and flavour not in ("vllm", "ollama")):
            raise ValueError(f"unsupported fake setup: flavour={flavour!r}, tools={tools}")
        self.flavour = flavour
        self.models = None if models is None else frozenset(models)
        self.responses = openai_responses.Ledger()  # reasoning items handed out
        self.tools = tools
        self.context_window = context_window
        self._prefixes: set[str] = set()  # prompt prefixes in the automatic prompt cache

    def error_body(self, err: HttpError, request_id: str) -> dict[str, Any]:
        fallback = self.ERRORS[500] if err.status >= 500 else ("invalid_request_error", None, "")
        type_, code, message = self.ERRORS.get(err.status, fallback)
        error = {"message": err.message or message, "type": err.type or type_}
        return {"error": error | {"param": err.param, "code": err.code or code}}

    def validate(self, record: RecordedRequest) -> HttpError | None:
        if not record.headers.get("authorization", "").startswith("Bearer "):
            error = {"message": "You didn't provide an API key.", "type": "invalid_request_error"}
            return HttpError(401, body={"error": error | {"param": None, "code": None}})
        body = record.json or {}
        if record.path.split("?")[0] == RESPONSES:
            found = self.responses.problem(body)
            if found:
                return HttpError(400, found[0], param=found[1])
            unstored = self.responses.unstored_reference(body)
            if unstored:
                return HttpError(404, unstored, param="input")
            return self._model_problem(str(body["model"]))
        return (
            _openai_problem(body, self.allowed_params)
            or self._model_problem(str(body["model"]))
            or (_reasoning_problem(body) if self.flavour == "openai" else None)
            or self._tools_problem(body)
            or (llamacpp.problem(body) if self.flavour == "llamacpp" else None)
            or self._window_problem(body)
        )

    def _model_problem(self, model: str) -> HttpError | None:
        if self.models is None or model in self.models:
            return None
        if self.flavour == "ollama":  # netease-youdao/QAnything#555
            message = f'model "{model}" not found, try pulling it first'
            return HttpError(404, message, type="api_error")
        if self.flavour == "vllm":  # vLLM's flat error body, as in FoundationAgents/OpenManus#331
            message = f"The model `{model}` does not exist."
            return HttpError(404, body=_vllm_error(message, "NotFoundError", 404))
        message = f"The model `{model}` does not exist or you do not have access to it."
        return HttpError(404, message, code="model_not_found")

    def _tools_problem(self, body: dict[str, Any]) -> HttpError | None:
        if self.tools or not body.get("tools"):
            return None
        if self.flavour == "vllm":  # vllm-project/vllm#9986, FoundationAgents/OpenManus#331
            message = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
            return HttpError(400, body=_vllm_error(message, "BadRequestError", 400))
        # ollama/ollama#14795, louisho5/picobot#6
        message = f"registry.ollama.ai/library/{body['model']} does not support tools"
        return HttpError(400, message, type="api_error")

    def _window_problem(self, body: dict[str, Any]) -> HttpError | None:
        prompt = _tokens([body.get("messages"), body.get("tools")])
        window = self.context_window
        if window is None or self.flavour == "ollama":
            return None  # Ollama truncates the prompt silently instead (see render)
        if self.flavour == "llamacpp":
            return llamacpp.window_problem(body, prompt, window)
        if prompt <= window:
            return None
        if self.flavour == "lmstudio":  # Gitlawb/openclaude#353
            text = f"The number of tokens to keep from the initial prompt is greater than the context length (n_keep: {prompt}>= n_ctx: {window}). Try to load the model with a larger context length, or provide a shorter input."
            return HttpError(400, body={"error": text})
        if self.flavour == "vllm":  # ruipeterpan/specreason#4
            wanted = body.get("max_tokens") or 0
            text = f"This model's maximum context length is {window} tokens. However, you requested {prompt + wanted} tokens ({prompt} in the messages, {wanted} in the completion). Please reduce the length of the messages or completion."
            return HttpError(400, body=_vllm_error(text, "BadRequestError", 400))
        # crewAIInc/crewAI-examples#121
        text = f"This model's maximum context length is {window} tokens. However, your messages resulted in {prompt} tokens. Please reduce the length of the messages."
        return HttpError(400, text, param="messages", code="context_length_exceeded")

    def cached_tokens(self, head: Any, items: list[Any]) -> int:
        """OpenAI's automatic prompt caching ("Prompt caching" guide): prompts of 1,024 tokens
        or more are cached by prefix, and a later prompt that starts with a cached prefix
        reads it, counted from 1,024 tokens in steps of 128. A prefix here ends at an item
        (message or input item) after ``head`` (tools, instructions)."""
        digest, size, prefixes = hashlib.sha256(json.dumps(head).encode()), _tokens(head), []
        for item in items:
            digest.update(json.dumps(item).encode())
            size += _tokens(item)
            prefixes.append((digest.hexdigest(), size))
        with self._lock:
            hit = max((n for key, n in prefixes if key in self._prefixes), default=0)
            self._prefixes.update(key for key, n in prefixes if n >= 1024)
        return 0 if hit < 1024 or self.flavour != "openai" else 1024 + (hit - 1024) // 128 * 128

    def render(self, reply: Text | ToolUse, request: dict[str, Any]) -> dict[str, Any]:
        if "input" in request and "messages" not in request:  # a Responses API request
            items = request["input"] if isinstance(request["input"], list) else [request["input"]]
            head = [request.get("instructions"), request.get("tools")]
            cached = self.cached_tokens(head, items)
            return self.responses.render(reply, request, _tokens, cached)
        if self.flavour == "llamacpp":
            reply = llamacpp.reply_seen(reply, request)
        message: dict[str, Any] = {"role": "assistant", "refusal": None, "annotations": []}
        if isinstance(reply, Text):
            reply = _clip(reply, request.get("max_completion_tokens", request.get("max_tokens")))
            finish_reason = reply.stop or ("length" if reply.truncated else "stop")
            message["content"], output = reply.text, reply.text
            if finish_reason == "refusal":  # structured outputs: the refusal, no content
                message["content"], message["refusal"], finish_reason = None, reply.text, "stop"
            if finish_reason not in ("stop", "length", "content_filter"):
                raise ValueError(f"{finish_reason!r} is not a finish reason for a text reply")
        else:
            message["content"] = reply.text  # null when the model only calls tools
            message["tool_calls"] = [
                {
                    "id": c.id or _new_id("call_", 24),
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.input)},
                }
                for c in reply.calls
            ]
            finish_reason, output = "tool_calls", message
        prompt = _tokens([request.get("messages"), request.get("tools")])
        if self.flavour == "ollama" and self.context_window:
            # "truncating input prompt" limit=2048 prompt=17624 (ollama/ollama#7907): the
            # server keeps the window's worth and says nothing to the client.
            prompt = min(prompt, self.context_window)
        usage = {"prompt_tokens": prompt, "completion_tokens": _tokens(output)}
        usage["total_tokens"] = prompt + usage["completion_tokens"]
        cached = min(
            prompt, self.cached_tokens(request.get("tools"), request.get("messages") or [])
        )
        usage["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
        usage["completion_tokens_details"] = {"reasoning_tokens": 0, "audio_tokens": 0}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        answer = {
            "id": _new_id("chatcmpl-", 29),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model"),
            "choices": [choice],
            "usage": usage,
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
        }
        return llamacpp.reshape(answer) if self.flavour == "llamacpp" else answer


def _vllm_error(message: str, type_: str, code: int) -> dict[str, Any]:
    return {"object": "error", "message": message, "type": type_, "param": None, "code": code}


# Function tools on Chat Completions: the gpt-5.6 family and later refuse them with any
# reasoning effort but "none", their default included (laurent22/joplin#16451: "Joplin never
# sends reasoning_effort"; GEMISIS/leviath#333, GoogleChromeLabs/webmcp-tools#417); gpt-5.2 and
# 5.4 refuse them with an explicit reasoning_effort (pipecat-ai/pipecat#4043, livekit/agents#5088).
TOOLS_NEED_RESPONSES = re.compile(r"gpt-(5\.([6-9]|\d\d)|[6-9])")
TOOLS_WITHOUT_EFFORT = re.compile(r"gpt-5\.[2-5]")


def _chat_tools_problem(body: dict[str, Any]) -> HttpError | None:
    model, effort = str(body.get("model")), body.get("reasoning_effort")
    if not body.get("tools") or effort == "none":
        return None
    if TOOLS_NEED_RESPONSES.match(model):
        message = f"Function tools with reasoning_effort are not supported for {model} in /v1/chat/completions. To use function tools, use /v1/responses or set reasoning_effort to 'none'."
        return HttpError(400, message, param="reasoning_effort")
    if TOOLS_WITHOUT_EFFORT.match(model) and effort is not None:
        message = f"Function tools with reasoning_effort are not supported for {model} in /v1/chat/completions. Please use /v1/responses instead."
        return HttpError(400, message, param="reasoning_effort")
    return None


def _reasoning_problem(body: dict[str, Any]) -> HttpError | None:
    """OpenAI's reasoning models refuse sampling parameters and `max_tokens`
    (BeehiveInnovations/pal-mcp-server#78, npiv/chatblade#100, griptape-ai/ComfyUI-Griptape#312)
    and, the newer ones, function tools on this endpoint (`_chat_tools_problem`)."""
    if not OPENAI_REASONING.match(str(body.get("model"))):
        return None
    tools = _chat_tools_problem(body)
    if tools is not None:
        return tools
    temperature = body.get("temperature")
    if temperature is not None and temperature != 1:
        message = f"Unsupported value: 'temperature' does not support {temperature} with this model. Only the default (1) value is supported."
        return HttpError(400, message, param="temperature", code="unsupported_value")
    for key, hint in (("top_p", ""), ("max_tokens", " Use 'max_completion_tokens' instead.")):
        if key in body:
            message = f"Unsupported parameter: '{key}' is not supported with this model.{hint}"
            return HttpError(400, message, param=key, code="unsupported_parameter")
    return None


def _openai_problem(body: dict[str, Any], allowed: frozenset[str]) -> HttpError | None:
    """The first thing the real API would reject, worded like its 400 errors."""
    if "model" not in body:
        return HttpError(400, "you must provide a model parameter")
    if "messages" not in body:
        message, code = "Missing required parameter: 'messages'.", "missing_required_parameter"
        return HttpError(400, message, param="messages", code=code)
    unknown = next((key for key in body if key not in allowed), None)
    if unknown:
        return HttpError(400, f"Unrecognized request argument supplied: {unknown}")
    for key, high in (("temperature", 2), ("top_p", 1)):
        if not _in_range(body.get(key), 0, high):
            message = f"Invalid '{key}': expected a number between 0 and {high}."
            return HttpError(400, message, param=key, code="invalid_value")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        message = "Invalid 'messages': empty array. Expected an array with minimum length 1."
        return HttpError(400, message, param="messages", code="empty_array")
    asked: dict[str, int] = {}  # unanswered tool_call id -> index of its assistant message
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in (*_SYSTEM_ROLES, "user", "assistant", "tool", "function"):
            param = f"messages[{i}].role"
            return HttpError(400, f"Invalid value: '{role}'.", param=param, code="invalid_value")
        if role == "tool":
            if asked.pop(message.get("tool_call_id"), None) is None:  # [sic] "preceeding"
                text = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
                return HttpError(400, text, param=f"messages.[{i}].role")
            continue
        if asked:
            break
        tool_calls = (message.get("tool_calls") or []) if role == "assistant" else []
        asked = {call.get("id"): i for call in tool_calls}
    if asked:  # also catches a conversation ending on unanswered tool calls
        text = f"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(asked)}"
        return HttpError(400, text, param=f"messages.[{min(asked.values())}].role")
    return None
