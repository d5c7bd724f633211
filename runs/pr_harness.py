"""What makes a pull request's tests run on their own: a Playwright config when the repository
has none, ``@playwright/test`` pinned to the version VerifyTests ran, the CI workflow
(:mod:`runs.pr_workflow`), and the body's instructions, which name the same commands, URL and
port as those files.

These files are written by AMTP from the app recipe, never by a model (the file policy keeps
refusing model-written configs and workflows), and never over a file the repository has.

Where ``@playwright/test`` goes: a root ``package.json`` without a lock file gets it in its
devDependencies; with a lock file (``npm ci`` and ``--frozen-lockfile`` refuse a package.json
the lock does not match, and AMTP cannot resolve a lock without running npm), or with no
package.json, the tests' top folder gets its own small ``package.json`` and the config.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from repositories.boot_settings import boot_settings_of
from repositories.hosts import host_for
from repositories.login import recipe_of
from runs import pr_workflow
from verification.boot.dependencies import NODE_LOCKS
from verification.boot.errors import RecipeError
from verification.boot.recipe import AppRecipe, recipe_at
from verification.boot.recipe_sources import PLAYWRIGHT_CONFIGS
from verification.login import SETUP_FILE, projects

PACKAGE = "@playwright/test"
CONFIG = "playwright.config.ts"
SYSTEM_BROWSER = "/usr/bin/chromium"  # Debian's, as VerifyTests runs; CHROMIUM_PATH names another
NO_RECIPE_URL = "http://localhost:3000"
WORKFLOW_LINE = f"`{pr_workflow.PATH}` does the same on every pull request and uploads the report."


@dataclass(frozen=True)
class Harness:
    files: list[dict] = field(default_factory=list)  # [{"path", "contents"}], AMTP-written
    instructions: list[str] = field(default_factory=list)  # the body's "Running the tests"


def playwright_version() -> str:
    """The ``@playwright/test`` VerifyTests runs: the runner's lock file says it exactly."""
    lock = Path(settings.AMTP_VERIFY_RUNNER_DIR) / "package-lock.json"
    return json.loads(lock.read_text())["packages"][f"node_modules/{PACKAGE}"]["version"]


def harness_for(
    *,
    existing: set[str],
    read: Callable[[str], str],
    recipe: AppRecipe | None,
    test_dir: str,
    workflow: bool,
    login: bool = False,
) -> Harness:
    """The files to add for a repository whose tree (at the pull request's base) holds
    ``existing`` (``read`` gives a file's text), and the instructions that go with them."""
    test_dir = test_dir.strip("/")
    configs = [p for p in existing if posixpath.basename(p) in PLAYWRIGHT_CONFIGS]
    if configs:  # the repository runs Playwright its own way: its config, its dependency
        folder = posixpath.dirname(sorted(configs, key=lambda p: p.count("/"))[0]) or "."
        files = []
    else:
        folder, files = _config_and_package(existing, read, recipe, test_dir, login)
    if workflow and recipe is not None and pr_workflow.PATH not in existing:
        install = _needs_install(files, recipe, folder)
        contents = pr_workflow.workflow(recipe, folder, install_playwright=install)
        files += [{"path": pr_workflow.PATH, "contents": contents}] if contents else []
    return Harness(files, _instructions(recipe, folder, files, bool(configs)))


def _config_and_package(existing, read, recipe, test_dir, login) -> tuple[str, list[dict]]:
    version = playwright_version()
    root_locked = any(lock in existing for lock in NODE_LOCKS)
    if "package.json" in existing and (not root_locked or _declares(read("package.json"))):
        folder = "."
    else:
        folder = test_dir.split("/", 1)[0]
    files = [
        {"path": _join(folder, CONFIG), "contents": config_source(recipe, folder, test_dir, login)}
    ]
    package = _join(folder, "package.json")
    if package not in existing:
        text = {"private": True, "scripts": {"test:e2e": "playwright test"}}
        files.append(
            {"path": package, "contents": _json({**text, "devDependencies": {PACKAGE: version}})}
        )
    elif not _declares(read(package)):
        manifest = json.loads(read(package))
        manifest.setdefault("devDependencies", {})[PACKAGE] = version
        files.append({"path": package, "contents": _json(manifest)})  # the one file changed
    return folder, [f for f in files if f["path"] == package or f["path"] not in existing]


