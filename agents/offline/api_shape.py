"""The shape of a JSON answer: what an API test asserts beyond its status.

ExploreApp records, for each GET on the app's origin that answered JSON while the pages were
visited, a bounded shape of the body (``box/explore.mjs``): for an object its top-level keys
and each value's JSON type; for a list whether it was empty and the shape of its first item.
Never a value: values may carry secrets or hostile text. The box is not trusted, and neither is
an app map that reached a model, so :func:`clean_apis` checks every record again here, one
definition for the worker (``verification.exploration``) and the offline rules.

A key is kept only when its name is 1-40 characters of ``[A-Za-z0-9_$.-]``: a clipped or
rewritten name would be a false claim about the app, and a narrow set keeps quotes, backticks,
``${`` and line breaks out of every generated file. Keys left out are counted.

The shape travels into a test case's ``expected`` text in a small grammar (:func:`describe`),
which ``code.py`` reads back (:func:`parse`): ``a JSON object with the keys "id" (number),
"title" (string)``, ``a JSON list; its first item, when there is one, is a JSON object with the
keys …``. Key names are JSON strings there, so a case written by a model is read safely too.
"""

from __future__ import annotations

import json
import re

TYPES = ("string", "number", "boolean", "null", "object", "array")
# How exploration asked (box/explore.mjs): as the page did, with a bearer token the app
# cannot have issued, with another scheme (Basic), with the token the repository's API token
# path issued to its test account ("token"), with a key no app issued and with a key the
# source lists, where the source reads one ("invalid_key", "key": api_keys.py). Only "token"
# and "key" may be accepted.
AUTHS = ("none", "invalid_bearer", "basic", "token", "invalid_key", "key")
ACCEPTED = ("none", "token", "key")
# Where the tests find that token: the setup project (verification/login.py) saves it in its
# storage state, as a localStorage item of the app's origin; the specs read it (TOKEN_HELPER).
STATE_FILE = "playwright/.auth/user.json"
TOKEN_ITEM = "amtp_api_token"
WITH_TOKEN = "with the API token"  # a request step's words: code.py sends it as a bearer
TOKEN_HELPER = (
    "// The API token the setup project (auth.setup.ts) got with the test account, from the",
    "// state it saved: the tests never see the account's password.",
    "function apiToken(): string {",
    f"  const state = JSON.parse(readFileSync({json.dumps(STATE_FILE)}, 'utf8'));",
    "  const items = (state.origins ?? []).flatMap((o: any) => o.localStorage ?? []);",
    f"  const item = items.find((i: any) => i.name === {json.dumps(TOKEN_ITEM)});",
    "  if (!item) throw new Error('no API token: run the setup project (auth.setup.ts) first');",
    "  return item.value;",
    "}",
)
AUTH_HEADERS = {"invalid_bearer": "Bearer amtp-invalid-token", "basic": "Basic YW10cDphbXRw"}
MESSAGE_KEYS = ("detail", "error", "message", "msg", "title")
# What a sign-in route is sent to see it refuse (verification/exploration/writes.py): no account has it.
CREDENTIALS = {"username": "amtp_nobody", "password": "amtp-not-the-password"}
MAX_APIS, MAX_KEYS = 30, 30
KEY = re.compile(r"[A-Za-z0-9_$.-]{1,40}")
# In an object literal "__proto__" sets the prototype instead of naming a key to check.
NOT_A_KEY = "__proto__"
_KEYS = re.compile(r'("(?:[^"\\]|\\.){1,80}") \((string|number|boolean|null|object|array)\)')
_BODY = re.compile(r"\ba JSON (object|list|string|number|boolean|null)\b")
_ITEM = re.compile(
    r"\bits first item, when there is one, is a JSON (object|list|string|number|boolean|null)"
)
_NOUN = {"array": "list"}


def _count(value: object) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return min(value, 10**9) if ok else 0


def _clean_keys(items: object) -> list[dict]:
    keys: list[dict] = []
    for item in items[: MAX_KEYS * 4] if isinstance(items, list) else []:
        if len(keys) >= MAX_KEYS:
            break
        name, kind = (item.get("name"), item.get("type")) if isinstance(item, dict) else ("", "")
        fine = isinstance(name, str) and KEY.fullmatch(name) and kind in TYPES
        fine = fine and name != NOT_A_KEY
        if fine and all(k["name"] != name for k in keys):
            keys.append({"name": name, "type": kind})
    return keys


