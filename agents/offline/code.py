"""Test Engineer brains: test cases → Playwright specs or Maestro flows.

`generate_files` reads the step grammar written by `cases.py` (see its docstring); steps it
does not understand become comments, and a Playwright test without any usable step is emitted
as `test.fixme` so a reviewer sees it. Every string from a case reaches TypeScript only as a
JSON-escaped string literal (ASCII-only, so U+2028 and friends cannot end a line) and YAML
only through `yaml.safe_dump`; comments are reduced to one printable line. File names come
from sanitised case ids and areas, always under the validated `test_dir`. What a flow or
journey does on a page (forms, the created item's controls, its checks and clean-up) is
written by `journey_code.py`; journeys go to `journeys.spec.ts`.
"""

from __future__ import annotations

import json
import re

from agents.file_policy import normalise_test_dir

from .api_keys import KEY_STEP, TOKEN_PLACE
from .api_shape import TOKEN_HELPER, WITH_TOKEN, shape_lines
from .common import (
    ACCOUNT,
    ACCOUNT_FILE,
    HEADER,
    PAGE_ERRORS_CHECK,
    PAGE_ERRORS_WATCH,
    area_of,
    one_line,
    slug,
)
from .journey_code import (
    CLEAN_PREFIX,
    RUN_TOKEN,
    TAG,
    VALUES,
    WAS,
    action_lines,
    clean_up_block,
    form_action,
    uses_tag,
)
from .maestro import maestro_flow

NOT_FOUND_PAGE = "/amtp-page-that-does-not-exist"
SIGNED_OUT = ", signed out"  # a Send step's end: without the suite's session
_QUOTE_LIMIT = 120  # characters of an expected text kept in the code
MAX_FILES = 50  # the file policy's default limit per pull request
_SEND = re.compile(r"\bSend\s+(GET|POST|PUT|PATCH|DELETE|HEAD)\s+(\S+)(.*)$", re.I)
# An Authorization header a request step sends: a scheme and a token of base64url/JWT
# characters only, so no quote or line break reaches the file.
_EMPTY_FORM = re.compile(
    r'with the form fields (\[(?:"(?:[^"\\\n]|\\.){1,200}"(?:, )?){1,20}\]) empty'
)
_FIELD_NAME = re.compile(r"^[\w\[\].-]{1,80}$")


def _names(text: str) -> list[str]:
    """The field names of a JSON list (each a name a request can send), else []."""
    try:
        names = json.loads(text)
    except ValueError:
        return []
    ok = isinstance(names, list) and 0 < len(names) <= 20
    return names if ok and all(isinstance(n, str) and _FIELD_NAME.match(n) for n in names) else []


_FORM = re.compile(r'with the form username "([\w.@+-]{1,60})" and password "([\w.@+!-]{1,60})"')
# An account's fields, each with the kind of value a step types (``VALUES``).
_ACCOUNT = re.compile(r"with the account form (\{[^\n]{2,2000}\})(?:, signed out)?\s*$")
_ACCOUNT_VALUES = (
    "a unique username",
    "a unique email",
    "a unique password",
    "a wrong password",
    "an empty value",
)


def _account_fields(text: str) -> str | None:
    """The ``form`` option of a request sending an account's fields (names a request can
    send, values the test builds from its tag), else None."""
    try:
        fields = json.loads(text)
    except ValueError:
        return None
    if not isinstance(fields, dict) or not 0 < len(fields) <= 20:
        return None
    if not all(_FIELD_NAME.match(k) and v in _ACCOUNT_VALUES for k, v in fields.items()):
        return None
    value = {**VALUES, "an empty value": "''"}
    return "form: { " + ", ".join(f"{_ts(k)}: {value[v]}" for k, v in fields.items()) + " }"


_URL = re.compile(r"^(/|https?://)\S*$")


def _ts(text: object) -> str:
    return json.dumps(str(text), ensure_ascii=True)


def _case_id(case: dict, index: int) -> str:
    cid = slug(case.get("id", ""), 64)
    return cid if cid.startswith("tc_") else f"tc_{cid or 'case'}_{index}"


