"""The contract JSON Schemas and their validator.

``validate("repo_crawler/output", obj)`` checks ``obj`` against
``schemas/repo_crawler/output.json`` with the dialect its ``$schema`` names (Draft 2020-12 for
the contracts, draft-07 for the multi-agent context document) and format checking (``uuid`` and
``date-time`` really are checked) and raises one :class:`SchemaValidationError` listing every
violation with its JSON path and the rule broken. Each validator is compiled once.

Two validators, one verdict: ``jsonschema-rs`` (Rust) decides valid or invalid, fast enough for
a 100,000-file crawl (docs/benchmarks.md); Python's ``jsonschema`` stays the source of the error
list when a document is invalid, so messages and the repair turn read the same.
``tests/test_schema_parity.py`` runs both over every contract and a corpus of invalid and hostile
documents and requires them to agree.
"""

from __future__ import annotations

import json
import logging
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.validators import validator_for

from schemas.errors import SchemaValidationError

SCHEMA_DIR = Path(__file__).resolve().parent
AGENT_SCHEMAS = tuple(
    f"{agent}/{side}"
    for agent in ("repo_crawler", "test_case_generator", "test_engineer")
    for side in ("input", "output")
)
_MAX_MESSAGE = 300
log = logging.getLogger(__name__)

__all__ = [
    "AGENT_SCHEMAS",
    "SchemaValidationError",
    "compile_all",
    "is_valid",
    "load",
    "schema_id",
    "validate",
    "violations",
]


@cache
def load(name: str) -> dict[str, Any]:
    path = (SCHEMA_DIR / f"{name}.json").resolve()
    if SCHEMA_DIR not in path.parents or not path.is_file():
        raise KeyError(f"unknown schema {name!r}")
    return json.loads(path.read_text())


def schema_id(name: str) -> str:
    return load(name)["$id"]


@cache
def _validator(name: str) -> Draft202012Validator:
    schema = load(name)
    # The dialect its "$schema" names (the contracts are 2020-12; the context document is draft-07).
    cls = validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@cache
def _fast_validator(name: str) -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for(load(name), validate_formats=True)


def compile_all() -> None:
    """Compile both validators of every schema now (the agent process template does, so that
    its children share them instead of compiling their own). Pure, read-only caches."""
    for path in sorted(SCHEMA_DIR.rglob("*.json")):
        name = path.relative_to(SCHEMA_DIR).with_suffix("").as_posix()
        _fast_validator(name)
        _validator(name)


def is_valid(name: str, instance: Any) -> bool:
    """The fast verdict alone (``jsonschema-rs``)."""
    return _fast_validator(name).is_valid(instance)


def _json_path(error: ValidationError) -> str:
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _flatten(error: ValidationError) -> list[ValidationError]:
    # oneOf/anyOf failures carry the real reasons in .context; surface those.
    if error.context:
        return [leaf for sub in error.context for leaf in _flatten(sub)]
    return [error]


def violations(name: str, instance: Any) -> list[dict[str, str]]:
    """Every violation of schema ``name`` by ``instance``, sorted by path (empty when valid)."""
    found = []
    for error in _validator(name).iter_errors(instance):
        for leaf in _flatten(error):
            message = leaf.message
            if len(message) > _MAX_MESSAGE:
                message = message[:_MAX_MESSAGE] + "…"
            found.append(
                {"path": _json_path(leaf), "rule": str(leaf.validator), "message": message}
            )
    return sorted(found, key=lambda v: (v["path"], v["rule"], v["message"]))


def validate(name: str, instance: Any) -> Any:
    """Return ``instance`` when it satisfies schema ``name``; raise SchemaValidationError otherwise."""
    if is_valid(name, instance):
        return instance
    found = violations(name, instance)
    if found:
        raise SchemaValidationError(name, found)
    # jsonschema stays the judge; the parity test exists so that this never happens.
    log.warning("jsonschema-rs refused a document jsonschema accepts (schema %s)", name)
    return instance