def _level(raw: object, nested: bool) -> dict | None:
    """One level of a shape, checked; a ``nested`` level (a list's first item) has no item."""
    if not isinstance(raw, dict) or raw.get("type") not in TYPES:
        return None
    kind = raw["type"]
    is_object = kind == "object"
    shape = {
        "type": kind,
        "keys": _clean_keys(raw.get("keys")) if is_object else [],
        "other_keys": _count(raw.get("other_keys")) if is_object else 0,
    }
    if not nested:
        empty = kind == "array" and raw.get("empty") is True
        item = _level(raw.get("item"), True) if kind == "array" and not empty else None
        shape |= {"empty": empty, "item": item}
    return shape


def clean_apis(items: object, path_ok) -> list[dict]:
    """The ``apis`` records of an app map, each checked: a path ``path_ok`` accepts (one
    record per path and ``auth``), a 2xx or 4xx status and a well-formed shape; at most
    MAX_APIS. A refusal (4xx) keeps its message (``refusal``)."""
    out: list[dict] = []
    for raw in items[: MAX_APIS * 2] if isinstance(items, list) else []:
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
            continue
        status, body = raw.get("status"), _level(raw.get("body"), False)
        ok_status = isinstance(status, int) and not isinstance(status, bool)
        ok_status = ok_status and (200 <= status < 300 or 400 <= status < 500)
        auth = raw.get("auth", "none")
        if not (ok_status and body and path_ok(raw["path"]) and auth in AUTHS):
            continue
        if auth not in ACCEPTED and status < 400:
            continue  # a made-up credential accepted: nothing a test may rely on
        if any(r["path"] == raw["path"] and r.get("auth", "none") == auth for r in out):
            continue
        record = {"path": raw["path"], "status": status, "body": body}
        if status >= 400 or auth != "none":
            record["auth"] = auth
        if status >= 400:
            record |= refusal(raw.get("message"), body)
        out.append(record)
        if len(out) >= MAX_APIS:
            break
    return out


def refusal(message: object, body: dict) -> dict:
    """A refusal's message and the key it was under (the first of MESSAGE_KEYS the body has
    as a string): one printable line of at most 120 characters, else none."""
    keys = [k["name"] for k in body.get("keys") or [] if k["type"] == "string"]
    key = next((k for k in MESSAGE_KEYS if k in keys), "")
    text = message if isinstance(message, str) else ""
    line = " ".join("".join(c if c.isprintable() else " " for c in text).split())[:120]
    if not line or line != text.strip() or not key:
        return {"message": "", "message_key": ""}
    return {"message": line, "message_key": key}


# --- the expectation grammar ---------------------------------------------------------------


def _keys_text(level: dict) -> str:
    keys = ", ".join(f"{json.dumps(k['name'])} ({k['type']})" for k in level["keys"])
    return f" with the keys {keys}" if keys else ""


def _level_text(level: dict) -> str:
    return f"a JSON {_NOUN.get(level['type'], level['type'])}" + _keys_text(level)


def describe(status: int, body: dict, record: dict | None = None) -> str:
    """The expectation of a GET whose answer had this status and shape (and, for a
    refusal, the message ``record`` kept)."""
    text = f"responds with status {status} and a JSON content type; the body is "
    text += _level_text(body)
    if body["type"] == "array":
        if body["item"]:
            text += "; its first item, when there is one, is " + _level_text(body["item"])
        else:
            text += " (it was empty when the app was explored)"
    if record and record.get("message") and record.get("message_key"):
        key, message = json.dumps(record["message_key"]), json.dumps(record["message"])
        text += f"; its {key} reads {message}"
    return text


def _noun(route: str) -> str:
    """What a list at ``route`` holds, from its last plain segment ("" when none says)."""
    for segment in reversed(route.strip("/").split("/")):
        if segment.startswith("{") or segment == "api" or re.fullmatch(r"v\d+", segment):
            continue
        return segment if re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,39}", segment) else ""
    return ""


def summary(route: str, body: dict) -> str:
    """What a test title says is checked: "a list of notes with id and title"."""
    if body["type"] not in ("object", "array"):
        return f"a JSON {body['type']}"
    level, noun = body, "JSON object"
    if body["type"] == "array":
        noun = f"list of {_noun(route)}" if _noun(route) else "JSON list"
        level = body["item"] or {"keys": []}
    names = [k["name"] for k in level["keys"][:3]]
    if not names:
        return f"a {noun}"
    more = len(level["keys"]) - len(names)
    listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
    return f"a {noun} with {listed}" + (f" and {more} more keys" if more else "")