_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def generate_files(
    test_engineer_input: dict,
    *,
    test_dir: str,
    app_id: str | None,
    base_url_env: str = "BASE_URL",
) -> list[dict]:
    """[{"path", "contents"}] for the input's target_framework, all under `test_dir`."""
    directory = normalise_test_dir(test_dir)  # the file policy's own rule, one definition
    if not _ENV_NAME.fullmatch(base_url_env):
        raise ValueError(f"unsafe base_url_env: {base_url_env!r}")
    cases = [c for c in test_engineer_input.get("test_cases") or [] if isinstance(c, dict)]
    if not cases:
        raise ValueError("no test cases to turn into files")
    if test_engineer_input.get("target_framework") == "maestro":
        return _maestro(cases, directory, app_id)
    return _playwright(cases, directory, base_url_env)


def _unique_ids(cases: list[dict]) -> list[str]:
    used: set[str] = set()
    out = []
    for index, case in enumerate(cases):
        cid = _case_id(case, index)
        while cid in used:
            cid += "_x"
        used.add(cid)
        out.append(cid)
    return out


def _fold(groups: dict[str, list], overflow: str) -> dict[str, list]:
    """At most MAX_FILES groups: the rest are merged into one `overflow` group."""
    if len(groups) <= MAX_FILES:
        return groups
    names = list(groups)
    kept = {name: groups[name] for name in names[: MAX_FILES - 1]}
    kept[overflow] = [item for name in names[MAX_FILES - 1 :] for item in groups[name]]
    return kept


def _maestro(cases: list[dict], directory: str, app_id: str | None) -> list[dict]:
    # One flow per screen: a case whose id extends another's (tc_screen_cart_scroll after
    # tc_screen_cart) joins that case's flow; anything else gets a flow of its own.
    groups: dict[str, list[tuple[str, dict]]] = {}
    for cid, case in zip(_unique_ids(cases), cases, strict=True):
        owner = next((g for g in groups if cid.startswith(g + "_")), cid)
        groups.setdefault(owner, []).append((cid, case))
    groups = _fold(groups, "tc_more_flows")
    return [
        {"path": f"{directory}/{name}.yaml", "contents": maestro_flow(members, app_id)}
        for name, members in groups.items()
    ]


# --- Playwright ---------------------------------------------------------------------------


_HEADER = re.compile(
    r'with the header Authorization "((?:Bearer|Basic) [A-Za-z0-9._~+/=-]{1,500})"'
)
_BEARER = "'Bearer ' + apiToken()"
_OPEN = re.compile(r"^\s*(?:Open|Visit|Navigate to|Go to|Load)\s+(\S+)\s*$", re.I)


def _actions(steps: list[str]) -> list[tuple[str, str, str | None, str]]:
    """(kind, url or label, method or value, step) per understood step; kind "note" keeps
    others as comments."""
    out = []
    for step in steps:
        step = str(step)
        if step.startswith(CLEAN_PREFIX):
            out.append(("cleanup", "", None, step[len(CLEAN_PREFIX) :]))
        elif form := form_action(step):
            out.append(form)
        elif (m := _SEND.search(step)) and _URL.match(m.group(2)):
            method, url = m.group(1).lower(), m.group(2)
            with_body = "empty json body" in m.group(3).lower()
            if header := _HEADER.search(m.group(3)):  # a credential the test sends as given
                method += f"|headers: {{ Authorization: {_ts(header.group(1))} }}"
            elif place := TOKEN_PLACE.search(m.group(3)):  # the repository's own key
                option = "params" if place.group(1) == "query parameter" else "headers"
                method += f"|{option}: {{ {_ts(place.group(2))}: apiToken() }}"
            elif WITH_TOKEN in m.group(3):  # the setup project's token (TOKEN_HELPER)
                method += f"|headers: {{ Authorization: {_BEARER} }}"
            elif key := KEY_STEP.search(m.group(3)):  # a key, as given, where the app reads it
                value, where, name = key.groups()
                if where == "header":
                    method += f"|headers: {{ {_ts(name)}: {_ts(value)} }}"
                else:  # both of [\w.-]: nothing to escape in a URL
                    url += ("&" if "?" in url else "?") + f"{name}={value}"
            elif (empty := _EMPTY_FORM.search(m.group(3))) and (names := _names(empty.group(1))):
                method += f"|form: {{ {', '.join(f'{_ts(n)}: ' + repr('') for n in names)} }}"
            elif (account := _ACCOUNT.search(m.group(3))) and (
                given := _account_fields(account.group(1))
            ):
                method += f"|{given}"
            elif form := _FORM.search(m.group(3)):  # a sign-in's fields, as given
                method += (
                    f"|form: {{ username: {_ts(form.group(1))}, password: {_ts(form.group(2))} }}"
                )
            out.append(("request", url, f"{method}{'+' if with_body else ''}", step))
        elif (m := _OPEN.match(step)) and _URL.match(m.group(1)):
            out.append(("page", m.group(1), None, step))
        else:
            out.append(("note", "", None, step))
    return out


