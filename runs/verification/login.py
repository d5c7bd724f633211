"""Logging into the target before exploring it and before the tests run.

The repository's recipe (:mod:`repositories.login`) and its credentials
(:mod:`repositories.credentials`, resolved here, in the stage's worker thread) become, for the
box: the recipe in its config (no secret), the credentials as the environment variables
``AMTP_E2E_USERNAME`` and ``AMTP_E2E_PASSWORD`` of the sandboxed process only. For the tests,
AMTP writes ``auth.setup.ts`` from the recipe (never a model) and runs it in a box execution
of its own, the only one given the credentials: it logs in and saves the storage state, and
the specs' box gets that state alone (``use.storageState``), never the password. The same
file goes into the pull request, whose body says which variables to set and how to wire it
as a Playwright ``setup`` project.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass

from repositories.credentials import Credentials, credentials_for, in_use
from repositories.login import PASSWORD_VAR, USERNAME_VAR, Recipe, recipe_of
from runs.verification.errors import LoginFailed

SETUP_FILE = "auth.setup.ts"
SETUP_TITLE = "log in"  # its one test
STATE_FILE = "playwright/.auth/user.json"
FAILED = "login failed at {path}: {seen}"


@dataclass(frozen=True)
class Login:
    recipe: Recipe
    credentials: Credentials

    def env(self) -> dict[str, str]:
        """The variables the sandboxed process (and nothing else) gets."""
        return {USERNAME_VAR: self.credentials.username, PASSWORD_VAR: self.credentials.password}


@contextlib.contextmanager
def login_for(repository) -> Iterator[Login | None]:
    """``repository``'s login (None without a recipe, or without a repository); within the block every scrubbed text
    (maps, reports, errors, heal requests) is also scrubbed of its credentials.
    CredentialsUnavailable when they cannot be had."""
    recipe = recipe_of(repository) if repository is not None else None
    if recipe is None:
        yield None
        return
    credentials = credentials_for(repository)
    with in_use(credentials):
        yield Login(recipe, credentials)


def setup_source(recipe: Recipe) -> str:
    """``auth.setup.ts`` for ``recipe``: every value from the recipe is a JSON string literal,
    so no label can become code."""
    text = json.dumps  # a JSON string is a valid TypeScript string literal
    if recipe.success_is_path:
        wait = f"  await page.waitForURL((url) => url.pathname === {text(recipe.success)});"
    else:
        wait = f"  await expect(page.getByText({text(recipe.success)}).first()).toBeVisible();"
    return "\n".join(
        [
            "// Written by AMTP from the repository's login recipe (not by a model): logs in once",
            "// and saves the session the other tests start from (the `setup` project).",
            "import { test as setup, expect } from '@playwright/test';",
            "",
            f"const authFile = {text(STATE_FILE)};",
            "",
            f"setup({text(SETUP_TITLE)}, async ({{ page }}) => {{",
            f"  const username = process.env.{USERNAME_VAR};",
            f"  const password = process.env.{PASSWORD_VAR};",
            "  if (!username || !password) {",
            f"    throw new Error('set {USERNAME_VAR} and {PASSWORD_VAR} to log in');",
            "  }",
            f"  await page.goto({text(recipe.path)});",
            f"  await page.getByLabel({text(recipe.username_label)}, {{ exact: true }})"
            ".fill(username);",
            f"  await page.getByLabel({text(recipe.password_label)}, {{ exact: true }})"
            ".fill(password);",
            f"  await page.getByRole('button', {{ name: {text(recipe.submit)}, exact: true }})"
            ".click();",
            wait,
            "  await page.context().storageState({ path: authFile });",
            "});",
            "",
        ]
    )


MAX_STATE_BYTES = 1 << 20
NO_STATE = "the setup project logged in at {path} but left no storage state ({STATE_FILE})"
# The setup's box records nothing: a trace or a screenshot would hold what was typed.
SETUP_USE = {"trace": "off", "screenshot": "off", "video": "off"}


def without_setup(results: list, recipe: Recipe | None) -> list:
    """``results`` without the setup's test; LoginFailed when it did not log in."""
    if recipe is None:
        return results
    setup = [r for r in results if r.file == SETUP_FILE]
    failure = next((r.failure for r in setup if r.status == "failed" and r.failure), None)
    if failure is not None:
        seen = " · ".join(line.strip() for line in failure.error.splitlines()[:3] if line.strip())
        raise LoginFailed(FAILED.format(path=recipe.path, seen=seen[:500] or "no message"))
    return [r for r in results if r.file != SETUP_FILE]


def login_section(recipe: Recipe, test_dir: str) -> list[str]:
    """How to run the suite logged in: the variables to set (names only) and the config."""
    setup = f"{test_dir}/{SETUP_FILE}"
    return [
        "### Logging in",
        "",
        f"The app is tested logged in: `{setup}` (written by AMTP from the repository's login "
        f"recipe) opens `{recipe.path.replace('`', '')}`, logs in and saves the session in `{STATE_FILE}` "
        f"(add `playwright/.auth/` to `.gitignore`). Set `{USERNAME_VAR}` and `{PASSWORD_VAR}` "
        "to a test account's credentials, and wire the setup project in `playwright.config.ts`:",
        "",
        "```ts",
        "projects: [",
        "  { name: 'setup', testMatch: /auth\\.setup\\.ts$/ },",
        "  {",
        "    name: 'chromium',",
        f"    use: {{ ...devices['Desktop Chrome'], storageState: {json.dumps(STATE_FILE)} }},",
        "    dependencies: ['setup'],",
        "  },",
        "],",
        "```",
        "",
    ]
