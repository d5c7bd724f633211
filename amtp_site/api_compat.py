"""Breaking changes between two OpenAPI documents of the API, and whether the CHANGELOG
announces them (docs/releasing.md, "The API").

A client written against the old document breaks when, in the new one:

- an operation (path and method) or a success response status is gone;
- a response loses a field, or a field it always had becomes optional;
- an enum (request or response) loses a value;
- a request gains a required field or parameter, or one becomes required;
- a type changes: a response may now give a type it did not, or a request no longer accepts
  a type it did (``null`` counts: a response field that becomes nullable breaks).

Anything else (a new operation, response field, optional request field, enum value, wider
request type) is an addition. Each break names its operation (``GET /api/runs/{run_id}``)
and, inside it, where (``200 cost.cost_usd``, ``body repo_full_name``, ``query cursor``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
RELEASE_DOCUMENT = re.compile(r"^openapi-(\d+)\.(\d+)\.(\d+)\.json$")


@dataclass(frozen=True)
class Break:
    operation: str  # "GET /api/runs/{run_id}"
    where: str  # "200 stages[].status", "body kind", "query cursor", "" (the operation)
    what: str  # "removed", "enum value 'x' removed", ...

    def __str__(self) -> str:
        return f"{self.operation}{' ' + self.where if self.where else ''}: {self.what}"


def breaking_changes(old: dict, new: dict) -> list[Break]:
    """Every break of ``old``'s clients in ``new``, in path order."""
    breaks: list[Break] = []
    for path, old_ops in old.get("paths", {}).items():
        new_ops = new.get("paths", {}).get(path, {})
        for method in (m for m in METHODS if m in old_ops):
            operation = f"{method.upper()} {path}"
            if method not in new_ops:
                breaks.append(Break(operation, "", "removed"))
                continue
            walk = _Walk(old, new, operation, breaks)
            walk.operation(old_ops[method], new_ops[method])
    return breaks


def release_documents(folder: Path) -> list[Path]:
    """The committed release documents (``openapi-X.Y.Z.json``), oldest first."""
    found = []
    for path in folder.glob("openapi-*.json"):
        if match := RELEASE_DOCUMENT.match(path.name):
            found.append((tuple(map(int, match.groups())), path))
    return [path for _, path in sorted(found)]


def newest_release(folder: Path) -> dict:
    documents = release_documents(folder)
    if not documents:
        raise FileNotFoundError(f"no openapi-X.Y.Z.json in {folder}")
    return json.loads(documents[-1].read_text())


def announced_breaks(changelog: str) -> list[str]:
    """The bullets under ``### Breaking`` in ``## [Unreleased]``, each with its continuation
    lines joined."""
    unreleased = re.search(r"^## \[Unreleased\][^\n]*\n(.*?)(?=^## |\Z)", changelog, re.M | re.S)
    if not unreleased:
        return []
    section = re.search(r"^### Breaking[^\n]*\n(.*?)(?=^### |\Z)", unreleased[1], re.M | re.S)
    if not section:
        return []
    bullets = re.split(r"^- ", section[1], flags=re.M)[1:]
    return [" ".join(bullet.split()) for bullet in bullets]


def is_announced(brk: Break, bullets: list[str]) -> bool:
    """A bullet names the operation (``GET /api/runs/{run_id}``) and, when the break is inside
    it, the field or parameter as the break names it (``stages[].status``, ``cursor``)."""
    field = brk.where.split(" ", 1)[1] if " " in brk.where else ""
    return any(brk.operation in b and (not field or f"`{field}`" in b) for b in bullets)


