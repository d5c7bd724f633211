"""Real-size repositories: a 10,000-file monorepo end to end on the real worker, and a crawl
too big for its limits failing once. The repository is generated once per session."""

import pytest

from repositories.depth import min_depth_level
from runs.services import run_create
from tests.factories import RepositoryFactory
from tests.gitrepo import import_git_repo
from tests.scale_repo import generate, recall
from tests.temporal_worker import wait_terminal

pytestmark = pytest.mark.django_db(transaction=True)

FILES = 10_000
MAX_CALL_INPUT_TOKENS = 40_000  # the bound for every agent call (docs/benchmarks.md)


@pytest.fixture(scope="session")
def monorepo(tmp_path_factory):
    files = generate(FILES)
    path = import_git_repo(tmp_path_factory.mktemp("scale") / "shop.git", files)
    standard = sum(1 for p in files if min_depth_level(p) in ("smoke", "core", "standard"))
    return path, standard


def test_a_10k_file_monorepo_runs_end_to_end_with_every_call_bounded(monorepo, worker):
    path, standard_files = monorepo
    repo = RepositoryFactory(full_name="acme/shop", host="local", local_path=path)
    run = wait_terminal(run_create(repository=repo, depth_level="standard"), timeout=300)
    assert run.status == "passed", (run.error_type, run.error_message)
    artifacts = {a.kind: a for a in run.artifacts.all()}
    crawl = artifacts["repo_crawler_output"]
    assert len(crawl.content["file_tree"]) == standard_files  # the stored contract is whole
    for kind in ("repo_crawler_output", "test_case_generator_output", "test_engineer_output"):
        usage = artifacts[kind].meta["usage"]
        assert 0 < usage["max_call_input_tokens"] <= MAX_CALL_INPUT_TOKENS, (kind, usage)
    share, missed = recall(artifacts["test_engineer_output"].content["files"])
    assert share >= 0.9, missed


@pytest.fixture
def small_tree_limit(monkeypatch):
    monkeypatch.setenv("AMTP_MAX_TREE_FILES", "1000")  # read by the spawned agent processes


@pytest.fixture
def tiny_input_budget(monkeypatch):
    monkeypatch.setenv("AMTP_MAX_INPUT_TOKENS", "300")


@pytest.mark.parametrize(
    "limit, words",
    [
        (
            "small_tree_limit",
            ["over the 1000 a crawl may map", "run it at depth 'core' (409 files)"],
        ),
        ("tiny_input_budget", ["over the budget of 300", "AMTP_MAX_INPUT_TOKENS"]),
    ],
)
def test_a_crawl_over_its_limits_fails_once_saying_what_to_change(
    request, monorepo, limit, words, temporal_env
):
    request.getfixturevalue(limit)  # before the worker spawns its agent processes
    request.getfixturevalue("worker")
    repo = RepositoryFactory(full_name="acme/shop", host="local", local_path=monorepo[0])
    run = wait_terminal(run_create(repository=repo, depth_level="standard"), timeout=300)
    assert run.status == "failed" and run.error_type == "BudgetExceeded", run.error_message
    stage = run.stages.get(name="crawl_repo")
    assert stage.attempts == 1 and stage.error_type == "BudgetExceeded"
    for word in [*words, "AMTP_MAX_TREE_FILES" if limit == "small_tree_limit" else ""]:
        assert word in run.error_message and word in stage.error_message
    assert "ExceptionGroup" not in run.error_message
