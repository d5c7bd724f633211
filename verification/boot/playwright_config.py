"""The ``webServer`` of a repository's Playwright config, read statically.

The config is the repository's code: it is parsed with tree-sitter (the TypeScript grammar also
reads the JavaScript configs), never run. Values are taken where they are literals, or where
they resolve to one without running anything: a template string whose parts resolve, a
``const`` of the file, ``process.env.X || default`` / ``?? default`` (the default: the worker's
environment is not the repository's). Anything else (a function call, a ternary on ``CI``) is
reported as unreadable by field name, so the user knows which setting to fill in.

https://playwright.dev/docs/api/class-testconfig#test-config-web-server lists the fields:
``command``, ``url``, ``port``, ``cwd``, ``env``, ``reuseExistingServer``, ``timeout``...
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import tree_sitter

from agents.file_policy import TYPESCRIPT, walk

UNREADABLE = object()  # a value that needs the config to run to be known


@dataclass(frozen=True)
class WebServer:
    """One ``webServer`` entry; ``unreadable`` names the fields that are not literals."""

    command: str | None = None
    url: str | None = None
    port: int | None = None
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    unreadable: tuple[str, ...] = field(default=())


def web_servers(source: str) -> list[WebServer]:
    """Every ``webServer`` the config declares (one object, or an array of them), in order."""
    root = tree_sitter.Parser(TYPESCRIPT).parse(source.encode("utf-8")).root_node
    consts = _consts(root)
    for pair in walk(root):
        if pair.type == "pair" and _key(pair) == "webServer":
            value = _unwrap(pair.child_by_field_name("value"))
            value = _unset_branch(value)
            if value is None or value.type in {"undefined", "null"}:
                return []  # no server where the variable is unset
            if value.type == "array":
                objects = [_unwrap(c) for c in value.named_children]
                return [_server(o, consts) for o in objects if o is not None and o.type == "object"]
            if value.type == "object":
                return [_server(value, consts)]
            if value.type == "identifier" and consts.get(value.text.decode()) is not None:
                bound = _unwrap(consts[value.text.decode()])
                if bound is not None and bound.type == "object":
                    return [_server(bound, consts)]
            return [WebServer(unreadable=("webServer",))]
    return []


def _unset_branch(node):
    """``process.env.X ? a : b`` → b (``!process.env.X ? a : b`` → a): the branch taken where
    the variable is unset, as in the box (its environment is not the repository's)."""
    node = _unwrap(node)
    if node is None or node.type != "ternary_expression":
        return node
    test = node.child_by_field_name("condition").text.decode().replace(" ", "")
    if test.startswith("process.env."):
        return _unwrap(node.child_by_field_name("alternative"))
    if test.startswith("!process.env."):
        return _unwrap(node.child_by_field_name("consequence"))
    return node


def _server(node: tree_sitter.Node, consts: dict) -> WebServer:
    values: dict = {}
    unreadable = []
    for pair in node.named_children:
        if pair.type != "pair" or _key(pair) not in {"command", "url", "port", "cwd", "env"}:
            continue
        name, raw = _key(pair), pair.child_by_field_name("value")
        if name == "env":
            env = _env(_unwrap(raw), consts)
            values["env"] = env if env is not UNREADABLE else ()
            if env is UNREADABLE:
                unreadable.append("env")
            continue
        value = _value(raw, consts)
        if value is UNREADABLE or (name == "port" and not isinstance(value, int)):
            unreadable.append(name)
        elif name != "port" and not isinstance(value, str):
            unreadable.append(name)
        else:
            values[name] = value
    return WebServer(**values, unreadable=tuple(unreadable))


def _env(node, consts) -> tuple | object:
    if node is None or node.type != "object":
        return UNREADABLE
    found = []
    for pair in node.named_children:
        value = _value(pair.child_by_field_name("value"), consts) if pair.type == "pair" else None
        if pair.type != "pair" or value is UNREADABLE or isinstance(value, bool):
            return UNREADABLE
        found.append((_key(pair), str(value)))
    return tuple(found)


def _value(node, consts, depth: int = 0):
    """The literal ``node`` stands for, or UNREADABLE."""
    node = _unset_branch(node)
    if node is None or depth > 8:
        return UNREADABLE
    kind = node.type
    if kind == "string":
        return "".join(_text(c) for c in node.named_children)
    if kind == "number":
        text = node.text.decode().replace("_", "")
        return int(text) if text.isdigit() else UNREADABLE
    if kind == "template_string":
        parts = []
        for child in node.named_children:
            if child.type == "string_fragment":
                parts.append(child.text.decode())
            elif child.type == "template_substitution":
                inner = _value(
                    child.named_children[0] if child.named_children else None, consts, depth + 1
                )
                if inner is UNREADABLE:
                    return UNREADABLE
                parts.append(str(inner))
            else:
                parts.append(_text(child))
        return "".join(parts)
    if kind == "identifier" and node.text.decode() in consts:
        return _value(consts[node.text.decode()], consts, depth + 1)
    if kind == "binary_expression" and node.child_by_field_name("operator").type in {"||", "??"}:
        left = _unwrap(node.child_by_field_name("left"))
        if left is not None and left.text.decode().startswith("process.env."):
            return _value(node.child_by_field_name("right"), consts, depth + 1)
    if kind == "call_expression" and node.child_by_field_name("function").text in {
        b"Number",
        b"parseInt",
    }:
        args = node.child_by_field_name("arguments").named_children
        value = _value(args[0], consts, depth + 1) if args else UNREADABLE
        return int(value) if isinstance(value, str) and value.isdigit() else value
    return UNREADABLE


def _text(node: tree_sitter.Node) -> str:
    """A string's fragment, or an escape sequence as the character it stands for."""
    text = node.text.decode()
    if node.type != "escape_sequence":
        return text
    try:  # JSON's escapes are JavaScript's common ones (quote, backslash, n, t, uXXXX)
        return json.loads(f'"{text}"')
    except ValueError:
        return text[1:]  # an escaped quote or letter: the character itself


def _consts(root: tree_sitter.Node) -> dict[str, tree_sitter.Node]:
    """The file's top-level ``const name = value`` bindings (a ``let`` may change: left out)."""
    found = {}
    for statement in root.named_children:
        if statement.type == "export_statement" and statement.named_children:
            statement = statement.named_children[-1]
        if statement.type == "lexical_declaration" and statement.text.startswith(b"const"):
            for declarator in statement.named_children:
                name = declarator.child_by_field_name("name")
                value = declarator.child_by_field_name("value")
                if declarator.type == "variable_declarator" and name is not None and value:
                    found[name.text.decode()] = value
    return found


def _unwrap(node):
    """``x as T``, ``x satisfies T``, ``(x)``, ``x!`` → x."""
    while node is not None and node.type in {
        "as_expression",
        "satisfies_expression",
        "parenthesized_expression",
        "non_null_expression",
    }:
        node = node.named_children[0] if node.named_children else None
    return node


def _key(pair: tree_sitter.Node) -> str:
    key = pair.child_by_field_name("key")
    text = key.text.decode() if key is not None else ""
    return text[1:-1] if key is not None and key.type == "string" else text
