"""Real-HTTP fakes of the Anthropic Messages API and OpenAI's APIs (Chat Completions, also in
Ollama's, vLLM's and LM Studio's flavours, and the Responses API): the one import path for
tests. The code is in ``llm_base.py`` (server, reply types), ``claude_api.py`` with
``claude_rules.py``, and ``openai_api.py`` with ``openai_responses.py``.

Tests drive our code through the official SDKs (request building, response parsing, error
classes, retry headers) with no network and no patching of SDK internals. Replies are consumed
in order, one per request; a reply may be a callable taking the request's JSON body. Requests
are checked like the vendor checks them, so a request the service would refuse fails here with
the service's status, body shape and wording. Each refusal names its public source where it is
made; the installed SDKs are the source for names, codes and body shapes.

Anthropic (``FakeAnthropic``): unknown and retired models (404), sampling parameters on models
that no longer take them, temperature with top_p, more than 4 cache breakpoints, a prompt over
the context window; current models think by default (signed thinking blocks first) and a turn
sent back altered, a prefill, ``max_tokens`` outside the model's range, a non-object tool
schema, empty content and thinking settings a model refuses are refused (``claude_rules.py``);
it streams (SSE) when asked, and a scripted ``StreamFault`` sends an error event inside
a 200 stream, cuts the connection, stalls, or pings first; every stop reason is scriptable (``Text(stop=...)``, ``pause_turn``
only with server tools); ``count_tokens`` is served with a count of 3 bytes per token (unlike
the runner's 4-characters estimate, so a test can tell which was used) and usage reports
prompt-cache reads and writes.

OpenAI-compatible (``FakeOpenAI``): the flavours ``openai``, ``ollama``, ``vllm`` and
``lmstudio`` answer a missing model, tools the server cannot take and an over-long prompt the
way each of them does (Ollama truncates silently); reasoning models refuse sampling parameters,
and the newest function tools on Chat Completions; ``/v1/responses`` answers with reasoning
items that must come back with their function calls; finish reasons ``length``,
``content_filter`` and refusals are scriptable.
"""

from tests.fakes.claude_api import (
    CLAUDE_MODELS,
    SPEND_LIMITS,
    STOP_REASONS,
    FakeAnthropic,
    anthropic_spend_limit,
)
from tests.fakes.llm_base import (
    NO_REPLY_LEFT,
    HttpError,
    RecordedRequest,
    Reply,
    StreamFault,
    Text,
    ToolCall,
    ToolUse,
    tool_results,
    tool_use,
)
from tests.fakes.openai_api import FakeOpenAI, openai_quota

__all__ = [
    "CLAUDE_MODELS",
    "NO_REPLY_LEFT",
    "SPEND_LIMITS",
    "STOP_REASONS",
    "FakeAnthropic",
    "FakeOpenAI",
    "HttpError",
    "RecordedRequest",
    "Reply",
    "StreamFault",
    "Text",
    "ToolCall",
    "ToolUse",
    "anthropic_spend_limit",
    "openai_quota",
    "tool_results",
    "tool_use",
]