def _declares(text: str) -> bool:
    try:
        manifest = json.loads(text)
    except ValueError:
        return False
    if not isinstance(manifest, dict):
        return False
    return any(
        isinstance(manifest.get(k), dict) and PACKAGE in manifest[k]
        for k in ("dependencies", "devDependencies")
    )


def _needs_install(files: list[dict], recipe: AppRecipe | None, folder: str) -> bool:
    """Whether @playwright/test needs an install of its own: a package.json was added or
    changed, and the app's own install does not already run in that folder."""
    changed = any(posixpath.basename(f["path"]) == "package.json" for f in files)
    return changed and not (recipe is not None and recipe.install and recipe.workdir == folder)


def config_source(recipe: AppRecipe | None, folder: str, test_dir: str, login: bool) -> str:
    """The Playwright config AMTP adds: every value a JSON literal (JSON strings are
    JavaScript strings), so nothing the repository declared can become code."""
    url = recipe.url if recipe else NO_RECIPE_URL
    test_dir_here = posixpath.relpath(test_dir, folder)
    lines = [
        "// Added by AMTP: runs the tests under "
        + json.dumps(test_dir)
        + " (npx playwright test).",
        "import { defineConfig, devices } from '@playwright/test';",
        "",
        "// The specs read BASE_URL too: one address for the config, the specs and CI.",
        f"process.env.BASE_URL ??= {json.dumps(url)};",
        "",
        "export default defineConfig({",
        f"  testDir: {json.dumps('./' + test_dir_here)},",
        "  reporter: process.env.CI ? [['html', { open: 'never' }], ['list']] : 'list',",
        "  use: {",
        "    ...devices['Desktop Chrome'],",
        "    baseURL: process.env.BASE_URL,",
        "    // A Chromium already on the machine (CHROMIUM_PATH); unset: Playwright's own.",
        "    launchOptions: { executablePath: process.env.CHROMIUM_PATH || undefined },",
        "    trace: 'retain-on-failure',",
        "  },",
    ]
    if login:
        wired = projects(f"**/{SETUP_FILE}", "**/*.spec.ts")
        lines.append(f"  projects: {json.dumps(wired)},")
    if recipe is not None:
        lines += _web_server(recipe, folder)
    return "\n".join([*lines, "});", ""])


def _web_server(recipe: AppRecipe, folder: str) -> list[str]:
    command = f"{recipe.seed} && {recipe.start}" if recipe.seed else recipe.start
    server = {
        "command": command,
        "url": recipe.url + recipe.ready_path,
        "cwd": posixpath.relpath(recipe.workdir, folder),
        "env": dict(recipe.env),
        "timeout": 180_000,
    }
    text = json.dumps(server, indent=2)[:-1].rstrip()  # the object, open at its end
    text += ",\n  reuseExistingServer: !process.env.CI,\n}"
    return [
        "  // How the app starts (" + recipe.source.replace("\n", " ") + ").",
        "  webServer: " + text.replace("\n", "\n  ") + ",",
    ]


