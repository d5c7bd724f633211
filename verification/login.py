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
import secrets
import string
from collections.abc import Iterator
from dataclasses import dataclass, field

from agents.offline.api_shape import STATE_FILE, TOKEN_ITEM
from agents.offline.common import ACCOUNT_FILE, EMAIL_DOMAIN
from repositories.credentials import Credentials, credentials_for, in_use
from repositories.login import PASSWORD_VAR, USERNAME_VAR, ApiKey, ApiToken, Recipe, recipe_of
from repositories.secrets import also_scrubbed
from verification.errors import LoginFailed

SETUP_FILE = "auth.setup.ts"
SETUP_TITLE = "log in"  # its one test
# ACCOUNT_FILE: the user name of the account a sign-up setup made (never its password); a
# page that greets the signed-in user by name is checked with it (agents/offline ACCOUNT).
FAILED = "login failed at {path}: {seen}"
EMAIL_VAR = "AMTP_E2E_EMAIL"


@dataclass(frozen=True)
class SignUp:
    """How exploration signed up and signed in when there was no recipe (``signup`` of the
    app map): the forms by their fields' labels, no value. The tests' setup project does the
    same with an account of its own, in the shape the sign-up form accepted."""

    path: str
    fields: tuple[tuple[str, str], ...]  # (label, kind): username, email, password, text, check
    submit: str
    login_path: str  # "" when signing up signed in
    login_fields: tuple[tuple[str, str], ...]
    login_submit: str
    symbols: bool  # whether the password may hold a symbol (the form took the first account)


@dataclass(frozen=True)
class Login:
    recipe: Recipe | ApiToken | ApiKey | SignUp
    credentials: Credentials | None = None  # none for a sign-up: the setup makes its own

    def env(self) -> dict[str, str]:
        """The variables the sandboxed process (and nothing else) gets."""
        if self.credentials is None:
            return {}
        return {USERNAME_VAR: self.credentials.username, PASSWORD_VAR: self.credentials.password}


def _kind(field: dict) -> str:
    """What a sign-up or login field takes, as the box decided (``box/signup.mjs``)."""
    text = f"{field['label']} {field['name']}".lower()
    if field["type"] == "password":
        return "password"
    if field["type"] == "email" or "email" in text or "e-mail" in text:
        return "email"
    if any(word in text for word in ("user", "login", "handle", "nick")):
        return "username"
    if field["type"] == "checkbox":
        return "check" if field["required"] else ""
    return "text" if field["required"] and field["type"] in ("text", "textarea") else ""


def signup_of(app_map: dict | None) -> SignUp | None:
    """The sign-up an app map's exploration made and signed in with (None: none, or it did
    not sign in, or a field it must fill has no label to find it by)."""
    record = (app_map or {}).get("signup")
    if not isinstance(record, dict) or not record.get("signed_in"):
        return None
    forms = [record["form"], record["login_form"] or {"fields": [], "submit": ""}]
    kinds = [[(f["label"], _kind(f)) for f in form["fields"]] for form in forms]
    if any(kind and not label for form in kinds for label, kind in form):
        return None
    return SignUp(
        path=record["path"],
        fields=tuple((label, kind) for label, kind in kinds[0] if kind),
        submit=record["form"]["submit"],
        login_path=record["login_path"],
        login_fields=tuple((label, kind) for label, kind in kinds[1] if kind),
        login_submit=forms[1]["submit"],
        symbols=not record["retried"],
    )


@dataclass(frozen=True)
class Throwaway:
    """Two accounts generated for one exploration's sign-up (the second for one retry in
    another shape): (user name, e-mail, password) each, never printed (``repr`` hides them)."""

    accounts: tuple[tuple[str, str, str], ...] = field(repr=False)

    def env(self) -> dict[str, str]:
        """The variables the sandboxed explorer (and nothing else) gets."""
        out = {}
        for suffix, (username, email, password) in zip(("", "_2"), self.accounts, strict=False):
            out[USERNAME_VAR + suffix] = username
            out[EMAIL_VAR + suffix] = email
            out[PASSWORD_VAR + suffix] = password
        return out


def _random(alphabet: str, size: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(size))


def new_throwaway() -> Throwaway:
    """Values that common validators accept: a user name of lower-case letters and digits
    starting with a letter (12 characters, within the usual 3-30), an address on
    ``EMAIL_DOMAIN`` (not a special-use domain: see its comment), a 16-character password
    with upper- and lower-case letters, a digit and a symbol; the second account holds
    letters only in its name and no symbol in its password (policies that refuse them)."""
    lower, upper, digits = string.ascii_lowercase, string.ascii_uppercase, string.digits
    name = "amtp" + _random(lower + digits, 8)
    first = (name, f"{name}@{EMAIL_DOMAIN}", "Am9!" + _random(lower + upper + digits, 12))
    other = "amtp" + _random(lower, 8)
    second = (other, f"{other}@{EMAIL_DOMAIN}", "Am9" + _random(lower + upper + digits, 13))
    return Throwaway((first, second))