def _area(actions: list[tuple[str, str, str | None, str]]) -> str:
    for kind, url, _, _ in actions:
        if kind == "request":
            return "api-" + area_of(url.split("?")[0]).replace("_", "-")
        if kind == "page":
            area = "home" if url.startswith(NOT_FOUND_PAGE) else area_of(url.split("?")[0])
            return "pages-" + ("home" if area == "root" else area).replace("_", "-")
    return "general"


def _quoted(text: str | None) -> str | None:
    try:
        value = json.loads(text, strict=False) if text else None
    except ValueError:  # a malformed quote is treated as no text, not as a crash
        return None
    if not isinstance(value, str):
        return None
    return one_line(value, _QUOTE_LIMIT) or None


_HEADING = re.compile(r'heading ("(?:[^"\\]|\\.)*")')


def _heading(expected: str) -> str | None:
    match = _HEADING.search(expected)
    return _quoted(match.group(1) if match else None)


_SHOWN = re.compile(
    r'\bthe (textbox|searchbox|combobox|spinbutton|button) ("(?:[^"\\]|\\.)*") is visible'
)


def _shown(expected: str) -> list[tuple[str, str]]:
    """(role, accessible name) of each element the expectation says is visible."""
    found = [(m.group(1), _quoted(m.group(2))) for m in _SHOWN.finditer(expected)]
    return [(role, name) for role, name in found[:8] if name]


def _status_lines(var: str, expected: str, api: bool) -> list[str]:
    exp = expected.lower()
    value = f"{var}.status()" if api else f"{var}?.status()"
    if "below 500" in exp or "5xx" in exp:
        found = [f"expect({value}, 'the route exists').not.toBe(404);"] if "not 404" in exp else []
        return [f"expect({value}).toBeLessThan(500);", *found]
    if exact := re.search(r"\bstatus ([1-5]\d\d)\b", exp):
        return [f"expect({value}).toBe({exact.group(1)});"]
    if "2xx" in exp or not api:
        lines = [f"expect({var}{'' if api else '?'}.ok()).toBeTruthy();"]
        if api and "json body" in exp:
            lines += [
                f"const body: unknown = await {var}.json();",
                "expect(body).not.toBeUndefined();",
            ]
        return lines
    return [f"expect({value}).toBeLessThan(500);"]


_ENDS_ON = re.compile(r'\bit ends on ("(?:[^"\\]|\\.){1,500}")')
_LANDS_ON = re.compile(r'\bthe browser ends on ("(?:[^"\\]|\\.){1,500}")')
_SAYS = re.compile(r'\bthe answer says ("(?:[^"\\]|\\.){1,300}")')
_FIRST_ENDS = re.compile(r'\bthe first answer ends on ("(?:[^"\\]|\\.){1,500}")')


def _answer_lines(var: str, expected: str) -> list[str]:
    """Where a request's answer ended after redirects, and the message it showed, whole."""
    lines = []
    if (m := _ENDS_ON.search(expected)) and (path := _quoted(m.group(1))) and _URL.match(path):
        lines.append(f"expect(new URL({var}.url()).pathname).toBe({_ts(path)});")
    if (m := _SAYS.search(expected)) and (said := _quoted(m.group(1))):
        lines.append(f"expect(await {var}.text()).toContain({_with_tag(said)});")
    if (m := _FIRST_ENDS.search(expected)) and (path := _quoted(m.group(1))) and _URL.match(path):
        lines.append(f"expect(new URL(response.url()).pathname).toBe({_ts(path)});")
    return lines