def _instructions(
    recipe: AppRecipe | None, folder: str, files: list[dict], own_config: bool
) -> list[str]:
    added = [f"`{f['path']}`" for f in files]
    lines = ["### Running the tests", ""]
    if added:
        lines += [f"Added by AMTP so the tests run on their own: {', '.join(added)}.", ""]
    url = recipe.url if recipe else NO_RECIPE_URL
    if recipe is not None and not own_config:
        lines += [
            f"The config starts the app with `{_code(recipe.start)}` (in `{recipe.workdir}`) and "
            f"waits for {url}{recipe.ready_path}; a server already there is used instead, "
            f"except on CI. The tests go to `BASE_URL` when it is set, else {url}.",
            "",
        ]
    elif recipe is None:
        lines += [
            f"Start your app, then point the tests at it with `BASE_URL` (default {url}).",
            "",
        ]
    shell = []
    if recipe is not None and recipe.install:
        install = " && ".join(recipe.install)
        shell.append(
            install if recipe.workdir == "." else f"(cd {_q(recipe.workdir)} && {install})"
        )
    if _needs_install(files, recipe, folder):
        shell.append(f"npm install --prefix {_q(folder)}" if folder != "." else "npm install")
    run = f"CHROMIUM_PATH={SYSTEM_BROWSER} npx playwright test"
    shell.append(run if folder == "." else f"(cd {_q(folder)} && {run})")
    lines += ["```sh", *shell, "```", ""]
    lines.append(
        "`CHROMIUM_PATH` is the Chromium already installed (Debian's here); without one, "
        "`npx playwright install chromium` downloads Playwright's own once."
    )
    if any(f["path"] == pr_workflow.PATH for f in files):
        lines += ["", WORKFLOW_LINE]
    return lines


def _code(text: str) -> str:
    return text.replace("`", "'")


def _q(path: str) -> str:
    return json.dumps(path) if any(c in path for c in " '\"$`\\") else path


def _join(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def _json(value) -> str:
    return json.dumps(value, indent=2) + "\n"


def harness_of(run) -> tuple[list[dict], list[str]] | None:
    """The harness of ``run``'s pull request, read from its repository at the run's base (the
    tree the pull request's branch starts from); None for frameworks other than Playwright.
    A repository without a recipe still gets a config and the instructions (no webServer)."""
    if run.target_framework != "playwright":
        return None
    repository = run.repository
    host = host_for(repository)
    sha = run.base_sha or run.commit_sha
    existing = {entry.path for entry in host.tree(sha)}
    try:
        recipe = recipe_at(host, sha, boot_settings_of(repository))
    except RecipeError:
        recipe = None
    harness = harness_for(
        existing=existing,
        read=lambda path: host.read_file(sha, path).decode("utf-8", errors="replace"),
        recipe=recipe,
        test_dir=repository.test_dir,
        workflow=repository.host == "github" and repository.pr_ci_workflow,
        login=recipe_of(repository) is not None,
    )
    return harness.files, harness.instructions


WORKFLOW_LEFT_OUT = (
    "**Note:** AMTP left out `{path}`: GitHub refused to take a workflow file from its "
    "credential (a GitHub App needs the Workflows permission, a token the `workflow` scope: "
    "docs/github.md). Grant it, or turn the repository's `pr_ci_workflow` off."
)


def workflow_refused(error, files: list[dict]) -> bool:
    """Whether GitHub refused the pull request's write for its workflow file ("refusing to
    allow a GitHub App to create or update workflow ... without `workflows` permission", and
    the OAuth wording with the `workflow` scope), when the files carry AMTP's workflow."""
    carried = any(f["path"] == pr_workflow.PATH for f in files)
    return carried and "workflow" in str(getattr(error, "message", error)).lower()


def without_workflow(files: list[dict], body: str) -> tuple[list[dict], str]:
    """The files without AMTP's workflow, and a body that says why it is missing."""
    kept = [f for f in files if f["path"] != pr_workflow.PATH]
    note = WORKFLOW_LEFT_OUT.format(path=pr_workflow.PATH)
    body = body.replace("\n\n" + WORKFLOW_LINE, "").replace(f", `{pr_workflow.PATH}`", "")
    return kept, body.rstrip("\n") + "\n\n" + note + "\n"
