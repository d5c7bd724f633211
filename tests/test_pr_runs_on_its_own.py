"""Proof that the pull request runs on its own (issue 40, item 5): the branch a run produced on
the fake GitHub, checked out fresh from its tarball (only that branch's files: the app, the
spec, and what AMTP added, config, package.json and workflow), then the workflow's ``run:``
steps in order in the real sandbox, as GitHub's runner runs them (``bash -e``, ``CI=true``,
each step's working directory). The ``uses:`` steps are stood in for by the machine: the
checkout by the tarball, setup-node by its Node, the runner image's Chrome by Debian's
Chromium (``CHROMIUM_PATH``), upload-artifact by the report being there to upload. The
install reaches the npm registry through the box's proxy, as BootApp's installs do: one
download of @playwright/test, ~20-60 s on the shared machine."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from runs import pr_workflow
from runs.pr_harness import playwright_version
from tests.contract_examples import ENGINEER_OUTPUT, VERIFICATION_REPORT
from verification import proxy, sandbox
from verification.boot import registries
from verification.boot.app import LOG_TAIL_BYTES, AppBox, _write_tree

pytestmark = [
    pytest.mark.skipif(
        not os.path.exists("/usr/bin/bwrap"), reason="bubblewrap is a requirement of the worker"
    ),
    pytest.mark.django_db,
]

REPO = "acme/shop"
SERVER = """const http = require('http');
const users = [{ id: 1, name: 'Ada' }, { id: 2, name: 'Grace' }];
http.createServer((req, res) => {
  if (req.url === '/api/users') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify(users));
  }
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<!doctype html><title>Shop</title><h1>Hello shop</h1>');
}).listen(Number(process.env.PORT || 3000));
"""
APP = {
    "package.json": json.dumps(
        {"name": "shop", "private": True, "scripts": {"start": "node server.js"}}, indent=2
    )
    + "\n",
    "server.js": SERVER,
}
SPEC = {
    "path": "e2e/amtp/shop.spec.ts",
    "contents": """import { test, expect } from '@playwright/test';

test('the home page greets', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Hello shop' })).toBeVisible();
});

test('the users API lists Ada', async ({ request }) => {
  const response = await request.get('/api/users');
  expect(response.ok()).toBeTruthy();
  expect(await response.json()).toContainEqual({ id: 1, name: 'Ada' });
});
""",
}
# What GitHub's runner gives every step (docs.github.com/en/actions/reference/variables-reference).
RUNNER_ENV = {"CI": "true", "GITHUB_ACTIONS": "true"}
# A job on GitHub's runner reaches the internet; the box reaches only the registries, and the
# app on its own loopback without the proxy.
NO_PROXY = {"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1"}


@pytest.fixture
def shop_hub(settings, valkey):
    from tests.fakes.github_api import FakeGitHub

    with FakeGitHub() as hub:
        hub.create_repo(REPO, APP)
        settings.GITHUB_API_URL, settings.GITHUB_TOKEN = hub.url, hub.token
        settings.GITHUB_APP_ID = settings.GITHUB_APP_PRIVATE_KEY = ""
        settings.GITHUB_SECONDS_BETWEEN_WRITES = 0
        yield hub
        assert hub.errors == []


def _branch_of_a_run(hub) -> str:
    """acme/shop's run up to CreatePullRequest, run; the head branch it pushed."""
    from runs import pipeline, transitions
    from tests.factories import ArtifactFactory, RepositoryFactory, RunFactory

    sha = hub.head(REPO, "main")
    repository = RepositoryFactory(full_name=REPO, host="github")
    run = RunFactory(repository=repository, commit_sha=sha, base_sha=sha, status="running")
    transitions.create_stages(run)
    run_id = str(run.run_id)
    code = {**ENGINEER_OUTPUT, "files": [SPEC], "run_id": run_id}
    report = {**VERIFICATION_REPORT, "files": [SPEC], "run_id": run_id}
    report["tests"] = [
        {**VERIFICATION_REPORT["tests"][0], "file": SPEC["path"], "status": "passed"}
    ]
    for kind, content in [("test_engineer_output", code), ("verification_report", report)]:
        ArtifactFactory(run=run, kind=kind, content=content)
    pipeline.create_pull_request(run_id)
    (pull,) = hub.pulls(REPO)
    return pull["head"]["ref"]


def _step_env(job: dict, box: AppBox) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": box.inside(".home"),
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        **job["env"],
        "CHROMIUM_PATH": sandbox_chromium(),  # the runner image's Chrome: Debian's Chromium
        **registries.environment(),
        **NO_PROXY,
        **RUNNER_ENV,
    }


def sandbox_chromium() -> str:
    from django.conf import settings

    return settings.AMTP_VERIFY_CHROMIUM


def test_the_branch_a_run_produced_runs_its_workflow_in_the_box_and_passes(shop_hub):
    from repositories.hosts.github import GitHubHost

    branch = _branch_of_a_run(shop_hub)
    head = shop_hub.head(REPO, branch)
    added = set(shop_hub.files(REPO, branch)) - set(APP) - {SPEC["path"]}
    assert added == {"playwright.config.ts", pr_workflow.PATH}  # package.json: changed
    manifest = json.loads(shop_hub.read(REPO, branch, "package.json"))
    assert manifest["devDependencies"] == {"@playwright/test": playwright_version()}

    job = yaml.safe_load(shop_hub.read(REPO, branch, pr_workflow.PATH))["jobs"]["e2e"]
    uses = [step["uses"].split("@")[0] for step in job["steps"] if "uses" in step]
    assert uses == ["actions/checkout", "actions/setup-node", "actions/upload-artifact"]
    runs = [step for step in job["steps"] if "run" in step]
    assert [step["run"] for step in runs] == ["npm install", "npx playwright test"]

    options = {"api_url": shop_hub.api_url, "token": shop_hub.token, "seconds_between_writes": 0}
    box = AppBox()
    try:
        _write_tree(GitHubHost(REPO, **options), head, box.work, ".")  # the fresh checkout
        assert not (box.work / "node_modules").exists()
        env = _step_env(job, box)
        with proxy.serving(box.socket, proxy.Policy(*registries.allowed())):
            for step in runs:
                folder = box.inside(step.get("working-directory", "."))
                script = f"cd {folder}\n{step['run']}"
                outcome = box.run(
                    ["-", "0", "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                    env=env,
                    runner=box.nothing,
                    limits=sandbox.Limits.from_settings(),
                    wall_s=240,
                )
                log = box.output_tail(LOG_TAIL_BYTES)
                assert outcome.returncode == 0 and not outcome.stopped, (step["name"], log)
        assert "2 passed" in log, log
        # what the upload-artifact step takes
        assert (box.work / "playwright-report" / "index.html").is_file()
    finally:
        box.remove()
