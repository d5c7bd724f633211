"""Streamed answers that go wrong after HTTP 200, through the real SDK against the fake over
HTTP: an error event inside the stream is classified by its type (not the 200 it arrived
under), a cut or silent stream is a retryable ``LlmStreamInterrupted``, pings keep a slow
stream alive, and on the real worker each fault costs one attempt of its stage, no more."""

import asyncio
import json

import pytest

from agents.crawler import crawl
from agents.errors import LlmProviderError, LlmProviderRejected, LlmStreamInterrupted
from agents.runner import Budgets
from runs.services import run_create
from runs.temporal import types as t
from runs.temporal.worker_thread import WorkerThread
from tests.contract_examples import RUN_ID
from tests.factories import RepositoryFactory
from tests.fakes.llm_api import FakeAnthropic, StreamFault, tool_use
from tests.gitrepo import git, make_git_repo
from tests.scripted_model import fake_anthropic, scripted_model
from tests.temporal_worker import wait_terminal, worker_setting
from tests.test_providers import CLAUDE, KEY, ask, assert_no_key, make_claude
from tests.test_workflow import local_repo
from tests.test_workflow_retries import attempts_of

STREAMED = 48_000  # AMTP's default answer budget: above the SDK's non-streaming ceiling


def streaming_claude(fake, timeout: float = 5.0):
    provider = make_claude(fake, max_output_tokens=STREAMED, timeout_seconds=timeout)
    assert provider.plan.max_tokens > 21_333  # the request streams (anthropic.py)
    return provider


@pytest.fixture
def claude():
    with FakeAnthropic() as fake:
        yield fake


@pytest.mark.parametrize("kind", ["overloaded_error", "api_error", "rate_limit_error"])
def test_a_transient_error_inside_a_200_stream_is_retryable(claude, kind):
    claude.script([StreamFault("hello", fault="error", error_type=kind, message="Overloaded")])
    with pytest.raises(LlmProviderError) as caught:
        ask(streaming_claude(claude))
    exc = caught.value
    assert exc.retryable and not isinstance(exc, LlmStreamInterrupted)
    assert exc.details["status"] == 200 and exc.details["error_type"] == kind
    assert f"{kind} inside the answer's stream: Overloaded" in exc.message
    assert_no_key(exc)


def test_an_invalid_request_inside_a_stream_is_final(claude):
    claude.script(
        [StreamFault("hello", fault="error", error_type="invalid_request_error", message="bad")]
    )
    with pytest.raises(LlmProviderRejected) as caught:
        ask(streaming_claude(claude))
    assert not caught.value.retryable and "invalid_request_error" in caught.value.message


def test_a_cut_stream_is_retryable_with_its_own_class(claude):
    claude.script([StreamFault("hello", fault="drop", after=2)])
    with pytest.raises(LlmStreamInterrupted) as caught:
        ask(streaming_claude(claude))
    exc = caught.value
    assert exc.retryable and exc.details["error_type"] == "RemoteProtocolError"
    assert "stream was cut after it began" in exc.message and "incomplete" in exc.message
    assert_no_key(exc)


def test_a_silent_stream_is_given_up_after_the_timeout(claude):
    claude.script([StreamFault("hello", fault="stall", after=3)])
    with pytest.raises(LlmStreamInterrupted) as caught:
        ask(streaming_claude(claude, timeout=0.5))
    exc = caught.value
    assert exc.retryable and exc.details["error_type"] == "ReadTimeout"
    assert "went silent (no event, not even a ping) for 0.5 s (AMTP_LLM_TIMEOUT_S)" in exc.message


def test_pings_keep_a_slow_stream_alive(claude):
    # Four pings 0.3 s apart: 1.2 s in all, each gap well inside the 1 s read timeout.
    claude.script([StreamFault("hello", pings=4, ping_every=0.3)])
    assert ask(streaming_claude(claude, timeout=1.0)).text == "hello"


def test_each_fault_is_followed_by_an_attempt_that_passes(claude):
    for fault in ("error", "drop", "stall"):
        claude.script([StreamFault("hello", fault=fault, after=2), "hello again"])
        provider = streaming_claude(claude, timeout=0.5)
        with pytest.raises(LlmProviderError) as caught:  # LlmStreamInterrupted is one
            ask(provider)
        assert caught.value.retryable
        assert ask(streaming_claude(claude, timeout=0.5)).text == "hello again"
    assert claude.pending == [] and KEY not in repr(claude.requests[-1].headers.get("x-api-key"))


