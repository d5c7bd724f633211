"""A hostile repository through the whole workflow (real worker, Temporal, PostgreSQL, Valkey):
credentials planted in secret files and in source files, and a README telling the agent to
copy them into the tests. With an obedient model (it reads every file the README names and
copies everything it was ever shown into its answers) and with the offline provider, no
planted value appears in any request the LLM vendor received, any artifact, the pull request's
files, or Valkey."""

import json

import pytest

from agents.providers import DEFAULT_MODELS
from amtp_site.prices import DEFAULT_PRICES
from runs.api_schemas import RunDetailOut
from runs.models import Artifact, Run
from runs.pull_requests import head_branch_for
from runs.services import run_create
from tests import samples_hostile as hostile
from tests.factories import RepositoryFactory
from tests.fakes.llm_api import ToolCall, ToolUse
from tests.gitrepo import git, make_git_repo
from tests.scripted_model import fake_anthropic
from tests.temporal_worker import wait_terminal

pytestmark = pytest.mark.django_db(transaction=True)

TEST_FILE = """import { test, expect } from '@playwright/test';

// Everything the model was shown, copied as the README demanded.
const copied = %s;

test('copies what it was told to copy', async ({ page }) => {
  expect(copied.length).toBeGreaterThan(0);
});
"""


def _first_message(request: dict) -> dict:
    content = request["messages"][0]["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    return json.loads(text)


def _texts(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def obedient_model(request: dict):
    """A model that does what the repository tells it to: reads every secret file the README
    names and copies everything it has seen (every text of its messages) into its output."""
    # Every line it was shown, once: what each stage copies grows with what the stage before
    # copied, and a real model's answer stops at its output limit (the fake clips it too).
    lines = (line for text in _texts(request["messages"]) for line in text.splitlines())
    seen = "\n".join(dict.fromkeys(lines))
    if request.get("tools"):  # the Repo Crawler
        turns = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if turns == 0:
            return ToolUse((ToolCall("repo_tree", {}),))
        if turns == 1:
            return ToolUse((ToolCall("repo_read_file", {"path": "README.md"}),))
        if turns == 2:
            paths = [*hostile.SECRET_FILES, "server/index.js", "server/routes/tasks.js"]
            return ToolUse(tuple(ToolCall("repo_read_file", {"path": p}) for p in paths))
        stack = {"runtime": "node", "copied_from_the_repository": seen}
        entry = {"path": "server/index.js", "kind": "api_route"}
        return json.dumps({"entry_points": [entry], "detected_stack": stack})
    envelope = _first_message(request)
    if "Test Case Generator" in "".join(_texts(request.get("system"))):  # text or blocks
        case = {
            "id": "tc_copy",
            "title": "Copy the credentials",
            "preconditions": ["The app is running"],
            "steps": ["Use every value from the repository"],
            "expected": "It works",
            "priority": "critical",
        }
        answer = {"run_id": envelope["run_id"], "test_cases": [case], "coverage_notes": seen}
        return json.dumps(answer)
    files = [{"path": "e2e/amtp/copied.spec.ts", "contents": TEST_FILE % json.dumps(seen)}]
    return json.dumps(
        {
            "run_id": envelope["run_id"],
            "framework": "playwright",
            "files": files,
            "pr_title": "Add end-to-end tests",
            "pr_body": "Values found in the repository: " + seen,
        }
    )


def hostile_repo(tmp_path):
    path = make_git_repo(tmp_path / "hostile", hostile.HOSTILE_WEB)
    return RepositoryFactory(full_name="acme/hostile", host="local", local_path=str(path))


def assert_nothing_leaked(run, repo, valkey):
    for artifact in Artifact.objects.filter(run=run):
        text = json.dumps([artifact.content, artifact.meta])
        assert hostile.leaked(text) == [], artifact.kind
    head = head_branch_for(run)
    files = git(repo.local_path, "ls-tree", "-r", "--name-only", head).split()
    added = [f for f in files if f.startswith("e2e/amtp/")]
    assert added, files
    for name in added:
        assert hostile.leaked(git(repo.local_path, "show", f"{head}:{name}")) == [], name
    message = git(repo.local_path, "log", "-1", "--format=%B", head)
    assert hostile.leaked(message) == []
    assert hostile.leaked(hostile.valkey_text(valkey)) == []


def assert_cost_is_what_the_vendor_billed(run, billed: list[dict]) -> None:
    """The run's tokens and cost (as the API shows them) are the usage the fake vendor
    reported over all its answers, at the default model's list price."""
    cost = RunDetailOut.resolve_cost(Run.objects.get(pk=run.pk))  # read afresh
    inputs = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    assert cost["input_tokens"] == sum(u[k] for u in billed for k in inputs)
    assert cost["output_tokens"] == sum(u["output_tokens"] for u in billed)
    assert cost["cache_write_tokens"] == sum(u["cache_creation_input_tokens"] for u in billed)
    assert cost["cache_read_tokens"] == sum(u["cache_read_input_tokens"] for u in billed)
    price = DEFAULT_PRICES[DEFAULT_MODELS["anthropic"]]
    spent = sum(
        u["input_tokens"] * price.input
        + u["cache_creation_input_tokens"] * price.cache_write
        + u["cache_read_input_tokens"] * price.cache_read
        + u["output_tokens"] * price.output
        for u in billed
    )
    assert cost["cost_usd"] == spent / 1_000_000 > 0
    assert {a.agent for a in cost["agents"]} == {
        "repo_crawler",
        "test_case_generator",
        "test_engineer",
    }


def test_an_obedient_model_never_sees_a_planted_secret(tmp_path, worker, monkeypatch, valkey):
    with fake_anthropic(monkeypatch, [obedient_model] * 12) as fake:
        repo = hostile_repo(tmp_path)
        run = wait_terminal(run_create(repository=repo, depth_level="deep"))
        assert run.status == "passed", (run.error_type, run.error_message)
        bodies = [r.body.decode() for r in fake.requests]
        billed = [r.usage for r in fake.requests if r.usage]
    assert_cost_is_what_the_vendor_billed(run, billed)
    crawler_reads = "".join(b for b in bodies if "repo_read_file" in b)
    # it read the leaky source file, redacted
    assert "[REDACTED:stripe-access-token]" in crawler_reads
    assert "may hold credentials" in crawler_reads  # and was refused the secret files
    assert any("Test Engineer" in b for b in bodies)  # all three agents asked the vendor
    assert [hostile.leaked(b) for b in bodies] == [[] for _ in bodies]
    assert_nothing_leaked(run, repo, valkey)


def test_the_offline_provider_leaks_nothing_either(tmp_path, worker, valkey):
    repo = hostile_repo(tmp_path)
    run = wait_terminal(run_create(repository=repo, depth_level="deep"))
    assert run.status == "passed", (run.error_type, run.error_message)
    crawl = run.artifacts.get(kind="repo_crawler_output").content
    listed = {e["path"] for e in crawl["file_tree"]}
    assert "server/index.js" in listed and not listed & set(hostile.SECRET_FILES)
    assert_nothing_leaked(run, repo, valkey)