def _test_block(case: dict, cid: str) -> tuple[str, list[str]]:
    title = _ts(f"{cid}: {one_line(case.get('title') or cid, 200)}")
    steps = [s for s in case.get("steps") or [] if isinstance(s, str)]
    expected = str(case.get("expected") or "")
    actions = _actions(steps)
    kinds = {a[0] for a in actions}
    comments = [f"    // Priority: {one_line(case.get('priority', 'unspecified'), 20)}"]
    comments += [f"    // Precondition: {one_line(p)}" for p in case.get("preconditions") or []]
    comments.append(f"    // Expected: {one_line(expected, 300)}")
    if not kinds & {"request", "page"}:
        body = [f"  test.fixme({title}, async () => {{", *comments]
        body.append("    // No machine-readable step: implement these by hand.")
        body += [f"    // Step: {one_line(s)}" for s in steps] + ["  });"]
        return "general", body
    fixtures = ", ".join(k for k in ("page", "request") if k in kinds)
    # A request sent without a session: a request context of its own (no stored state).
    anonymous = any(a[0] == "request" and a[3].rstrip().endswith(SIGNED_OUT) for a in actions)
    if anonymous:
        fixtures = fixtures.replace("request", "playwright, baseURL")
    body = [f"  test({title}, async ({{ {fixtures} }}) => {{", *comments]
    if "page" in kinds:
        body += ["    " + line for line in PAGE_ERRORS_WATCH]
        if "remember" in kinds:  # the values an edit form held, put back in clean-up
            body.append(f"    const {WAS}: Record<string, string> = {{}};")
    if uses_tag(actions, expected):
        body.append(TAG)
    if anonymous:
        # No stored state: the test runner gives newContext the project's own by default.
        body.append(
            "    const request = await playwright.request.newContext("
            "{ baseURL, storageState: { cookies: [], origins: [] } });"
        )
    lines, last = _step_lines([a for a in actions if a[0] != "cleanup"], "page" in kinds)
    if last["request"]:
        lines += _status_lines(last["request"], expected, True)
        lines += _answer_lines(last["request"], expected)
        lines += shape_lines(last["request"], expected)
    if last["page"]:
        if not last["request"]:
            lines += _status_lines(last["page"], expected, False)
            if kinds <= {"page", "note"}:
                lines += _stayed_lines(actions, expected)
        lines += _page_lines(expected)
    if cleanup := [a[3] for a in actions if a[0] == "cleanup"]:
        lines = ["try {", *("  " + line for line in lines), *clean_up_block(cleanup)]
    area = "journeys" if "expect" in kinds else _area(actions)
    return area, [*body, *("    " + line for line in lines), "  });"]


def _stayed_lines(actions: list, expected: str) -> list[str]:
    """A page test that expects a 2xx ends on the path it opened once the page settled: a
    redirect (to a login page, to the home page; by the server or by a client-side router)
    answers 2xx too, and then the test never saw its subject."""
    url = [a[1] for a in actions if a[0] == "page"][-1]
    if not url.startswith("/") or "2xx" not in expected.lower():
        return []
    path = url.split("#")[0].split("?")[0].rstrip("/")
    return [
        # A client-side router redirects once its scripts ran (often after a request): let
        # the page settle first (bounded: a page that keeps a request open never idles),
        # then ask the page itself where it is (history.replaceState moved it in place).
        "await page.waitForLoadState('networkidle', { timeout: 5000 }).catch(() => {});",
        "expect((await page.evaluate(() => location.pathname)).replace(/\\/+$/, ''), "
        f"'the page it opened, not a redirect').toBe({_ts(path)});",
    ]


