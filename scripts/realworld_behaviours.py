"""The behaviours an app's own end-to-end suite checks, and which of them AMTP's passing tests
exercise (scripts/realworld.py; docs/benchmarks.md, "Behaviours of the apps' own suites").

``tests/fixtures/realworld/<app>/behaviours.yaml`` lists, by hand, what each test of the app's
own suite does and asserts, with a matcher:

- ``route``: the page (or API path) the behaviour happens on; ``{name}`` is one segment and a
  ``#/…`` part is a hash route;
- ``act``: the kinds of action, any of ``fill`` (fill, type, pressSequentially), ``press``,
  ``click``, ``dblclick``, ``check`` (check, uncheck, setChecked), ``select`` and
  ``request`` (an API request the test sends), ``blur``, ``reload`` and ``back`` (the
  browser's back button);
- ``target`` (optional): patterns, one of which the action's statement matches (the field, the
  button, the request's body);
- ``expect``: patterns, one of which an assertion after the action matches (the outcome);
- ``echo`` (optional, for what a user creates or changes): that assertion must also name the
  value the test typed (the argument of its last ``fill`` up to the action, a literal or a
  constant; typed with spaces around it, the value is named without them, as an app that
  trims shows it), so asserting a text that was on the page anyway does not count.

A generated test exercises a behaviour only when, in its own code, it opens the route, then acts
on that page (the last page it opened is the route; a request is its own page) as ``act`` and
``target`` say, then asserts with a statement matching ``expect``. Opening a page is never an
action, and assertions that any page load passes (the body is visible, no server error, no
uncaught error, a title) never count, so page-load tests match nothing. Patterns are
case-insensitive regular expressions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

KINDS = {
    "fill": r"\.(?:fill|type|pressSequentially)\(",
    "press": r"\.press\(",
    "click": r"\.click\(",
    "dblclick": r"\.dblclick\(",
    "check": r"\.(?:check|uncheck|setChecked)\(",
    "select": r"\.selectOption\(",
    "request": r"\brequest\.(?:get|post|put|patch|delete|head|fetch)\(",
    "blur": r"\.blur\(|dispatchEvent\(\s*['\"]blur",
    "reload": r"\bpage\.reload\(",
    "back": r"\bpage\.goBack\(",
}
FIELDS = {"id", "description", "route", "act", "target", "expect", "echo"}


@dataclass(frozen=True)
class Behaviour:
    id: str
    description: str
    route: str
    act: tuple[str, ...]
    target: tuple[str, ...]
    expect: tuple[str, ...]
    echo: bool = False


def load(path: Path) -> list[Behaviour]:
    """The behaviours of one ``behaviours.yaml``; a bad entry raises naming its field."""
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or set(data) - {"source", "behaviours", "not_counted"}:
        raise ValueError(f"{path.parent.name}: keys must be source, behaviours, not_counted")
    if not isinstance(data.get("source"), str) or "github.com/" not in data["source"]:
        raise ValueError(f"{path.parent.name}: source must name the suite's repository")
    out = []
    for n, entry in enumerate(data.get("behaviours") or []):
        where = f"{path.parent.name}: behaviours[{n}]"
        if not isinstance(entry, dict) or set(entry) - FIELDS:
            raise ValueError(f"{where}: fields must be among {sorted(FIELDS)}")
        for name in ("id", "description", "route"):
            if not isinstance(entry.get(name), str) or not entry[name].strip():
                raise ValueError(f"{where}: {name} must be a non-empty string")
        if not entry["route"].startswith("/"):
            raise ValueError(f"{where}: route must start with '/'")
        lists = {k: entry.get(k) or [] for k in ("act", "target", "expect")}
        for name, items in lists.items():
            if not isinstance(items, list) or not all(isinstance(i, str) and i for i in items):
                raise ValueError(f"{where}: {name} must be a list of non-empty strings")
            for pattern in items if name != "act" else ():
                try:
                    re.compile(pattern)
                except re.error as error:
                    raise ValueError(f"{where}: {name}: bad pattern {pattern!r}: {error}") from None
        if not lists["act"] or set(lists["act"]) - set(KINDS):
            raise ValueError(f"{where}: act must name one or more of {sorted(KINDS)}")
        if not lists["expect"]:
            raise ValueError(f"{where}: expect must name at least one pattern")
        if not isinstance(entry.get("echo", False), bool):
            raise ValueError(f"{where}: echo must be true or false")
        out.append(
            Behaviour(
                entry["id"],
                entry["description"],
                entry["route"],
                *(tuple(lists[k]) for k in ("act", "target", "expect")),
                entry.get("echo", False),
            )
        )
    if len({b.id for b in out}) != len(out):
        raise ValueError(f"{path.parent.name}: a behaviour id is listed twice")
    return out


def not_counted(path: Path) -> list[dict]:
    """The suite's checks no action can exercise (a page load shows them), listed apart."""
    return yaml.safe_load(path.read_text()).get("not_counted") or []


