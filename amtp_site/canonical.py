"""Canonical JSON and the activity idempotency key.

Canonical JSON here means: object keys sorted by Unicode code point, separators ``,`` and ``:``
with no whitespace, UTF-8 bytes, and non-ASCII characters written as themselves (not ``\\uXXXX``
escapes) — the compact form the models read and RFC 8785 also uses for strings. NaN and
Infinity are refused (they are not JSON). Examples (also asserted in the tests):

>>> canonical_json({"b": 1, "a": [1, 2], "é": "ü"})
b'{"a":[1,2],"b":1,"\\xc3\\xa9":"\\xc3\\xbc"}'
>>> idempotency_key("0b9e6f3c-7d5c-4d8c-9a51-0d7e4c8b6a11", "CrawlRepo", {"ref": "main"})
'c58d63cb38bbc443451df7595988b5a4661c851917c0ae766cb5338b4489a030'
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def canonical_text(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


def idempotency_key(run_id: str, activity_name: str, payload: Any) -> str:
    """sha256(run_id ":" activity_name ":" canonical_json(input)), hex."""
    digest = hashlib.sha256()
    digest.update(f"{run_id}:{activity_name}:".encode())
    digest.update(canonical_json(payload))
    return digest.hexdigest()
