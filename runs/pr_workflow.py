"""The GitHub Actions workflow a pull request adds: on every pull request it installs the app
as the recipe says, gives it the services it declared, runs the tests (the Playwright config's
``webServer`` starts the app) and uploads the report.

Written with ``yaml.safe_dump`` (the repository's commands are data, quoted as YAML needs),
least privilege (``contents: read``, no persisted token), actions pinned to full commit SHAs,
and never a ``${{`` taken from the repository: a recipe holding one gets no workflow (GitHub
would evaluate it: https://docs.github.com/en/actions/security-for-github-actions/security-guides/security-hardening-for-github-actions#understanding-the-risk-of-script-injections).
``make test`` checks the output with actionlint and zizmor (tests/test_pr_harness.py).
"""

from __future__ import annotations

import yaml

from repositories.paths import AMTP_CI_WORKFLOW
from verification.boot.recipe import AppRecipe

PATH = AMTP_CI_WORKFLOW
# Full commit SHAs of the actions' releases (the tag in the comment): a tag can be moved.
CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1"  # v7.0.1
SETUP_NODE = "actions/setup-node@820762786026740c76f36085b0efc47a31fe5020"  # v7.0.0
SETUP_PYTHON = "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97"  # v7.0.0
UPLOAD = "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"  # v7.0.0
# GitHub's Ubuntu runners carry Google Chrome (actions/runner-images, Ubuntu2404-Readme.md):
# the tests use it, no browser download.
RUNNER_BROWSER = "/usr/bin/google-chrome"
SERVICES = {  # throwaway services, as the box gives them (no password: trust on loopback)
    "postgres": (
        {
            "image": "postgres:17",
            "env": {"POSTGRES_HOST_AUTH_METHOD": "trust"},
            "ports": ["5432:5432"],
            "options": "--health-cmd pg_isready --health-interval 2s --health-retries 30",
        },
        ("DATABASE_URL", "postgres://postgres@localhost:5432/postgres"),
    ),
    "valkey": (
        {"image": "valkey/valkey:8", "ports": ["6379:6379"]},
        ("REDIS_URL", "redis://localhost:6379/0"),
    ),
}
PYTHON_HINTS = ("python", "pip", "flask", "uvicorn", "gunicorn", "manage.py")


def workflow(recipe: AppRecipe, folder: str, *, install_playwright: bool) -> str | None:
    """The workflow's text, or None when the recipe holds an expression GitHub would run, or
    needs Bun (not on GitHub's runners)."""
    values = [recipe.start, recipe.seed or "", recipe.workdir, folder, *recipe.install]
    values += [v for pair in recipe.env for v in pair]
    if any("${{" in v for v in values) or "bun " in " ".join(values):
        return None  # Bun: no runner has it, and installing it ad hoc is what zizmor flags
    env = {"CHROMIUM_PATH": RUNNER_BROWSER}
    env.update(dict(SERVICES[name][1] for name in recipe.services if name in SERVICES))
    env.update({name: f"${{{{ secrets.{name} }}}}" for name in recipe.secret_env})
    steps = [{"uses": CHECKOUT, "with": {"persist-credentials": False}}]
    steps.append({"uses": SETUP_NODE, "with": {"node-version": 22}})
    commands = " ".join([recipe.start, *recipe.install])
    # pnpm and yarn through corepack, which ships with Node (nodejs.org/api/corepack.html)
    if "pnpm " in commands or "yarn " in commands:
        steps.append({"name": "Enable pnpm and yarn", "run": "corepack enable"})
    if any(hint in " ".join(values) for hint in PYTHON_HINTS):
        steps.append({"uses": SETUP_PYTHON, "with": {"python-version": "3.12"}})
    if recipe.install:
        steps.append(_run("Install the app", "\n".join(recipe.install), recipe.workdir))
    if install_playwright:
        steps.append(_run("Install Playwright Test", "npm install", folder))
    steps.append(_run("Run the tests (the config starts the app)", "npx playwright test", folder))
    report = "playwright-report" if folder == "." else f"{folder}/playwright-report"
    steps.append(
        {
            "name": "Upload the report",
            "if": "${{ !cancelled() }}",
            "uses": UPLOAD,
            "with": {"name": "playwright-report", "path": report, "retention-days": 14},
        }
    )
    job = {"runs-on": "ubuntu-latest", "timeout-minutes": 30, "env": env}
    services = {n: SERVICES[n][0] for n in recipe.services if n in SERVICES}
    job.update({"services": services} if services else {})
    document = {
        "name": "AMTP end-to-end tests",
        "on": {"pull_request": None},
        "permissions": {"contents": "read"},
        "jobs": {"e2e": {**job, "steps": steps}},
    }
    text = yaml.safe_dump(document, sort_keys=False, width=100)
    return "# Added by AMTP: runs the end-to-end tests on pull requests.\n" + text.replace(
        "pull_request: null", "pull_request:"
    )


def _run(name: str, command: str, folder: str) -> dict:
    step = {"name": name, "run": command}
    return {**step, "working-directory": folder} if folder != "." else step