def parse(expected: str) -> dict | None:
    """The body's shape an expectation names (:func:`describe`'s grammar), or None."""
    body = _BODY.search(expected)
    if not body:
        return None
    head, _, rest = expected[body.start() :].partition("; its first item")
    shape = {"type": "array" if body.group(1) == "list" else body.group(1), "keys": _keys(head)}
    item = _ITEM.search(expected)
    if shape["type"] == "array" and item:
        kind = "array" if item.group(1) == "list" else item.group(1)
        shape["item"] = {"type": kind, "keys": _keys(rest)}
    return shape


def _keys(text: str) -> list[tuple[str, str]]:
    out = []
    for match in _KEYS.finditer(text):
        try:
            name = json.loads(match.group(1))
        except ValueError:
            continue
        fresh = name not in (n for n, _ in out)
        if isinstance(name, str) and name and name != NOT_A_KEY and fresh:
            out.append((name, match.group(2)))
    return out[:MAX_KEYS]


# --- the assertions ------------------------------------------------------------------------

_MATCHER = {
    "string": "expect.any(String)",
    "number": "expect.any(Number)",
    "boolean": "expect.any(Boolean)",
    "array": "expect.any(Array)",
    "object": "expect.any(Object)",
}
_IS = {
    "object": "{v} !== null && typeof {v} === 'object' && !Array.isArray({v})",
    "array": "Array.isArray({v})",
    "null": "{v} === null",
}


def _ts(text: str) -> str:
    return json.dumps(text, ensure_ascii=True)  # ASCII only: no U+2028 can end a line


def _level_lines(var: str, kind: str, keys: list[tuple[str, str]]) -> list[str]:
    check = _IS.get(kind, f"typeof {{v}} === {_ts(kind)}").format(v=var)
    lines = [f"expect({check}, {_ts(f'the body is a JSON {_NOUN.get(kind, kind)}')}).toBe(true);"]
    if kind == "object" and (typed := _typed(keys)):
        lines.append(f"expect({var}).toEqual({typed});")
    for name, t in keys if kind == "object" else []:
        if t == "null":  # null when explored: the key must be there, its value may vary
            lines.append(f"expect({var}).toHaveProperty([{_ts(name)}]);")
    return lines


def _typed(keys: list[tuple[str, str]]) -> str:
    """``expect.objectContaining`` of the keys whose type a matcher checks ("" when none)."""
    typed = [f"{_ts(name)}: {_MATCHER[t]}" for name, t in keys if t in _MATCHER]
    return f"expect.objectContaining({{ {', '.join(typed)} }})" if typed else ""


def _item_matcher(item: dict) -> str:
    """What a list's first item must equal: its keys' types (a key that was null is not
    checked: no matcher takes null and any other value alike), else its own type."""
    if item["type"] == "null":
        return "null"
    if item["type"] == "object":
        return _typed(item["keys"]) or "expect.any(Object)"
    return _MATCHER[item["type"]]


_READS = re.compile(r'\bits ("(?:[^"\\]|\\.){1,80}") reads ("(?:[^"\\]|\\.){1,300}")')


def _reads(expected: str) -> tuple[str, str] | None:
    """(key, message) of a refusal the expectation names (``describe``), else None."""
    found = _READS.search(expected)
    try:
        key, message = (
            (json.loads(found.group(1)), json.loads(found.group(2))) if found else ("", "")
        )
    except ValueError:
        return None
    ok = isinstance(key, str) and key in MESSAGE_KEYS and isinstance(message, str)
    return (key, message) if ok and message and len(message) <= 120 else None


def shape_lines(var: str, expected: str) -> list[str]:
    """Playwright statements asserting the body shape ``expected`` names, on the response
    ``var`` (none when it names no shape). None is conditional: a heal may not loosen one."""
    shape = parse(expected)
    if shape is None:
        return []
    body = f"{var}Body"
    lines = [
        f"expect({var}.headers()['content-type'] ?? '').toContain('json');",
        f"const {body}: any = await {var}.json();",
        *_level_lines(body, shape["type"], shape["keys"]),
    ]
    if said := _reads(expected):  # the refusal's message, whole
        lines.append(f"expect({body}[{_ts(said[0])}]).toBe({_ts(said[1])});")
    if item := shape.get("item"):
        lines += [
            "// An empty list passes: the first item's shape is checked when there is one.",
            f"expect({body}.slice(0, 1)).toEqual({body}.length ? [{_item_matcher(item)}] : []);",
        ]
    return lines
