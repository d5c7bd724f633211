"""Where each generated test goes: its navigations, read from the Playwright specs and Maestro
flows the pull request gets (``verification.coverage`` matches them to routes).

Only literal targets count: ``page.goto('/notes')``, ``request.post("/api/notes")``, a template
``\\`/notes/${id}\\``` (a substitution stands for a sample value), ``openLink: app://notes/1``.
A write (``post``/``put``/``patch``/``delete`` through an API client) also records whether its
options carry a body and an ``Authorization`` header: ``verification.coverage`` does not count a write
that could not have reached the handler's work.
Navigations in hooks (``beforeEach``) belong to every test of their file. Files are untrusted:
bounded in number and size, and a flow that does not parse adds no navigation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from agents import spec_blocks

MAX_FILES = 200
MAX_FILE_CHARS = 200_000
MAX_TARGETS = 100  # per test
MAX_FLOW_DEPTH = 4  # runFlow / repeat / retry nesting read in a flow
QUARANTINED = {"fixme": "quarantined", "skip": "skipped"}  # test.fixme(...) / test.skip(...)

_SPEC = (".ts", ".tsx", ".js", ".mjs", ".cjs")
_FLOW = (".yaml", ".yml")
_NAV = re.compile(
    r"(\w+)\s*\??\.\s*(goto|get|post|put|patch|delete|head|fetch)\s*\(\s*"
    r"(?:'([^'\\\n]{0,600})'|\"([^\"\\\n]{0,600})\"|`([^`\\]{0,600})`)"
)
_API_CLIENT = re.compile(r"(?i)request|api|context|client")
_WRITES = frozenset({"post", "put", "patch", "delete"})
_BODY = re.compile(r"\b(?:data|form|multipart)\s*:(?!\s*(?:\{\s*\}|''|\"\"|null\b|undefined\b))")
_AUTH = re.compile(r"(?i)\bauthorization\b|\bstorageState\b|\bhttpCredentials\b")
OPTIONS_CHARS = 600  # of a call's options read after its target
_LEADING_SUB = re.compile(r"^\$\{[^}]*\}")
_SUB = re.compile(r"\$\{[^}]*\}")


@dataclass
class Test:
    title: str
    file: str
    status: str = ""  # the report's status once verified; quarantined/skipped for fixme/skip
    targets: list[str] = field(default_factory=list)
    mobile: bool = False
    launches: bool = False  # a flow that launches the app shows its first screen
    taps: set[str] = field(default_factory=set)  # texts a flow taps (tab labels, titles)
    writes: dict[str, Write] = field(default_factory=dict)  # by target


@dataclass(frozen=True)
class Write:
    verb: str  # POST, PUT, PATCH, DELETE
    body: bool  # its options carry a non-empty data/form/multipart
    auth: bool  # its options (or the test's file) carry credentials


def tests_of(code: dict | None, report: dict | None) -> list[Test]:
    """The tests the pull request gets: the report's files (healed, quarantined, dropped
    applied) when there is a report with files, else the Test Engineer's; each with its
    status in the report when the tests were verified."""
    files = (report or {}).get("files") or (code or {}).get("files") or []
    statuses: dict[tuple[str, str], str] = {}
    if report and report.get("status") == "verified":
        for test in report.get("tests") or []:
            if isinstance(test, dict):
                key = (str(test.get("file")), str(test.get("title")))
                statuses[key] = str(test.get("status"))
    out: list[Test] = []
    for entry in files[:MAX_FILES] if isinstance(files, list) else []:
        if not isinstance(entry, dict):
            continue
        path, text = entry.get("path"), entry.get("contents")
        if not isinstance(path, str) or not isinstance(text, str):
            continue
        text = text[:MAX_FILE_CHARS]
        if path.endswith(_FLOW):
            found = [_flow(path, text)]
        elif path.endswith(_SPEC):
            found = _spec(path, text)
        else:
            continue
        for test in found:
            if statuses and not test.status:  # verified: what the report says (not run: absent)
                test.status = statuses.get((path, test.title), "absent")
        out += found
    return out


def targets(text: str) -> list[str]:
    """The literal navigation targets in a piece of a spec, in order."""
    return [target for target, _ in navigations(text)]


def navigations(text: str) -> list[tuple[str, Write | None]]:
    """Each literal navigation target in a piece of a spec, in order, with what a write
    carries (None for a read)."""
    found: list[tuple[str, Write | None]] = []
    for match in _NAV.finditer(text):
        receiver, verb = match.group(1), match.group(2)
        if verb != "goto" and not _API_CLIENT.search(receiver):
            continue  # headers.get('x'), map.get('/y'): not a request
        single, double, template = match.group(3, 4, 5)
        target = single if single is not None else double
        if target is None:
            target = _SUB.sub("1", _LEADING_SUB.sub("", template or ""))
        write = None
        if verb in _WRITES:
            options = _options(text, match.end())
            write = Write(verb.upper(), bool(_BODY.search(options)), bool(_AUTH.search(options)))
        found.append((target, write))
        if len(found) >= MAX_TARGETS:
            break
    return found


def _options(text: str, start: int) -> str:
    """The rest of a call's arguments after its target: up to its closing parenthesis."""
    depth, end = 0, min(len(text), start + OPTIONS_CHARS)
    for i in range(start, end):
        char = text[i]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return text[start:i]
            depth -= 1
    return text[start:end]


def _spec(path: str, text: str) -> list[Test]:
    blocks = spec_blocks.blocks(text)
    data = text.encode("utf-8")
    hooks, last = [], 0
    for block in blocks:
        hooks.append(data[last : block.start].decode("utf-8", "replace"))
        last = max(last, block.end)
    shared = navigations("\n".join([*hooks, data[last:].decode("utf-8", "replace")]))
    # Credentials set for the whole file (test.use, a header built once) hold for its writes.
    file_auth = bool(_AUTH.search(text))
    tests = []
    for block in blocks:
        found = (shared + navigations(block.text))[:MAX_TARGETS]
        test = Test(block.title, path, QUARANTINED.get(block.modifier, ""), [t for t, _ in found])
        for target, write in found:
            if write is not None and target not in test.writes:
                test.writes[target] = Write(write.verb, write.body, write.auth or file_auth)
        tests.append(test)
    return tests


def _flow(path: str, text: str) -> Test:
    test = Test(title=path.rsplit("/", 1)[-1], file=path, mobile=True)
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return test
    commands = documents[-1] if documents else None
    config = documents[0] if len(documents) > 1 else None
    if isinstance(config, dict) and isinstance(config.get("name"), str):
        test.title = config["name"][:1000]
    _commands(test, commands, 0)
    return test


def _commands(test: Test, commands: object, depth: int) -> None:
    if not isinstance(commands, list) or depth > MAX_FLOW_DEPTH:
        return
    for command in commands[:1000]:
        name, value = (command, None) if isinstance(command, str) else (None, None)
        if isinstance(command, dict) and len(command) == 1:
            name, value = next(iter(command.items()))
        if name == "launchApp":
            test.launches = True
        elif name == "openLink":
            link = value.get("link") if isinstance(value, dict) else value
            if isinstance(link, str) and len(test.targets) < MAX_TARGETS:
                test.targets.append(link)
        elif name == "tapOn":
            text = value.get("text") if isinstance(value, dict) else value
            if isinstance(text, str):
                test.taps.add(text.replace("\\", "").strip())
        elif isinstance(value, dict):  # runFlow, repeat, retry: their own commands
            _commands(test, value.get("commands"), depth + 1)
