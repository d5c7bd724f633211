"""The gate between the Test Engineer's files (untrusted model output) and a pull request.

Anything that is not plainly a test file in the test directory is refused; "fixable" paths such as
``a/./b`` too, since repairing them would hide a misbehaving model. Every problem is reported at
once, so that one retry can fix them all."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

import tree_sitter
import tree_sitter_typescript
import yaml

from repositories import paths
from schemas.errors import ContractViolation

FILE_POLICY_VERSION = "1.0.0"

EXTENSIONS = {"playwright": (".spec.ts",), "maestro": (".yaml", ".yml")}
MAX_YAML_DEPTH = 32

# Path rules and their messages are repositories.paths': the hosts and admin share them.
# Batch and content rules.
UNKNOWN_FRAMEWORK = "unknown framework"
NO_FILES = "no files were generated"
# No `mode` either: every file is committed as a regular, non-executable blob (100644).
BAD_ENTRY = "entry must be an object with exactly the keys 'path' and 'contents'"
TOO_MANY_FILES = "too many files"
FILE_TOO_LARGE = "file is too large"
TOTAL_TOO_LARGE = "files are too large in total"
NOT_TEXT = "contents are not UTF-8 text (not a string, NUL byte or lone surrogate)"
EMPTY_FILE = "file is empty"
DUPLICATE_PATH = "path appears more than once"
CASE_COLLISION = "path differs only in letter case or Unicode form from another file"
FILE_DIRECTORY_CLASH = "path is used both as a file and as a directory"
WRONG_EXTENSION = "file has the wrong extension"
RESERVED_NAME = "config.yaml/config.yml is Maestro's workspace configuration, not a flow"
TS_SYNTAX_ERROR = "TypeScript does not parse"
TS_NO_IMPORT = "TypeScript does not import from '@playwright/test'"
TS_NO_TEST = "TypeScript declares no test( or test.describe( call"
TS_ONLY = "TypeScript uses .only, which would skip every other test in CI"
YAML_SYNTAX_ERROR = "YAML does not parse"
YAML_ALIAS = "YAML anchors and aliases (&x, *x) are not allowed in flows"
YAML_TOO_DEEP = f"YAML nests deeper than {MAX_YAML_DEPTH} levels"
MAESTRO_DOCUMENTS = "a Maestro flow is two YAML documents: the config mapping, '---', the commands"
MAESTRO_NO_APP_ID = "Maestro flow config has no non-empty string appId"
MAESTRO_CONFIG_KEY = "Maestro flow config has an unknown or mistyped key"
MAESTRO_NO_COMMANDS = "Maestro commands must be a non-empty list"
MAESTRO_UNKNOWN_COMMAND = "unknown Maestro command"
MAESTRO_NEEDS_ARGUMENTS = "Maestro command needs arguments"
MAESTRO_NOT_A_COMMAND = "not a Maestro command (a name, or a mapping with one command name as key)"

# Maestro's YamlFluentCommand keys (maestro-orchestra) checked against docs.maestro.dev "Commands
# available", less the deprecated openBrowser. Bare strings (`- back`) are accepted only for
# commands without a required argument (YamlFluentCommand.parse), as Maestro does.
MAESTRO_BARE_COMMANDS = frozenset(
    """
    assertDarkMode assertLightMode assertNoDefectsWithAI back clearKeychain clearState eraseText
    hideKeyboard inputRandomCityName inputRandomColorName inputRandomCountryName
    inputRandomEmail inputRandomNumber inputRandomPersonName inputRandomText killApp launchApp
    pasteText scroll stopApp stopRecording toggleAirplaneMode toggleDarkMode waitForAnimationToEnd
    """.split()
)
MAESTRO_COMMANDS = MAESTRO_BARE_COMMANDS | frozenset(
    """
    addMedia assertNotVisible assertScreenshot assertTrue assertVisible assertWithAI copyTextFrom
    doubleTapOn evalScript extendedWaitUntil extractTextWithAI inputText longPressOn openLink
    pressKey repeat retry runFlow runScript scrollUntilVisible setAirplaneMode setClipboard
    setDarkMode setLocation setOrientation setPermissions startRecording swipe takeScreenshot
    tapOn travel
    """.split()
)
MAESTRO_NESTING_COMMANDS = frozenset({"repeat", "retry", "runFlow"})  # carry `commands: [...]`
MAESTRO_CONFIG_KEYS = {"appId": str, "name": str, "tags": list, "env": dict}
MAESTRO_HOOKS = ("onFlowStart", "onFlowComplete")  # command lists run around the flow

_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")  # NUL, or lone surrogates a JSON string can carry
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ~10x faster, same rules
TYPESCRIPT = tree_sitter.Language(tree_sitter_typescript.language_typescript())


def walk(node: tree_sitter.Node):
    """Every node under ``node``, in source order, without recursion."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def normalise_test_dir(test_dir: str) -> str:
    """The configured test directory without its trailing '/'; refused unless it is safe.

    The rule is ``repositories.paths.checked_test_dir``, the one the repository settings are
    saved with, so a test directory admin accepts is one this accepts."""
    directory, problems = paths.checked_test_dir(test_dir)
    if problems:
        allowed = "the test directory must be a relative path such as e2e/amtp"
        shown = [f"test_dir {_show(test_dir)}: {rule}; {allowed}" for rule in problems]
        raise ContractViolation(f"invalid test directory: {'; '.join(shown)}", problems=shown)
    return directory


