"""A scripted model for runs through the real workflow against a fake vendor (tests/fakes):
it answers each agent by its request, with the one test case and the spec files given."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator

from tests.fakes.llm_api import FakeAnthropic, ToolCall, ToolUse


@contextlib.contextmanager
def fake_anthropic(monkeypatch, answers: list) -> Iterator[FakeAnthropic]:
    """A fake Anthropic answering ``answers`` in turn, set as the provider of the agent
    processes a worker spawns (they read it from the environment)."""
    with FakeAnthropic() as fake:
        fake.script(answers)
        for name, value in {
            "AMTP_LLM_PROVIDER": "anthropic",
            "ANTHROPIC_API_KEY": "sk-test-not-a-real-key",
            "ANTHROPIC_BASE_URL": fake.url,
        }.items():
            monkeypatch.setenv(name, value)
        yield fake


def scripted_model(case: dict, files: list[dict], pr_body: str) -> Callable[[dict], object]:
    """Crawler: one tree call, then a map; generator: ``case``; engineer: ``files``; heal:
    the files back unchanged (nothing honest to change)."""

    def answer(request: dict):
        if request.get("tools"):
            if not any(m["role"] == "assistant" for m in request["messages"]):
                return ToolUse((ToolCall("repo_tree", {}),))
            entry = {"path": "app.py", "kind": "api_route"}
            return json.dumps({"entry_points": [entry], "detected_stack": {"runtime": "python"}})
        content = request["messages"][0]["content"]
        envelope = json.loads(content if isinstance(content, str) else content[0]["text"])
        system = json.dumps(request.get("system"))
        run_id = envelope["run_id"]
        if "healing session" in system:
            back = [{"path": f["path"], "contents": f["contents"]} for f in envelope["files"]]
            return json.dumps({"run_id": run_id, "files": back, "changes": []})
        if "Test Case Generator" in system:
            return json.dumps({"run_id": run_id, "test_cases": [case], "coverage_notes": ""})
        return json.dumps(
            {
                "run_id": run_id,
                "framework": "playwright",
                "files": files,
                "pr_title": "Add end-to-end tests",
                "pr_body": pr_body,
            }
        )

    return answer
