"""The two validators behind ``schemas.validate`` must agree on every document.

``jsonschema-rs`` gives the verdict and Python's ``jsonschema`` the error list. The corpus is built
from a valid instance of each contract by mutating every value it contains. Mutations include
wrong types, missing required keys, unknown keys, empty, overlong and hostile strings, bad
formats and out-of-range numbers. A test then checks that the corpus breaks every validation
keyword each schema uses, so "they agree" covers each rule.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

import schemas
from tests.contract_examples import VALID

# Keywords that constrain (the rest are annotations or structure).
RULES = {
    "type",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "pattern",
    "format",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "uniqueItems",
}

HOSTILE_STRINGS = [
    "",
    " ",
    "\x00",
    "a\nb",
    "../../etc/passwd",
    "x" * 100_000,
    "é" * 300,
    "\u202e\u0000",
    "not-a-uuid",
    "3f2b8c1e-9a4d-4e6f-8b21-5c7d9e0f1a2",  # one digit short of a uuid
    "2024-13-45T25:61:61Z",  # not a date-time
    "2024-01-15T10:30:00",  # date-time without an offset
    "http://",
    "ftp://example.com/x",
    "A" * 40,
    "g" * 40,
]
WRONG_VALUES = [None, True, 0, -1, 1.5, 10**20, "text", [], {}, [None], {"x": 1}]


def _examples() -> dict[str, Any]:
    found = dict(VALID)
    context = copy.deepcopy(schemas.load("context/workflow_context")["examples"][0])
    context["test_results"] = {
        "total": 3,
        "passing": 2,
        "failing": 1,
        "coverage": {"line": 50.5, "branch": 40, "function": 60},
    }
    found["context/workflow_context"] = context
    return found


def _paths(node: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*path, index))


def _replaced(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return copy.deepcopy(value)
    new = copy.deepcopy(doc)
    parent = new
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = copy.deepcopy(value)
    return new


def _at(doc: Any, path: tuple) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _mutations(doc: Any) -> Iterator[Any]:
    for path in _paths(doc):
        current = _at(doc, path)
        for value in [*WRONG_VALUES, *HOSTILE_STRINGS]:
            yield _replaced(doc, path, value)
        if isinstance(current, dict):
            for key in current:
                yield _replaced(doc, path, {k: v for k, v in current.items() if k != key})
            yield _replaced(doc, path, {**current, "unexpected": 1})
        if isinstance(current, list):
            yield _replaced(doc, path, [])
            yield _replaced(doc, path, current + current)  # duplicates
            yield _replaced(doc, path, current * 60)  # too many
            if current:
                yield _replaced(doc, path, current[:1])
        if isinstance(current, int | float) and not isinstance(current, bool):
            for value in (current + 1, current - 1, -(10**9), 10**9):
                yield _replaced(doc, path, value)


def _corpus(name: str) -> list[Any]:
    example = _examples()[name]
    return [example, *_mutations(example)]


def _rules_in(schema: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("examples", "description", "title", "default", "if"):
                continue  # annotations, and "if" (a condition, not a rule to break)
            if key in RULES:
                found.add(key)
            if key == "properties":
                for sub in value.values():
                    found |= _rules_in(sub)
            else:
                found |= _rules_in(value)
    elif isinstance(schema, list):
        for item in schema:
            found |= _rules_in(item)
    return found


NAMES = sorted(_examples())


@pytest.mark.parametrize("name", NAMES)
def test_both_validators_agree_on_every_document(name):
    disagreements = []
    for doc in _corpus(name):
        fast = schemas.is_valid(name, doc)
        python = not schemas.violations(name, doc)
        if fast != python:
            disagreements.append((fast, python, json.dumps(doc)[:300]))
    assert disagreements == []


@pytest.mark.parametrize("name", NAMES)
def test_the_corpus_breaks_every_rule_of_the_schema(name):
    broken = {v["rule"] for doc in _corpus(name) for v in schemas.violations(name, doc)}
    assert _rules_in(schemas.load(name)) - broken == set()


def test_validate_on_an_invalid_document_still_lists_every_violation():
    doc = copy.deepcopy(VALID["repo_crawler/output"])
    doc["file_tree"][0]["sha"] = "xyz"
    del doc["cache_hits"]
    with pytest.raises(schemas.SchemaValidationError) as caught:
        schemas.validate("repo_crawler/output", doc)
    assert {(v["path"], v["rule"]) for v in caught.value.violations} == {
        ("$", "required"),
        ("$.file_tree[0].sha", "pattern"),
    }