def check_generated_files(
    files: list[dict],
    *,
    framework: str,
    test_dir: str,
    max_files: int = 50,
    max_file_bytes: int = 200_000,
    max_total_bytes: int = 2_000_000,
) -> list[dict]:
    """The files as new ``{"path", "contents"}`` dicts (paths in NFC), or ContractViolation."""
    test_dir = normalise_test_dir(test_dir)
    problems: list[str] = []
    if framework not in EXTENSIONS:
        problems.append(f"{UNKNOWN_FRAMEWORK} {_show(framework)}; use one of {list(EXTENSIONS)}")
    if not isinstance(files, list) or not files:
        raise _violation([*problems, f"{NO_FILES}; return at least one test file"])
    if len(files) > max_files:
        problems.append(f"{TOO_MANY_FILES}: {len(files)} files; at most {max_files} are allowed")
    accepted: list[dict] = []
    seen: dict[str, str] = {}  # NFC path -> the path as shown in messages
    seen_folded: dict[str, str] = {}  # the same, case-folded: what macOS and Windows compare
    total_bytes = 0
    for index, entry in enumerate(files):
        path = entry.get("path") if isinstance(entry, dict) else None
        shown = _show(path) if isinstance(path, str) else f"files[{index}]"
        entry_rules, size = _entry_problems(entry, framework, test_dir, max_file_bytes)
        problems += [f"{shown}: {rule}" for rule in entry_rules]
        total_bytes += size
        if not isinstance(path, str):
            continue
        path = unicodedata.normalize("NFC", path)
        if clash := seen.get(path) or seen_folded.get(path.casefold()):
            rule = DUPLICATE_PATH if path in seen else f"{CASE_COLLISION} ({clash})"
            problems.append(f"{shown}: {rule}; every file needs a distinct path on every OS")
        seen.setdefault(path, shown)
        seen_folded.setdefault(path.casefold(), shown)
        accepted.append({"path": path, "contents": entry.get("contents")})

    if total_bytes > max_total_bytes:
        problems.append(f"{TOTAL_TOO_LARGE}: {total_bytes} bytes; at most {max_total_bytes}")
    problems += _clash_problems(seen)
    if problems:
        raise _violation(problems)
    return accepted


def _entry_problems(
    entry: Any, framework: str, test_dir: str, max_file_bytes: int
) -> tuple[list[str], int]:
    """Every rule one file entry breaks (without the path prefix), and its size in bytes."""
    if not isinstance(entry, dict):
        return [BAD_ENTRY], 0
    path, contents = entry.get("path"), entry.get("contents")
    problems = []
    if set(entry) != {"path", "contents"}:
        problems.append(f"{BAD_ENTRY}; got {sorted(map(str, entry))}")
    where = f"files must be relative paths under {test_dir}/"
    problems += [f"{rule}; {where}" for rule in paths.path_problems(path, under=test_dir)]
    size = _utf8_size(contents) if isinstance(contents, str) else 0
    content_rules = []
    if not isinstance(contents, str) or _NOT_TEXT.search(contents):
        content_rules.append(f"{NOT_TEXT}; files must be text")
    elif not contents.strip():
        content_rules.append(f"{EMPTY_FILE}; a test file needs contents")
    if size > max_file_bytes:
        content_rules.append(f"{FILE_TOO_LARGE} ({size} bytes); at most {max_file_bytes} bytes")
    if isinstance(path, str) and framework in EXTENSIONS:
        content_rules += _type_problems(path, framework)
        if not content_rules:  # unreadable, oversized or mistyped files are not worth parsing
            parse = _playwright_problems if framework == "playwright" else _maestro_problems
            content_rules += parse(contents)
    return problems + content_rules, size