def _step_lines(actions: list, on_page: bool) -> tuple[list[str], dict[str, str]]:
    """The statements of each step, in order, and the last navigation and request."""
    lines: list[str] = []
    counts = {"request": 0, "page": 0}
    last = {"request": "", "page": ""}
    for n, (kind, url, method, step) in enumerate(actions):
        lines.append(f"// Step: {one_line(step)}")
        if kind not in counts and kind != "note" and on_page:
            lines += action_lines(kind, url, method)
            after = actions[n + 1][0] if n + 1 < len(actions) else ""
            if (
                kind in ("click", "confirm", "item", "item_confirm", "open_item")
                and after == "page"
            ):
                # A form sent by fetch may still be on its way: let it land before leaving.
                lines.append("await page.waitForLoadState('networkidle');")
        if kind not in counts:
            continue
        counts[kind] += 1
        base = "response" if kind == "request" else "navigation"
        var = base if counts[kind] == 1 else f"{base}{counts[kind]}"
        last[kind] = var
        if kind == "page":
            lines.append(f"const {var} = await page.goto({_ts(url)});")
        else:
            verb, _, given = method.rstrip("+").partition("|")
            options = ["data: {}"] * method.endswith("+") + [given] * bool(given)
            extra = f", {{ {', '.join(options)} }}" if options else ""
            lines.append(f"const {var} = await request.{verb}({_ts(url)}{extra});")
    return lines, last


OWN_ACCOUNT = (
    f"const account = JSON.parse(readFileSync({_ts(ACCOUNT_FILE)}, 'utf8')).username as string;"
)
_TITLE_IS = re.compile(r'\bits document title is ("(?:[^"\\]|\\.){1,400}")')
_ASKS_LOGIN = re.compile(r'\bit asks for a login: the browser ends on ("(?:[^"\\]|\\.){1,500}")')


def _login_lines(expected: str) -> list[str]:
    """A page that asks for a login: the address the browser ends on, polled (a client-side
    router sends it there after the page loaded), and the login's password field."""
    m = _ASKS_LOGIN.search(expected)
    path = _quoted(m.group(1)) if m else None
    if not path or not _URL.match(path):
        return []
    return [
        "await expect.poll(() => new URL(page.url()).pathname, 'sent to the login')"
        f".toBe({_ts(path)});",
        "await expect(page.locator('input[type=\"password\"]').first()).toBeVisible();",
    ]


def _page_lines(expected: str) -> list[str]:
    """A page's checks: visible body, heading, elements, a flow's outcome, title, no errors.
    A page that rendered nothing when explored (``nothing rendered``) is held to its title."""
    blank = "nothing rendered when explored" in expected
    lines = [] if blank else ["await expect(page.locator('body')).toBeVisible();"]
    if (m := _LANDS_ON.search(expected)) and (path := _quoted(m.group(1))) and _URL.match(path):
        # A redirect the test expects: the address it led to, as the explored app showed it,
        # asked of the page until it settles (a client-side redirect comes after the load).
        lines.insert(
            0,
            "await expect.poll(() => page.evaluate(() => location.pathname), 'where it led')"
            f".toBe({_ts(path)});",
        )
    lines += _login_lines(expected)
    if (m := _TITLE_IS.search(expected)) and (title := _quoted(m.group(1))):
        lines.append(f"await expect(page).toHaveTitle({_ts(title)});")
    if (heading := _heading(expected)) and ACCOUNT in heading:
        # The signed-in account greeted by name: the test's own, as its setup saved it.
        name = " + account + ".join(_ts(part) for part in heading.split(ACCOUNT))
        lines.append(OWN_ACCOUNT)
        lines.append(
            f"await expect(page.getByRole('heading', {{ name: {name}, exact: true }}).first())"
            ".toBeVisible();"
        )
    elif heading:
        lines.append(
            f"await expect(page.getByRole('heading', {_name(heading)}).first()).toBeVisible();"
        )
    for role, name in _shown(expected):
        lines.append(
            f"await expect(page.getByRole({_ts(role)}, {_name(name)}).first()).toBeVisible();"
        )
    lines += _outcome_lines(expected)
    if "document title" in expected.lower():
        lines.append("await expect(page).toHaveTitle(/\\S/);")
    return [*lines, PAGE_ERRORS_CHECK]


