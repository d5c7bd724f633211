"""Contracts: the six original schemas verbatim (tests/fixtures/spec_000_schemas.txt), ours
beside them, every violation listed."""

import json
import re
from pathlib import Path

import pytest

import schemas
from schemas.errors import SchemaValidationError
from tests.contract_examples import VALID, valid

SPEC_TEXT = Path(__file__).resolve().parent / "fixtures" / "spec_000_schemas.txt"


def violations_of(name, instance):
    with pytest.raises(SchemaValidationError) as caught:
        schemas.validate(name, instance)
    return {(v["path"], v["rule"]) for v in caught.value.violations}, caught.value


@pytest.mark.parametrize("name", sorted(VALID))
def test_realistic_instance_is_valid(name):
    assert schemas.validate(name, valid(name)) == VALID[name]


def test_agent_schemas_keep_the_spec_ids():
    for name in schemas.AGENT_SCHEMAS:
        assert schemas.schema_id(name) == f"https://amtp.zagtrader.internal/schemas/{name}.json"
        assert schemas.load(name)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_agent_schemas_equal_the_spec_text():
    text, decoder, found = SPEC_TEXT.read_text(), json.JSONDecoder(), {}
    for match in re.finditer(r'^\{\n  "\$schema"', text, re.M):
        obj, _ = decoder.raw_decode(text, match.start())
        found[re.search(r"schemas/(\w+/\w+)\.json$", obj["$id"]).group(1)] = obj
    assert sorted(found) == sorted(schemas.AGENT_SCHEMAS)
    for name, obj in found.items():
        assert schemas.load(name) == obj, name


def test_every_violation_is_listed_with_path_and_rule():
    bad = valid("test_case_generator/output")
    case = bad["test_cases"][0]
    case["id"] = "TC-Login"  # pattern
    case["priority"] = "urgent"  # enum
    case["steps"] = []  # minItems
    del case["expected"]  # required
    case["owner"] = "qa"  # additionalProperties
    bad["run_id"] = "not-a-uuid"  # format
    found, error = violations_of("test_case_generator/output", bad)
    assert found == {
        ("$.test_cases[0].id", "pattern"),
        ("$.test_cases[0].priority", "enum"),
        ("$.test_cases[0].steps", "minItems"),
        ("$.test_cases[0]", "required"),
        ("$.test_cases[0]", "additionalProperties"),
        ("$.run_id", "format"),
    }
    assert error.schema == "test_case_generator/output"
    assert "6 violation(s)" in error.message and "$.test_cases[0].id" in error.message


def test_empty_test_case_list_breaks_min_items():
    bad = valid("test_case_generator/output")
    bad["test_cases"] = []
    assert violations_of("test_case_generator/output", bad)[0] == {("$.test_cases", "minItems")}


def test_sha_pattern_and_uuid_format_are_checked():
    bad = valid("repo_crawler/output")
    bad["file_tree"][0]["sha"] = "A" * 40
    bad["file_tree"][1]["sha"] = "abc"
    bad["run_id"] = "3f2b8c1e9a4d4e6f8b215c7d9e0f1a2b0"
    found, _ = violations_of("repo_crawler/output", bad)
    assert found == {
        ("$.file_tree[0].sha", "pattern"),
        ("$.file_tree[1].sha", "pattern"),
        ("$.run_id", "format"),
    }


def test_pr_title_max_length_and_extra_keys():
    bad = valid("test_engineer/output")
    bad["pr_title"] = "x" * 257
    bad["meta"] = {"sanitizer": "v1.0.0"}
    bad["files"][0]["path"] = "/etc/passwd"
    found, error = violations_of("test_engineer/output", bad)
    assert found == {
        ("$.pr_title", "maxLength"),
        ("$", "additionalProperties"),
        ("$.files[0].path", "pattern"),
    }
    assert all(len(v["message"]) <= 301 for v in error.violations)


def test_required_keys_enums_and_repo_pattern_on_inputs():
    found, _ = violations_of(
        "repo_crawler/input",
        {
            "run_id": valid("repo_crawler/input")["run_id"],
            "repo_full_name": "acme",
            "depth_level": "shallow",
        },
    )
    assert found == {("$", "required"), ("$.repo_full_name", "pattern"), ("$.depth_level", "enum")}


def test_date_time_format_is_really_checked():
    # Our contracts do not use date-time, but the validator must: the context document does.
    from jsonschema import Draft202012Validator

    checker = Draft202012Validator.FORMAT_CHECKER
    assert checker.conforms("2026-11-21T10:30:00Z", "date-time")
    assert not checker.conforms("21/11/2026 10:30", "date-time")
    assert not checker.conforms("3f2b8c1e9a4d4e6f8b215c7d9e0f1a2b", "uuid")


def test_stale_base_failure_report_is_exactly_the_spec_shape():
    report = valid("artifacts/failure_report")
    report["extra"] = 1
    assert violations_of("artifacts/failure_report", report)[0] == {("$", "additionalProperties")}
    other = {"error": "SchemaValidationError", "message": "3 violations", "stage": "crawl_repo"}
    assert schemas.validate("artifacts/failure_report", other) == other


def test_handoff_envelope_refuses_unknown_upstream_and_extra_keys():
    env = valid("handoff/envelope")
    env["upstream"]["agent"] = "test_engineer"
    env["history"] = []
    found, _ = violations_of("handoff/envelope", env)
    assert found == {("$.upstream.agent", "enum"), ("$", "additionalProperties")}


def test_unknown_schema_name_and_path_escape_are_refused():
    for name in ["nope/output", "../settings", "/etc/passwd"]:
        with pytest.raises(KeyError):
            schemas.validate(name, {})


def test_validators_are_compiled_once():
    schemas.validate("repo_crawler/input", valid("repo_crawler/input"))
    before = schemas._fast_validator.cache_info().hits
    schemas.validate("repo_crawler/input", valid("repo_crawler/input"))
    assert schemas._fast_validator.cache_info().hits == before + 1
    invalid = {**valid("repo_crawler/input"), "depth_level": "bottomless"}
    with pytest.raises(SchemaValidationError):
        schemas.validate("repo_crawler/input", invalid)
    before = schemas._validator.cache_info().hits
    with pytest.raises(SchemaValidationError):
        schemas.validate("repo_crawler/input", invalid)
    assert schemas._validator.cache_info().hits == before + 1
    assert re.match(r"^https://", schemas.schema_id("handoff/envelope"))


def test_compile_all_compiles_every_schema_ahead_of_use():
    """What the agent process template runs once (runs/temporal/agent_template.py CACHES)."""
    for cached in (schemas._fast_validator, schemas._validator):
        cached.cache_clear()
    schemas.compile_all()
    files = len(list(schemas.SCHEMA_DIR.rglob("*.json")))
    assert files >= 13
    for cached in (schemas._fast_validator, schemas._validator):
        assert cached.cache_info().currsize == files
    misses = schemas._fast_validator.cache_info().misses
    schemas.validate("repo_crawler/input", valid("repo_crawler/input"))
    assert schemas._fast_validator.cache_info().misses == misses  # nothing compiled on use
