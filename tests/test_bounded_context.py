"""What an LLM call sees stays bounded at every repository size: the rendered handoff
(agents/rendering.py) and the crawler's tool results (agents/crawler.py)."""

import asyncio
import json
import re

import pytest

from agents.crawler import CONTEXT_USED_UP, crawl
from agents.offline.cases import generate_cases
from agents.rendering import render_envelope, text_tokens
from agents.runner import Budgets
from amtp_site.canonical import canonical_text
from tests.contract_examples import RUN_ID
from tests.factories import RepositoryFactory
from tests.fakes.llm_api import FakeAnthropic, tool_results, tool_use
from tests.gitrepo import git, make_git_repo
from tests.scale_repo import generate, route_files
from tests.test_agent_runner import anthropic

UPSTREAM = {
    "agent": "repo_crawler",
    "artifact_id": "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a",
    "schema_id": "https://amtp.zagtrader.internal/schemas/repo_crawler/output.json",
}
SHA = re.compile(r"[0-9a-f]{40}")


def envelope_for(n_files: int) -> dict:
    """A test_case_generator envelope as a crawl of the n-file monorepo would hand it over."""
    files = generate(n_files)
    tree = [
        {"path": p, "size": len(c), "sha": f"{i:040x}"} for i, (p, c) in enumerate(files.items())
    ]
    routes = [
        {"method": "GET", "path": r, "file": p, "json": True} for p, r in route_files().items()
    ]
    stack = {"runtime": "node", "frameworks": ["next", "react"], "platform": "web"}
    stack |= {
        "routes": routes[20:],
        "pages": [{"route": r["path"], "file": r["file"]} for r in routes[:20]],
    }
    tests = [{"path": p, "kind": "test_fixture"} for p in files if ".test." in p or ".spec." in p]
    pages = [{"path": p, "kind": "ui_component"} for p in route_files()]
    payload = {
        "run_id": RUN_ID,
        "depth_level": "standard",
        "repo_full_name": "acme/shop",
        "ref": "main",
        "file_tree": tree,
        "entry_points": pages + tests,
        "detected_stack": stack,
        "cache_hits": 3,
    }
    return {"run_id": RUN_ID, "upstream": UPSTREAM, "payload": payload}


def test_a_small_envelope_is_sent_verbatim():
    envelope = envelope_for(100)
    assert render_envelope(envelope, budget_tokens=24_000) == canonical_text(envelope)


@pytest.mark.parametrize("n_files", [10_000, 100_000])
def test_a_big_envelope_is_rendered_within_the_budget(n_files):
    envelope = envelope_for(n_files)
    text = render_envelope(envelope, budget_tokens=24_000)
    assert 20_000 < text_tokens(text) <= 24_000  # flat: the budget, whatever the size
    assert not SHA.search(text)  # no blob shas
    rendered = json.loads(text)
    view = rendered["payload"]
    assert view["file_tree"]["files"] == n_files
    shown = {
        f"{folder}/{name}" for folder, names in view["file_tree"]["by_folder"] for name in names
    }
    assert set(route_files()) <= shown  # the routes and pages come first
    assert rendered["rendering"]["omitted"]["file_tree"] == n_files - view["file_tree"]["shown"]
    assert view["file_tree"]["not_shown_by_top_folder"]["packages"] > 0
    assert view["detected_stack"] == envelope["payload"]["detected_stack"]  # it fits: verbatim
    assert view["entry_points"][0][0] == "ui_component"  # test fixtures come last
    assert view["depth_level"] == "standard" and rendered["upstream"] == UPSTREAM
    # The offline rules still have all they need: the same cases as from the full payload.
    full = generate_cases(envelope["payload"], "standard")
    assert generate_cases(view, "standard") == full


def test_a_huge_detected_stack_is_cut_in_proportion():
    envelope = envelope_for(100)
    stack = envelope["payload"]["detected_stack"]
    stack["routes"] = [
        {"method": "GET", "path": f"/api/r{i}", "file": "x.ts"} for i in range(20_000)
    ]
    stack["notes"] = "n" * 50_000
    text = render_envelope(envelope, budget_tokens=8_000)
    assert text_tokens(text) <= 8_000
    rendered = json.loads(text)
    kept = rendered["payload"]["detected_stack"]
    assert 0 < len(kept["routes"]) < 20_000 and len(kept["notes"]) < 3_000
    assert rendered["rendering"]["omitted"]["detected_stack.routes"] == 20_000 - len(kept["routes"])


@pytest.fixture
def anthropic_fake():
    with FakeAnthropic() as fake:
        yield fake


