"""The tests inside a Playwright spec, located with tree-sitter: what healing and quarantine edit.

A test is a ``test(title, fn)`` call (or ``test.fixme``/``.skip``/``.fail``/``.only``) whose
title is a string literal. Playwright reports each test with the line its call starts on, so
``TestBlock.line`` is how a report entry finds its block. Edits are byte splices on the
source: nothing else in the file is reformatted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import tree_sitter

from agents.file_policy import TYPESCRIPT, _callee_names

TEST_MODIFIERS = ("fixme", "skip", "fail", "only", "slow")


@dataclass(frozen=True)
class TestBlock:
    __test__ = False  # not a pytest class

    title: str
    line: int  # 1-based line of the call, as Playwright reports it
    modifier: str  # "" for plain test(...), else fixme/skip/fail/only/slow
    text: str  # the whole statement
    start: int  # byte offsets of the statement
    end: int
    callee: tuple[int, int]  # byte offsets of the callee (`test` or `test.fixme`)


def _title(node: tree_sitter.Node | None) -> str | None:
    """The value of a string literal (or a template without substitutions), else None."""
    if node is None:
        return None
    raw = node.text.decode("utf-8")
    if node.type == "template_string" and not any(
        c.type == "template_substitution" for c in node.children
    ):
        return raw[1:-1]
    if node.type != "string":
        return None
    body = raw[1:-1]
    if raw[0] == "'":
        body = body.replace('\\"', '"').replace('"', '\\"').replace("\\'", "'")
    try:
        return json.loads(f'"{body}"')
    except ValueError:
        return body


def _statement(node: tree_sitter.Node) -> tree_sitter.Node:
    parent = node.parent
    return parent if parent is not None and parent.type == "expression_statement" else node


def blocks(source: str) -> list[TestBlock]:
    """Every test in ``source`` whose title is a literal, in source order."""
    return _walk(source)[0]


def dynamic_lines(source: str) -> set[int]:
    """The lines of the tests whose title is not a literal (a loop's template: one call, as
    many tests as the loop makes, all reported on its line)."""
    return _walk(source)[1]


def _walk(source: str) -> tuple[list[TestBlock], set[int]]:
    data = source.encode("utf-8")
    root = tree_sitter.Parser(TYPESCRIPT).parse(data).root_node
    found, dynamic = [], set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            names = _callee_names(callee)
            args = node.child_by_field_name("arguments")
            named = [c for c in args.named_children] if args is not None else []
            title = _title(named[0]) if named else None
            is_test = names[:1] == ["test"] and (
                len(names) == 1 or (len(names) == 2 and names[1] in TEST_MODIFIERS)
            )
            if is_test and title is None and len(named) >= 2:
                dynamic.add(node.start_point[0] + 1)
            if is_test and title is not None and len(named) >= 2:
                statement = _statement(node)
                found.append(
                    TestBlock(
                        title=title,
                        line=node.start_point[0] + 1,
                        modifier=names[1] if len(names) == 2 else "",
                        text=data[statement.start_byte : statement.end_byte].decode("utf-8"),
                        start=statement.start_byte,
                        end=statement.end_byte,
                        callee=(callee.start_byte, callee.end_byte),
                    )
                )
                continue
        stack.extend(reversed(node.children))
    return sorted(found, key=lambda b: b.start), dynamic


def find(source: str, *, title: str, line: int | None = None) -> TestBlock | None:
    """The test titled ``title`` (on ``line`` when given and it matches one)."""
    candidates = [b for b in blocks(source) if b.title == title]
    if line is not None:
        exact = [b for b in candidates if b.line == line]
        candidates = exact or candidates
    return candidates[0] if len(candidates) == 1 or line is not None and candidates else None


def _line_start(data: bytes, offset: int) -> int:
    return data.rfind(b"\n", 0, offset) + 1


def _comment(reason: str) -> str:
    return " ".join(reason.split())[:300].replace("*/", "* /")


def mark_fixme(source: str, block: TestBlock, reason: str) -> str:
    """``source`` with ``block`` turned into ``test.fixme(...)`` under a comment giving the
    reason: Playwright reports it as skipped, and the reviewer reads why."""
    data = source.encode("utf-8")
    head = _line_start(data, block.start)
    indent = data[head : block.start].decode("utf-8")
    indent = indent if not indent.strip() else ""
    note = f"// AMTP quarantined: {_comment(reason)}\n{indent}".encode()
    out = data[: block.callee[0]] + b"test.fixme" + data[block.callee[1] :]
    out = out[: block.start] + note + out[block.start :]
    return out.decode("utf-8")


def drop(source: str, block: TestBlock) -> str:
    """``source`` without ``block`` (and the blank line it leaves)."""
    data = source.encode("utf-8")
    start = _line_start(data, block.start)
    end = block.end
    if data[end : end + 1] == b"\n":
        end += 1
    out = data[:start] + data[end:]
    return re.sub(r"\n{3,}", "\n\n", out.decode("utf-8"))