@contextlib.contextmanager
def throwaway() -> Iterator[Throwaway]:
    """A new throwaway account pair; within the block every scrubbed text is also scrubbed
    of its values, as stored credentials are (``in_use``)."""
    account = new_throwaway()
    with also_scrubbed([value for values in account.accounts for value in values]):
        yield account


@contextlib.contextmanager
def login_for(repository, app_map: dict | None = None) -> Iterator[Login | None]:
    """``repository``'s login (None without a recipe, or without a repository); within the block every scrubbed text
    (maps, reports, errors, heal requests) is also scrubbed of its credentials.
    Without a recipe, the sign-up the ``app_map``'s exploration made, when it signed in.
    CredentialsUnavailable when they cannot be had."""
    recipe = recipe_of(repository) if repository is not None else None
    if recipe is None:
        signup = signup_of(app_map) if repository is not None else None
        yield Login(signup) if signup else None
        return
    credentials = credentials_for(repository)
    with in_use(credentials):
        yield Login(recipe, credentials)


def setup_source(recipe: Recipe | ApiToken | ApiKey | SignUp) -> str:
    """``auth.setup.ts`` for ``recipe``: every value from the recipe is a JSON string literal,
    so no label can become code."""
    if isinstance(recipe, SignUp):
        return _signup_source(recipe)
    if isinstance(recipe, ApiToken | ApiKey):
        return _token_source(recipe)
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


def _token_source(recipe: ApiToken | ApiKey) -> str:
    """``auth.setup.ts`` that asks the API for a token with the test account (a form POST,
    OAuth 2.0's password grant, else JSON, as the explorer asks), or takes the ready key of an
    ``ApiKey``, and keeps it in the saved state, under the app's origin, where the tests read
    it (``apiToken()`` of the offline engine's specs): the specs' box gets the token or key,
    never the password."""
    text = json.dumps
    if isinstance(recipe, ApiKey):
        what = "the API key"
        get = [
            f"  const token = process.env.{PASSWORD_VAR};",
            f"  if (!token) throw new Error('set {PASSWORD_VAR} to the API key');",
        ]
    else:
        what = "an API token"
        get = [
            f"  const username = process.env.{USERNAME_VAR};",
            f"  const password = process.env.{PASSWORD_VAR};",
            "  if (!username || !password) {",
            f"    throw new Error('set {USERNAME_VAR} and {PASSWORD_VAR} to get an API token');",
            "  }",
            "  // A form (OAuth 2.0's password grant), and when that answers no token, JSON.",
            "  let token: unknown;",
            "  for (const body of [",
            "    { form: { grant_type: 'password', username, password } },",
            "    { data: { username, password } },",
            "  ]) {",
            f"    const answer = await request.post({text(recipe.path)}, body);",
            "    const said = answer.ok() ? await answer.json().catch(() => null) : null;",
            "    token = said?.access_token ?? said?.token ?? said?.access ?? said?.accessToken;",
            "    if (typeof token === 'string' && token) break;",
            "  }",
            f"  expect(typeof token, {text('the token path ' + recipe.path + ' answers a token')})"
            ".toBe('string');",
        ]
    return "\n".join(
        [
            f"// Written by AMTP from the repository's API settings (not by a model): keeps {what}",
            "// of the test account in the state the other tests start from (the `setup` project).",
            "import { test as setup, expect } from '@playwright/test';",
            "import { mkdirSync, writeFileSync } from 'node:fs';",
            "import { dirname } from 'node:path';",
            "",
            f"const authFile = {text(STATE_FILE)};",
            "",
            f"setup({text(SETUP_TITLE)}, async ({{ request, baseURL }}) => {{",
            *get,
            "  mkdirSync(dirname(authFile), { recursive: true });",
            "  const origin = new URL(baseURL ?? 'http://localhost').origin;",
            f"  const item = {{ name: {text(TOKEN_ITEM)}, value: token as string }};",
            "  const state = { cookies: [], origins: [{ origin, localStorage: [item] }] };",
            "  writeFileSync(authFile, JSON.stringify(state));",
            "});",
            "",
        ]
    )


