"""Maestro flow writer for the offline Test Engineer (one flow file per test case)."""

from __future__ import annotations

import json
import re

import yaml

from .common import HEADER, one_line, slug

# The commands this writer may emit; all are real Maestro commands.
COMMANDS = (
    "launchApp",
    "waitForAnimationToEnd",
    "openLink",
    "tapOn",
    "inputText",
    "scroll",
    "back",
    "assertVisible",
    "assertNotVisible",
    "takeScreenshot",
)
_APP_ID = re.compile(r"^[A-Za-z][\w]*(\.[A-Za-z0-9_]+)+$")
_QUOTED = r'("(?:[^"\\]|\\.)*")'
_LINK = re.compile(r"^[a-z][a-z0-9+.\-]*://[\w\-./%~?=&]*$")
_CRASH = ".*(has stopped|keeps stopping|isn't responding).*"
_REGEX_META = re.compile(r"([.\\^$|?*+()\[\]{}])")


def _text(quoted: str, regex: bool = True) -> str | None:
    """A JSON-quoted text from a step → Maestro text; selectors are regexes, so escape those."""
    try:
        value = json.loads(quoted, strict=False)
    except ValueError:  # a malformed quote is dropped, not a crash
        return None
    value = one_line(value, 120) if isinstance(value, str) else ""
    if not value:
        return None
    return _REGEX_META.sub(r"\\\1", value) if regex else value


def _command(step: str) -> object | None:
    """One step of the case grammar → one Maestro command, or None if not applicable."""
    if re.match(r"^Launch the app with a clean state", step, re.I):
        return {"launchApp": {"clearState": True}}
    if re.match(r"^(Launch|Start|Open) the app\b", step, re.I):
        return "launchApp"
    if re.match(r"^Wait for animations to end", step, re.I):
        return "waitForAnimationToEnd"
    if (m := re.match(r"^Open deep link (\S+)\s*$", step, re.I)) and _LINK.match(m.group(1)):
        return {"openLink": m.group(1)}
    if (m := re.match(rf"^Tap(?: on)? {_QUOTED}\s*$", step, re.I)) and _text(m.group(1)):
        return {"tapOn": _text(m.group(1))}
    if (m := re.match(rf"^Type {_QUOTED}", step, re.I)) and (typed := _text(m.group(1), False)):
        return {"inputText": typed}
    if re.match(r"^Scroll down", step, re.I):
        return "scroll"
    if re.match(r"^Go back", step, re.I):
        return "back"
    if m := re.match(r"^Take a screenshot named (\w+)", step, re.I):
        return {"takeScreenshot": slug(m.group(1), 80) or "screenshot"}
    return None


def _assertions(expected: str) -> list[object]:
    out: list[object] = []
    for quoted in re.findall(rf"{_QUOTED} is visible", expected):
        if text := _text(quoted):
            out.append({"assertVisible": text})
    if "crash" in expected.lower():
        out.append({"assertNotVisible": _CRASH})
    return out


def _dump(command: object) -> str:
    return yaml.safe_dump([command], default_flow_style=False, sort_keys=False, width=1000)


def _case_commands(case: dict, cid: str) -> list[tuple[str, object | None]]:
    """(comment, command) pairs for one case: its steps, then its checks before the screenshot."""
    steps = [str(s) for s in case.get("steps") or []]
    expected = str(case.get("expected") or "")
    body: list[tuple[str, object | None]] = [(f"Step: {s}", _command(s)) for s in steps]
    if not any(c == "launchApp" or (isinstance(c, dict) and "launchApp" in c) for _, c in body):
        body.insert(0, ("Step: Launch the app", "launchApp"))
    checks = _assertions(expected)
    if not any(c for _, c in body[1:]) and not checks:
        body.append(("Step: Wait for the first screen", "waitForAnimationToEnd"))
    # Assertions go before a trailing screenshot so the picture shows the checked state.
    last = body[-1][1]
    tail = body.pop() if isinstance(last, dict) and "takeScreenshot" in last else None
    body += [("Check: the expected outcome above", c) for c in checks]
    body.append(tail or ("Step: Keep a screenshot for the reviewer", {"takeScreenshot": cid}))
    return body


def maestro_flow(cases: list[tuple[str, dict]], app_id: str | None) -> str:
    """A Maestro flow (config document, `---`, commands) running the given cases in order."""
    app = app_id if isinstance(app_id, str) and _APP_ID.match(app_id) else "${APP_ID}"
    first_id, first = cases[0]
    lines = [
        f"# {HEADER}.",
        "# Rule-generated from the repository's screens; no LLM wrote this flow.",
    ]
    if app == "${APP_ID}":
        lines.append("# The app id was not detected: run with `maestro test -e APP_ID=<id>`.")
    title = one_line(first.get("title") or first_id, 200)
    priorities = [one_line(c.get("priority") or "unspecified", 20) for _, c in cases]
    config = {"appId": app, "name": f"{first_id}: {title}"}
    config["tags"] = ["amtp", *dict.fromkeys(priorities)]
    text = "\n".join(lines) + "\n" + yaml.safe_dump(config, sort_keys=False, width=1000)
    text += "---\n"
    for cid, case in cases:
        text += f"\n# Case {cid} ({one_line(case.get('priority', 'unspecified'), 20)}): "
        text += one_line(case.get("title") or cid, 200) + "\n"
        text += "".join(f"# Precondition: {one_line(p)}\n" for p in case.get("preconditions") or [])
        text += f"# Expected: {one_line(case.get('expected') or '', 300)}\n"
        for comment, command in _case_commands(case, cid):
            if command is None:
                text += (
                    f"# Not applicable to a mobile flow (kept for review): {one_line(comment)}\n"
                )
            else:
                text += f"# {one_line(comment)}\n" + _dump(command)
    return text