# Full-line comments: a spec's "// Expected: …" notes are not assertions.
_COMMENT = re.compile(r"(?m)^\s*//.*$")


def _statements(code: str) -> list[str]:
    """The test's statements, in order (a chained call over several lines is one)."""
    code = _COMMENT.sub("", code)
    return [s.strip() for s in re.split(r";\s*(?:\n|$)", code) if s.strip()]


def _route_pattern(route: str) -> re.Pattern:
    path, _, fragment = route.partition("#")
    path = path.rstrip("/") or "/"
    pattern = re.sub(r"\\\{\w+\\\}", "[^/?#]+", re.escape(path))
    tail = re.escape("#" + fragment) if fragment else "(?:#/?)?"
    return re.compile(pattern + "/?(?:\\?[^#]*)?" + tail)


_OPEN = re.compile(
    r"\b(?:page\.goto|request\.(?:get|post|put|patch|delete|head|fetch))\(\s*"
    r"(?P<q>['\"`])(?P<path>/[^'\"`]*)(?P=q)"
)


def _opened(statement: str) -> str | None:
    """The path a statement opens (page.goto or a request), else None."""
    found = _OPEN.search(statement)
    return found["path"] if found else None


_FILLED = re.compile(r"\.(?:fill|type|pressSequentially)\(\s*([^,)]+?)\s*[,)]")
# Spaces typed around a value: after the expression's opening quote, before its closing one,
# then a literal left empty at either end ("'  ' + name + '  '").
_PADDING = re.compile(r"^(['\"`])\s+|\s+(['\"`])$")
_EMPTY_END = re.compile(r"^(['\"`])\1\s*\+\s*|\s*\+\s*(['\"`])\2$")


def exercises(code: str, behaviour: Behaviour) -> bool:
    """Whether one test's code opens the behaviour's route, acts there, then asserts it."""
    route = _route_pattern(behaviour.route)
    kinds = re.compile("|".join(KINDS[k] for k in behaviour.act))
    targets = [re.compile(t, re.IGNORECASE) for t in behaviour.target]
    expects = [re.compile(e, re.IGNORECASE) for e in behaviour.expect]
    statements = _statements(code)
    on_route, typed = False, None
    for n, statement in enumerate(statements):
        path = _opened(statement)
        if path is not None:
            on_route = bool(route.fullmatch(path))
        if filled := _FILLED.search(statement):
            typed = _EMPTY_END.sub("", _PADDING.sub(lambda m: m[1] or m[2], filled[1]))
        if not on_route or "expect(" in statement or not kinds.search(statement):
            continue
        if targets and not any(t.search(statement) for t in targets):
            continue
        if behaviour.echo and not typed:
            continue
        if any(
            _asserts(later, expects, typed if behaviour.echo else None)
            for later in statements[n + 1 :]
        ):
            return True
    return False


# Assertions every loaded page passes: they say nothing about an action's outcome.
_GENERIC = re.compile(
    r"page\.locator\(\s*['\"]body['\"]\s*\)\)\.toBeVisible|toBeLessThan\(\s*500\s*\)"
    r"|uncaught page errors|toHaveTitle\(/\\S/\)|\.ok\(\)\)\.toBeTruthy|not\.toBeUndefined"
)


def _asserts(statement: str, expects: list[re.Pattern], typed: str | None) -> bool:
    """Whether a statement asserts the outcome: a non-generic assertion matching one of
    ``expects`` and, when ``typed`` is given, naming the value typed."""
    if "expect(" not in statement or _GENERIC.search(statement):
        return False
    return any(e.search(statement) for e in expects) and (typed is None or typed in statement)


def exercised(behaviours: list[Behaviour], passing_code: list[str]) -> list[str]:
    """The ids of the behaviours one of the passing tests exercises."""
    return [b.id for b in behaviours if any(exercises(code, b) for code in passing_code)]