def _signup_source(signup: SignUp) -> str:
    """``auth.setup.ts`` that signs up a new account (its values random, made by the test
    process itself and never written anywhere), signs in with it and saves the session."""
    text = json.dumps
    password = "'Am9!' + secret" if signup.symbols else "'Am9' + secret"
    lines = [
        "// Written by AMTP from the sign-up it made when exploring the app (not by a model):",
        "// signs up a new account, signs in with it and saves the session the other tests",
        "// start from (the `setup` project). The account's values are random, made here.",
        "import { test as setup } from '@playwright/test';",
        "import { randomBytes } from 'node:crypto';",
        "import { writeFileSync } from 'node:fs';",
        "",
        f"const authFile = {text(STATE_FILE)};",
        "",
        f"setup({text(SETUP_TITLE)}, async ({{ page }}) => {{",
        "  const secret = randomBytes(8).toString('hex');",
        "  const username = 'amtp' + randomBytes(4).toString('hex');",
        f"  const values = {{ username, email: username + {text('@' + EMAIL_DOMAIN)}, "
        f"password: {password}, text: 'AMTP ' + username }};",
        *_form_lines("signUp", signup.path, signup.fields, signup.submit),
    ]
    leave = signup.path
    if signup.login_path:
        lines += _form_lines("signIn", signup.login_path, signup.login_fields, signup.login_submit)
        leave = signup.login_path
    lines += [
        f"  await page.waitForURL((url) => url.pathname !== {text(leave.split('?')[0])});",
        "  await page.context().storageState({ path: authFile });",
        "  // Its user name (no secret): a page greeting the signed-in user is checked with it.",
        f"  writeFileSync({text(ACCOUNT_FILE)}, JSON.stringify({{ username }}));",
        "});",
        "",
    ]
    return "\n".join(lines)


def _form_lines(name: str, path: str, fields, submit: str) -> list[str]:
    """Open ``path`` and fill the form whose button is ``submit``, then send it."""
    text = json.dumps
    form = f"page.locator('form').filter({{ has: page.getByRole('button', {{ name: {text(submit)}, exact: true }}) }})"
    lines = [f"  await page.goto({text(path)});", f"  const {name} = {form};"]
    for label, kind in fields:
        field = f"{name}.getByLabel({text(label)}, {{ exact: true }})"
        if kind == "check":
            lines.append(f"  await {field}.check();")
        else:
            lines.append(f"  await {field}.fill(values.{kind});")
    lines.append(
        f"  await {name}.getByRole('button', {{ name: {text(submit)}, exact: true }}).click();"
    )
    return lines


MAX_STATE_BYTES = 1 << 20
NO_STATE = "the setup project logged in at {path} but left no storage state ({STATE_FILE})"
# The setup's box records nothing: a trace or a screenshot would hold what was typed.
SETUP_USE = {"trace": "off", "screenshot": "off", "video": "off"}


def projects(setup_match: str, tests_match: str) -> list[dict]:
    """Playwright's projects for the pull request's config (``runs/pr_harness.py``): ``setup``
    (no trace or screenshot: they would hold what was typed), then the tests, which start
    from its storage state."""
    return [
        {"name": "setup", "testMatch": setup_match, "use": SETUP_USE},
        {
            "name": "tests",
            "testMatch": tests_match,
            "dependencies": ["setup"],
            "use": {"storageState": STATE_FILE},
        },
    ]


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


def login_section(recipe: Recipe | ApiToken | ApiKey | SignUp, test_dir: str) -> list[str]:
    """How to run the suite logged in: the variables to set (names only) and the config."""
    setup = f"{test_dir}/{SETUP_FILE}"
    if isinstance(recipe, ApiKey):
        return [
            "### API key",
            "",
            f"The API is tested with a key: `{setup}` (written by AMTP from the repository's "
            f"settings) saves the key of `{PASSWORD_VAR}` in `{STATE_FILE}`, where the tests "
            f"read it and send it in the {recipe.where} `{recipe.name}` (add "
            "`playwright/.auth/` to `.gitignore`). Set it, and wire the setup project in "
            "`playwright.config.ts`:",
            "",
            *_CONFIG,
        ]
    if isinstance(recipe, ApiToken):
        return [
            "### API token",
            "",
            f"The API is tested with a token: `{setup}` (written by AMTP from the repository's "
            f"API token path) posts a test account's credentials to "
            f"`{recipe.path.replace('`', '')}` and saves the token in `{STATE_FILE}`, where "
            "the tests read it (add `playwright/.auth/` to `.gitignore`). Set "
            f"`{USERNAME_VAR}` and `{PASSWORD_VAR}` to the account's credentials, and wire the "
            "setup project in `playwright.config.ts`:",
            "",
            *_CONFIG,
        ]
    if isinstance(recipe, SignUp):
        return [
            "### Signing up",
            "",
            f"The app is tested signed in: `{setup}` (written by AMTP from the sign-up it made "
            f"when exploring the app) signs up a new account at `{recipe.path.replace('`', '')}` "
            "with random values, signs in with it and saves the session in "
            f"`{STATE_FILE}` (add `playwright/.auth/` to `.gitignore`). Nothing to set; wire "
            "the setup project in `playwright.config.ts`:",
            "",
            *_CONFIG,
        ]
    return [
        "### Logging in",
        "",
        f"The app is tested logged in: `{setup}` (written by AMTP from the repository's login "
        f"recipe) opens `{recipe.path.replace('`', '')}`, logs in and saves the session in `{STATE_FILE}` "
        f"(add `playwright/.auth/` to `.gitignore`). Set `{USERNAME_VAR}` and `{PASSWORD_VAR}` "
        "to a test account's credentials, and wire the setup project in `playwright.config.ts`:",
        "",
        *_CONFIG,
    ]


_CONFIG = [
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