def _name(name: str) -> str:
    """An accessible name matched as seen: the whole name (`exact`), so heading "Notes" never
    matches "Your notes"; a name cut at the quoting limit is matched as the start it is."""
    exact = ", exact: true" if len(name) < _QUOTE_LIMIT else ""
    return f"{{ name: {_ts(name)}{exact} }}"


def _with_tag(text: str) -> str:
    """``text`` as a TypeScript expression, each ``{tag}`` in it the test's own tag."""
    return " + tag + ".join(_ts(part) for part in text.split("{tag}"))


_SUBMITTED = re.compile(r'\bthe submitted ("(?:[^"\\]|\\.)*") is visible')
_EXACT = re.compile(r'\bthe exact text ("(?:[^"\\]|\\.)*") is visible')
_TEXT = re.compile(r'\bthe text ("(?:[^"\\]|\\.)*") is visible')


def _outcome_lines(expected: str) -> list[str]:
    """A flow's checks: what appeared after submitting, and the submitted text shown."""
    lines = []
    if _SUBMITTED.search(expected):
        lines.append(
            f"await expect(page.getByText({VALUES['a unique text']}).first()).toBeVisible();"
        )
    for match in list(_EXACT.finditer(expected))[:4]:  # a message matched whole, as seen
        if text := _quoted(match.group(1)):
            exact = "{ exact: true }"
            lines.append(
                f"await expect(page.getByText({_with_tag(text)}, {exact}).first()).toBeVisible();"
            )
    for match in list(_TEXT.finditer(expected))[:4]:
        if text := _quoted(match.group(1)):
            lines.append(f"await expect(page.getByText({_with_tag(text)}).first()).toBeVisible();")
    return lines


_DEFAULT_URL = re.compile(r"\(default (https?://[\w.\-:/]+)\)")


def _playwright(cases: list[dict], directory: str, env: str) -> list[dict]:
    default_url = "http://localhost:3000"
    for case in cases:
        for pre in case.get("preconditions") or []:
            if m := _DEFAULT_URL.search(str(pre)):
                default_url = m.group(1)
                break
    groups: dict[str, list[tuple[str, list[str]]]] = {}
    for cid, case in zip(_unique_ids(cases), cases, strict=True):
        area, block = _test_block(case, cid)
        groups.setdefault(area, []).append((cid, block))
    files = []
    for area, tests in _fold(dict(sorted(groups.items())), "more").items():
        files.append(
            {
                "path": f"{directory}/{area}.spec.ts",
                "contents": _spec_file(area, tests, env, default_url),
            }
        )
    return files


def _spec_file(area: str, tests: list[tuple[str, list[str]]], env: str, default_url: str) -> str:
    ids = [cid for cid, _ in tests]
    lines = [
        f"// {HEADER}.",
        "// Rule-generated from the repository's routes and pages; no LLM wrote these tests.",
        f"// Base URL: process.env.{env} (default {one_line(default_url, 80)}).",
        "// Cases:",
    ]
    lines += [f"//   {', '.join(ids[i : i + 4])}" for i in range(0, len(ids), 4)]
    lines.append("import { test, expect } from '@playwright/test';")
    token = any("apiToken()" in line for _, block in tests for line in block)
    if token or any(OWN_ACCOUNT in "".join(b) for _, b in tests):
        lines.append("import { readFileSync } from 'node:fs';")
    lines += ["", f"test.use({{ baseURL: process.env.{env} ?? {_ts(default_url)} }});", ""]
    if token:
        lines += [*TOKEN_HELPER, ""]
    if any(TAG in block for _, block in tests):
        lines += [
            "// Unique per run: with the test id, worker and retry in each test's tag.",
            RUN_TOKEN,
            "",
        ]
    label = area
    for prefix, name in (("api-", "API: "), ("pages-", "Pages: ")):
        if area.startswith(prefix):
            label = name + area[len(prefix) :]
    lines.append(f"test.describe({_ts(label)}, () => {{")
    for n, (_, block) in enumerate(tests):
        if n:
            lines.append("")
        lines += block
    lines.append("});")
    return "\n".join(lines) + "\n"