def _violation(problems: list[str]) -> ContractViolation:
    summary = f"{len(problems)} problem(s) in the generated test files: " + "; ".join(problems)
    return ContractViolation(summary, problems=problems)


def _show(value: Any, limit: int = 120) -> str:
    """Quoted, truncated and ASCII-escaped: no control characters or look-alikes reach a log."""
    text = value if isinstance(value, str) else repr(value)
    return json.dumps(text if len(text) <= limit else text[:limit] + "...")


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _type_problems(path: str, framework: str) -> list[str]:
    name = path.rsplit("/", 1)[-1]
    suffixes = EXTENSIONS[framework]
    if not any(name.endswith(s) and len(name) > len(s) for s in suffixes):
        return [f"{WRONG_EXTENSION}; {framework} files must be named *{' or *'.join(suffixes)}"]
    if framework == "maestro" and name.casefold() in ("config.yaml", "config.yml"):
        return [f"{RESERVED_NAME}; choose another flow name"]
    return []


def _clash_problems(paths: dict[str, str]) -> list[str]:
    """A path that is also another file's directory cannot exist in one git tree."""
    folded = {path.casefold(): shown for path, shown in paths.items()}
    problems = []
    for path, shown in paths.items():
        parts = path.casefold().split("/")
        for depth in range(1, len(parts)):
            if parent := folded.get("/".join(parts[:depth])):
                problems.append(f"{parent}: {FILE_DIRECTORY_CLASH} ({shown} is inside it)")
    return problems


# --- Playwright ---------------------------------------------------------------------------


def _playwright_problems(source: str) -> list[str]:
    root = tree_sitter.Parser(TYPESCRIPT).parse(source.encode("utf-8")).root_node
    broken, imports, tests, only = [], False, False, False
    stack = [root]
    while stack:  # iterative: deeply nested model output must not exhaust Python's stack
        node = stack.pop()
        if node.is_error or node.is_missing:
            what = f"missing {node.type!r}" if node.is_missing else "syntax error"
            broken.append(f"{what} at line {node.start_point[0] + 1}:{node.start_point[1] + 1}")
            continue
        if node.type == "import_statement" and node.parent == root:
            imports = imports or _imports_playwright(node)
        elif node.type == "call_expression":
            names = _callee_names(node.child_by_field_name("function"))
            if names[:1] == ["test"]:
                tests = tests or names[1:2] in ([], ["describe"], ["fixme"], ["skip"], ["fail"])
                only = only or "only" in names
        stack.extend(reversed(node.children))
    problems = []
    if broken or root.has_error:
        where = ", ".join(broken[:3]) or "syntax error"
        problems.append(f"{TS_SYNTAX_ERROR} ({where}); the spec must be valid TypeScript")
    if not imports:
        problems.append(f"{TS_NO_IMPORT}; add `import {{ test, expect }} from '@playwright/test'`")
    if not tests:
        problems.append(f"{TS_NO_TEST}; a spec file must declare at least one test")
    if only:
        problems.append(f"{TS_ONLY}; remove .only")
    return problems


def _imports_playwright(statement: tree_sitter.Node) -> bool:
    """A value import (`import type` brings no `test`) whose source is '@playwright/test'."""
    if any(child.type == "type" for child in statement.children):
        return False
    source = statement.child_by_field_name("source")
    return source is not None and source.text.decode()[1:-1] == "@playwright/test"


