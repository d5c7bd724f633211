"""The offline provider end to end through the real runner, MCP session and contracts."""

import uuid

import pytest
import yaml

import schemas
from agents.file_policy import check_generated_files
from agents.service import run_repo_crawler, run_test_case_generator, run_test_engineer
from tests.factories import RepositoryFactory
from tests.gitrepo import git, make_git_repo
from tests.samples import SAMPLE_REPOS

pytestmark = pytest.mark.django_db(transaction=True)

WEB = ["express", "nextjs", "react", "django", "flask", "fastapi"]
MOBILE = ["expo", "android", "ios"]


def pipeline(tmp_path, stack, framework, depth="standard"):
    path = make_git_repo(tmp_path / stack, SAMPLE_REPOS[stack])
    RepositoryFactory(full_name=f"acme/{stack}", host="local", local_path=str(path))
    run_id = str(uuid.uuid4())
    sha = git(path, "rev-parse", "main").strip()
    crawler = run_repo_crawler(
        {"run_id": run_id, "repo_full_name": f"acme/{stack}", "ref": "main", "depth_level": depth},
        commit_sha=sha,
    )
    cases_in = {**crawler.output, "depth_level": depth}
    cases = run_test_case_generator(cases_in, upstream_artifact_id=str(uuid.uuid4()))
    code_in = {
        "run_id": run_id,
        "target_framework": framework,
        **{k: cases.output[k] for k in ("test_cases", "coverage_notes")},
    }
    code = run_test_engineer(
        code_in,
        upstream_artifact_id=str(uuid.uuid4()),
        base_branch="main",
        head_branch=f"amtp/run-{run_id}",
        test_dir="e2e/amtp",
    )
    return crawler, cases, code


@pytest.mark.parametrize("stack", WEB)
def test_web_stacks_become_playwright_files(tmp_path, valkey, stack):
    crawler, cases, code = pipeline(tmp_path, stack, "playwright")
    schemas.validate("repo_crawler/output", crawler.output)
    assert crawler.output["entry_points"], "routes/pages must be detected"
    assert crawler.meta["tool_calls"] >= 2 and crawler.meta["rule_generated"] is True
    schemas.validate("test_case_generator/output", cases.output)
    assert len(cases.output["test_cases"]) >= 2
    out = schemas.validate("test_engineer/output", code.output)
    assert out["head_branch"].startswith("amtp/run-")  # from the run, not the model
    check_generated_files(out["files"], framework="playwright", test_dir="e2e/amtp")
    assert all("@playwright/test" in f["contents"] for f in out["files"])
    assert "rule-generated" in out["pr_title"].lower() + out["pr_body"].lower()


@pytest.mark.parametrize("stack", MOBILE)
def test_mobile_stacks_become_maestro_flows(tmp_path, valkey, stack):
    crawler, cases, code = pipeline(tmp_path, stack, "maestro")
    assert crawler.output["detected_stack"].get("app_id")
    files = code.output["files"]
    check_generated_files(files, framework="maestro", test_dir="e2e/amtp")
    config, commands = list(yaml.safe_load_all(files[0]["contents"]))
    assert config["appId"] == crawler.output["detected_stack"]["app_id"]
    assert commands and "launchApp" in str(commands[0])


def test_meta_records_the_contract_facts(tmp_path, valkey):
    crawler, cases, code = pipeline(tmp_path, "express", "playwright", depth="smoke")
    for result in (crawler, cases, code):
        meta = result.meta
        assert meta["sanitizer"] == "v1.0.0" and meta["provider"] == "offline"
        assert len(meta["prompt_sha256"]) == 64 and meta["attempts"] == 1
        assert meta["usage"]["input_tokens"] > 0
    assert {c["priority"] for c in cases.output["test_cases"]} == {"critical"}
    assert len(cases.output["test_cases"]) <= 5