class _Walk:
    """One operation of both documents, compared; breaks appended to ``breaks``."""

    def __init__(self, old: dict, new: dict, operation: str, breaks: list[Break]) -> None:
        self.docs = (old, new)
        self.op = operation
        self.breaks = breaks

    def add(self, where: str, what: str) -> None:
        self.breaks.append(Break(self.op, where, what))

    def operation(self, old: dict, new: dict) -> None:
        self.parameters(old.get("parameters", []), new.get("parameters", []))
        old_body = _content(old.get("requestBody", {}))
        for media, schema in _content(new.get("requestBody", {})).items():
            self.schema(old_body.get(media, {}), schema, "body", request=True, seen=set())
        new_answers = new.get("responses", {})
        for status, answer in old.get("responses", {}).items():
            if status not in new_answers:
                if status.startswith("2"):
                    self.add(status, "response removed")
                continue
            new_content = _content(new_answers[status])
            for media, schema in _content(answer).items():
                if media in new_content:
                    self.schema(schema, new_content[media], status, request=False, seen=set())
                elif status.startswith("2"):
                    self.add(status, f"{media} response removed")

    def parameters(self, old: list[dict], new: list[dict]) -> None:
        before = {(p["in"], p["name"]): p for p in old}
        for param in new:
            where = f"{param['in']} {param['name']}"
            was = before.get((param["in"], param["name"]))
            if param.get("required") and not (was and was.get("required")):
                self.add(where, "new required parameter" if was is None else "became required")
            if was is not None:
                self.schema(was.get("schema", {}), param.get("schema", {}), where, True, set())

    def schema(self, old: dict, new: dict, where: str, request: bool, seen: set) -> None:
        """Compare two schemas at ``where``: a request's (what a client sends) or a
        response's (what a client reads). An empty old schema (a new body) accepts nothing."""
        old, new, key = self.resolve(old, 0), self.resolve(new, 1), (id(old), id(new))
        if key in seen:
            return
        seen = seen | {key}
        old_types, new_types = self.types(old, 0), self.types(new, 1)
        if old_types and new_types:
            # What a client may meet that it did not: a type its request is refused for now,
            # or one a response may now give.
            wider, narrower = (new_types, old_types) if request else (old_types, new_types)
            unmet = narrower - wider - ({"integer"} if "number" in wider else set())
            if unmet:
                self.add(where, f"type {_shown(old_types)} -> {_shown(new_types)}")
        old_enum, new_enum = self.enum(old, 0), self.enum(new, 1)
        for value in sorted(old_enum - new_enum) if new_enum else ():
            self.add(where, f"enum value {value} removed")
        self.properties(old, new, where, request, seen)
        old_items, new_items = self.single(old, 0).get("items"), self.single(new, 1).get("items")
        if old_items and new_items:
            self.schema(old_items, new_items, _join(where, "[]"), request, seen)

    def properties(self, old: dict, new: dict, where: str, request: bool, seen: set) -> None:
        old, new = self.single(old, 0), self.single(new, 1)
        old_props, new_props = old.get("properties", {}), new.get("properties", {})
        old_required, new_required = set(old.get("required", [])), set(new.get("required", []))
        if request:
            for name in sorted(new_required - old_required):
                what = "became required" if name in old_props else "new required field"
                self.add(_join(where, name), what)
        else:
            for name in old_props:
                if name not in new_props:
                    self.add(_join(where, name), "field removed")
                elif name in old_required and name not in new_required:
                    self.add(_join(where, name), "no longer always present")
        for name in old_props.keys() & new_props.keys():
            self.schema(old_props[name], new_props[name], _join(where, name), request, seen)

    def resolve(self, schema: dict, side: int) -> dict:
        for _ in range(20):  # a chain of references, bounded
            ref = schema.get("$ref", "")
            if not ref.startswith("#/"):
                return schema
            target = self.docs[side]
            for part in ref[2:].split("/"):
                target = target.get(part, {})
            schema = target
        return schema

    def single(self, schema: dict, side: int) -> dict:
        """The schema, or its one non-null alternative (``Optional[X]`` is ``anyOf: [X, null]``)."""
        schema = self.resolve(schema, side)
        options = [
            self.resolve(s, side)
            for s in schema.get("anyOf", schema.get("oneOf", []))
            if s.get("type") != "null"
        ]
        return options[0] if len(options) == 1 else schema

    def enum(self, schema: dict, side: int) -> set[str]:
        """The values (as JSON) an enum allows, the null of ``Optional`` aside; empty: any."""
        values = self.single(schema, side).get("enum", [])
        return {json.dumps(value) for value in values}

    def types(self, schema: dict, side: int) -> set[str]:
        """The JSON types a schema allows; empty when it does not say (any)."""
        schema = self.resolve(schema, side)
        if "type" in schema:
            kinds = schema["type"]
            return set(kinds) if isinstance(kinds, list) else {kinds}
        options = schema.get("anyOf", schema.get("oneOf"))
        if options:
            found = [self.types(s, side) for s in options]
            return set().union(*found) if all(found) else set()
        if "enum" in schema:
            return {_json_type(v) for v in schema["enum"]}
        if "properties" in schema:
            return {"object"}
        return set()


def _content(holder: dict) -> dict:
    return {media: body.get("schema", {}) for media, body in holder.get("content", {}).items()}


def _json_type(value) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(
        type(value), "object"
    )


def _join(where: str, name: str) -> str:
    head, _, field = where.partition(" ")
    if name == "[]":
        return f"{head} {field}[]" if field else f"{head} []"
    return f"{head} {field}.{name}" if field else f"{head} {name}"


def _shown(types: set[str]) -> str:
    return "|".join(sorted(types))