def _callee_names(node: tree_sitter.Node | None) -> list[str]:
    """`test.describe.serial` -> ["test", "describe", "serial"]; [] for anything else."""
    names = []
    while node is not None and node.type == "member_expression":
        names.append(node.child_by_field_name("property").text.decode())
        node = node.child_by_field_name("object")
    if node is None or node.type != "identifier":
        return []
    return [node.text.decode(), *reversed(names)]


# --- Maestro ------------------------------------------------------------------------------


def _maestro_problems(text: str) -> list[str]:
    try:
        problems = _yaml_shape_problems(text)
        documents = [] if problems else list(yaml.load_all(text, Loader=_YAML_LOADER))
    except (yaml.YAMLError, ValueError) as error:  # ValueError: dates such as 2001-02-30
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = _show(getattr(error, "problem", None) or str(error))[1:-1]
        return [f"{YAML_SYNTAX_ERROR} ({what}{where}); write plain YAML"]
    if problems:
        return problems
    if len(documents) != 2:
        problems.append(f"{MAESTRO_DOCUMENTS}; found {len(documents)} document(s)")
    problems += _maestro_config_problems(documents[0] if documents else None)
    commands = documents[1] if len(documents) > 1 else None
    if not isinstance(commands, list) or not commands:
        problems.append(f"{MAESTRO_NO_COMMANDS}; the second document lists the flow's steps")
    else:
        problems += _maestro_command_problems(commands, "commands")
    return problems


def _yaml_shape_problems(text: str) -> list[str]:
    """Refuses alias bombs and deep nesting from the event stream, before anything is built."""
    # Without aliases the number of nodes is bounded by the file size, which is capped already.
    depth = 0
    for event in yaml.parse(text, Loader=_YAML_LOADER):
        line = f"line {event.start_mark.line + 1}"
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            return [f"{YAML_ALIAS} ({line}); write the value out instead"]
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                return [f"{YAML_TOO_DEEP} ({line}); flatten the flow"]
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    return []


def _maestro_config_problems(config: Any) -> list[str]:
    if not isinstance(config, dict):
        return [f"{MAESTRO_NO_APP_ID}; the first document must be a mapping like `appId: com.x`"]
    problems = []
    if not isinstance(config.get("appId"), str) or not config["appId"].strip():
        problems.append(f"{MAESTRO_NO_APP_ID}; add `appId: <bundle or package id>`")
    allowed = "appId (string), name (string), tags (list), env (mapping), onFlowStart/Complete"
    for key, value in config.items():
        if key in MAESTRO_HOOKS and isinstance(value, list):
            problems += _maestro_command_problems(value, key)
        elif key != "appId" and not isinstance(value, MAESTRO_CONFIG_KEYS.get(key, ())):
            problems.append(f"{MAESTRO_CONFIG_KEY} ({_show(key)}); allowed keys: {allowed}")
    return problems


def _maestro_command_problems(commands: list, where: str) -> list[str]:
    problems: list[str] = []
    unknown: list[str] = []
    _walk_commands(commands, where, problems, unknown)
    if unknown:
        allowed = ", ".join(sorted(MAESTRO_COMMANDS))
        found = ", ".join(unknown)
        problems.append(f"{MAESTRO_UNKNOWN_COMMAND} {found}; known commands: {allowed}")
    return problems


def _walk_commands(commands: list, where: str, problems: list[str], unknown: list[str]) -> None:
    for index, command in enumerate(commands):
        at = f"{where}[{index}]"
        if isinstance(command, dict) and len(command) == 1:
            ((name, argument),) = command.items()
        elif isinstance(command, str):
            name, argument = command, None
        else:
            problems.append(f"{MAESTRO_NOT_A_COMMAND} at {at}")
            continue
        if name not in MAESTRO_COMMANDS:
            unknown.append(f"{_show(name, 60)} at {at}")
        elif argument is None and name not in MAESTRO_BARE_COMMANDS:
            problems.append(f"{MAESTRO_NEEDS_ARGUMENTS} ({name!r} at {at}); write `{name}: ...`")
        elif name in MAESTRO_NESTING_COMMANDS and isinstance(argument, dict):
            nested = argument.get("commands")
            if isinstance(nested, list) and nested:
                _walk_commands(nested, f"{at}.{name}.commands", problems, unknown)
            elif "commands" in argument:
                problems.append(f"{MAESTRO_NO_COMMANDS} ({at}.{name}.commands)")