@pytest.mark.django_db(transaction=True)
def test_the_crawler_pages_for_the_model_and_stops_its_data_at_the_budget(
    tmp_path, valkey, anthropic_fake
):
    files = {f"src/pages/p{i:03d}.tsx": "export default 1;\n" for i in range(150)}
    files |= {"package.json": "{}", "big.ts": "x" * 60_000, "other.ts": "y" * 60_000}
    path = make_git_repo(tmp_path / "web", files)
    RepositoryFactory(full_name="acme/web", host="local", local_path=str(path))
    anthropic_fake.script(
        [
            tool_use("repo_tree", {}),
            tool_use("repo_tree", {"prefix": "src/pages", "page": 2}),
            tool_use("repo_tree", {"prefix": "../etc"}),
            tool_use("repo_read_file", {"path": "big.ts"}),
            tool_use("repo_read_file", {"path": "other.ts"}),
            json.dumps({"entry_points": [], "detected_stack": {"runtime": "node"}}),
        ]
    )
    payload = {"run_id": RUN_ID, "repo_full_name": "acme/web", "ref": "main", "depth_level": "deep"}
    result = asyncio.run(
        crawl(
            payload=payload,
            commit_sha=git(path, "rev-parse", "main"),
            budgets=Budgets(context_tokens=12_000),
            repairs=0,
            provider=anthropic(anthropic_fake, agent="repo_crawler"),
        )
    )
    assert len(result.output["file_tree"]) == 153  # the stored tree is whole
    requests = [r.json for r in anthropic_fake.requests]
    (overview,) = tool_results(requests[1]).values()
    assert '"total_files":153' in overview and '"candidates"' in overview
    (page,) = tool_results(requests[2]).values()
    listed = json.loads(page.split("\n", 2)[2].rsplit("\n", 1)[0])
    assert (listed["page"], listed["pages"], listed["total"]) == (2, 2, 150)
    assert len(listed["files"]) == 50 and listed["files"][0] == ["src/pages/p100.tsx", 18]
    assert not SHA.search(page)
    (refused,) = tool_results(requests[3]).values()
    assert "leaves the repository" in refused
    (cut,) = tool_results(requests[4]).values()
    assert "[cut here:" in cut and "AMTP_CONTEXT_TOKENS" in cut
    (used_up,) = tool_results(requests[5]).values()
    assert used_up == CONTEXT_USED_UP.format(12_000)
    usage = result.meta["usage"]
    assert usage["max_call_input_tokens"] <= 12_000 + 2_000  # the budget, plus prompt and turns


def test_the_offline_crawler_stays_within_its_tool_budget_on_a_big_overview():
    """Overview → listings of the folders it left candidates out of → reads → answer, all
    within the default 40 tool calls, however many folders and files there are."""
    from agents.crawler import wrap_data
    from agents.providers.base import ProviderOptions, ToolResult
    from agents.providers.offline import OfflineProvider
    from agents.runner import Budgets

    provider = OfflineProvider(ProviderOptions(model="amtp-rules-v1"), agent="repo_crawler")
    overview = {
        "total_files": 90_000,
        "manifests": ["package.json"] + [f"packages/p{i}/package.json" for i in range(100)],
        "candidates": {"src/pages": ["index.tsx", "about.tsx"]},
        "more_candidates_in": {f"packages/p{i}/src/views": 30 for i in range(30)},
    }
    messages = [{"role": "user", "content": "{}"}]
    calls = []
    for _ in range(10):
        completion = provider.complete(system="", messages=messages, tools=[])
        if not completion.tool_calls:
            break
        calls += completion.tool_calls
        results = []
        for call in completion.tool_calls:
            if call.name == "repo.tree" and not call.arguments:
                body = overview
            elif call.name == "repo.tree":
                prefix, page = call.arguments["prefix"], call.arguments["page"]
                files = [[f"{prefix}/V{page}_{i}.tsx", 10] for i in range(100)]
                body = {"prefix": prefix, "glob": "", "total": 900, "page": page, "pages": 9}
                body["files"] = files
            else:
                results.append(ToolResult(call.id, wrap_data("repo.read_file", "{}", path="x")))
                continue
            results.append(ToolResult(call.id, wrap_data("repo.tree", json.dumps(body))))
        messages += [
            {"role": "assistant", "content": "", "tool_calls": completion.tool_calls},
            {"role": "tool", "results": results},
        ]
    answer = json.loads(completion.text)
    assert "entry_points" in answer and len(calls) <= Budgets().max_tool_calls
    listed = [c.arguments for c in calls if c.name == "repo.tree" and c.arguments]
    assert 0 < len(listed) <= 12 and any(a["page"] > 1 for a in listed)
    assert any(c.name == "repo.read_file" for c in calls)