APP = {
    "app.py": "from flask import Flask\n\napp = Flask(__name__)\n\n\n@app.get('/')\n"
    "def home():\n    return 'home'\n",
    "requirements.txt": "flask\n",
}
ANSWER = scripted_model(
    case={
        "id": "tc_home",
        "title": "Home page shows the app",
        "preconditions": ["The app is running"],
        "steps": ["Open /"],
        "expected": "The home page is shown",
        "priority": "critical",
    },
    files=[
        {
            "path": "e2e/amtp/home.spec.ts",
            "contents": "import { test, expect } from '@playwright/test';\n\n"
            "test('home page answers', async ({ page }) => {\n"
            "  await page.goto('/');\n  await expect(page).toHaveURL(/\\//);\n});\n",
        }
    ],
    pr_body="Tests for the home page.",
)


@pytest.mark.django_db(transaction=True)
def test_a_run_survives_one_fault_per_agent(tmp_path, temporal_env, monkeypatch, settings):
    """The crawler's first stream ends in overloaded_error, the generator's is cut, the
    engineer's goes silent: each stage fails one attempt and passes on the next, and the run
    passes. The model is the vendor's default (it thinks, so every request streams)."""
    worker_setting(settings, monkeypatch, "AMTP_LLM_TIMEOUT_S", 2.0)
    repo = local_repo(tmp_path, "api", APP)
    script = [
        StreamFault(ANSWER, fault="error", after=3),  # crawler, attempt 1, turn 1
        ANSWER,  # crawler, attempt 2: the tree call
        ANSWER,  # crawler, attempt 2: the map
        StreamFault(ANSWER, fault="drop", after=3),  # test case generator, attempt 1
        ANSWER,
        StreamFault(ANSWER, fault="stall", after=3),  # test engineer, attempt 1
        ANSWER,
    ]
    with fake_anthropic(monkeypatch, script) as fake:
        with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=2):
            run = wait_terminal(run_create(repository=repo, depth_level="smoke"), 180)
        assert fake.pending == []
        assert all(r.json["model"] == CLAUDE and r.json.get("stream") for r in fake.requests)
    assert run.status == "passed", (run.error_type, run.error_message)
    seen = {
        activity: attempts_of(str(run.pk), activity)
        for activity in (t.CRAWL_REPO, t.GENERATE_TEST_CASES, t.GENERATE_TEST_CODE)
    }
    assert seen == {
        t.CRAWL_REPO: [(2, "LlmProviderError", "completed")],
        t.GENERATE_TEST_CASES: [(2, "LlmStreamInterrupted", "completed")],
        t.GENERATE_TEST_CODE: [(2, "LlmStreamInterrupted", "completed")],
    }


@pytest.mark.django_db(transaction=True)
def test_a_retried_crawl_resumes_after_its_last_completed_turn(tmp_path, valkey, claude):
    """The crawler's stream is cut on its third call, after two completed tool turns. The
    retry sends one request, the same conversation as the failed call, instead of starting
    over: the input tokens paid for the two earlier turns are not paid again."""
    files = {"package.json": '{"name": "web"}', "src/main.ts": "export {};\n"}
    path = make_git_repo(tmp_path / "web", files)
    RepositoryFactory(full_name="acme/web", host="local", local_path=str(path))
    answer = json.dumps({"entry_points": [], "detected_stack": {"runtime": "node"}})
    claude.script(
        [
            tool_use("repo_tree", {}, id="toolu_01"),
            tool_use("repo_read_file", {"path": "package.json"}, id="toolu_02"),
            StreamFault(answer, fault="drop", after=2),
            answer,
        ]
    )
    payload = {"run_id": RUN_ID, "repo_full_name": "acme/web", "ref": "main", "depth_level": "deep"}

    def attempt():
        return asyncio.run(
            crawl(
                payload=payload,
                commit_sha=git(path, "rev-parse", "main"),
                budgets=Budgets(),
                repairs=0,
                provider=streaming_claude(claude),
            )
        )

    with pytest.raises(LlmStreamInterrupted):
        attempt()
    first_attempt = list(claude.requests)
    result = attempt()
    second_attempt = claude.requests[len(first_attempt) :]
    assert result.output["detected_stack"] == {"runtime": "node"}
    assert len(first_attempt) == 3 and len(second_attempt) == 1
    assert second_attempt[0].messages == first_attempt[2].messages  # resumed, not restarted
    assert result.meta["resumed_turns"] == 2 and result.meta["tool_calls"] == 2
    fields = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    paid = [sum(r.usage.get(f) or 0 for f in fields) for r in claude.requests if r.usage]
    restarted = sum(paid[:2]) + paid[-1]  # what starting over would have paid again
    print(f"input tokens paid by the retry: {paid[-1]} (starting over: {restarted})")
    assert paid[-1] < restarted
    assert valkey.keys("amtp:agent:turns:*") == []  # the finished crawl leaves no log behind
