"""Canonical JSON and the activity idempotency key are stable; the examples are the docs."""

import hashlib

import pytest

from amtp_site.canonical import canonical_json, canonical_text, idempotency_key


def test_keys_sorted_no_whitespace_utf8():
    assert (
        canonical_json({"b": 1, "a": {"d": [1, 2], "c": None}})
        == b'{"a":{"c":null,"d":[1,2]},"b":1}'
    )


def test_non_ascii_is_written_as_utf8_not_escaped():
    assert canonical_json({"name": "Zoë ✓"}) == '{"name":"Zoë ✓"}'.encode()
    assert canonical_text({"k": "\u2028"}) == '{"k":"\u2028"}'


def test_same_value_different_key_order_same_bytes():
    a = {"run_id": "x", "input": {"depth_level": "core", "ref": "main"}}
    b = {"input": {"ref": "main", "depth_level": "core"}, "run_id": "x"}
    assert canonical_json(a) == canonical_json(b)


def test_nan_is_refused():
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_idempotency_key_is_the_spec_formula_and_stable():
    run_id = "0b9e6f3c-7d5c-4d8c-9a51-0d7e4c8b6a11"
    key = idempotency_key(run_id, "CrawlRepo", {"ref": "main"})
    expected = hashlib.sha256(f'{run_id}:CrawlRepo:{{"ref":"main"}}'.encode()).hexdigest()
    assert key == expected == "c58d63cb38bbc443451df7595988b5a4661c851917c0ae766cb5338b4489a030"
    assert idempotency_key(run_id, "GenerateTestCases", {"ref": "main"}) != key
