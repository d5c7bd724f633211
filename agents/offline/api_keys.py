"""API keys the repository's own source names: where an API takes its key, and a key it
accepts when the source writes one out (``detected_stack.api_key``).

An app that checks a key reads it from one place, and the reading names it:

- a query parameter: Express's ``req.query['api-key']`` or ``req.query.apiKey``, Flask's
  ``request.args.get("api_key")``, Django's ``request.GET.get(...)``, Starlette's
  ``request.query_params.get(...)``, FastAPI's ``APIKeyQuery(name="api-key")``;
- a header: ``req.get('X-API-Key')``, ``req.header(...)``, ``req.headers['x-api-key']``,
  ``request.headers.get("X-API-Key")``, FastAPI's ``APIKeyHeader(name="X-API-Key")``.

A name counts only when it says key (``api-key``, ``apiKey``, ``X-API-Key``, ``key``): a
bearer token is the token path's (:mod:`repositories.login`). A key it accepts is taken from
a list (or set) of string literals assigned to a name that says keys (``var apiKeys =
['foo', 'bar']``, ``API_KEYS = {"k1"}``, ``new Set([...])``): sample keys an example ships.
The reader has already replaced values that look like real credentials
(``repositories.secrets``): a ``[REDACTED:…]`` is no key, and only short plain values
(``[A-Za-z0-9_.-]{1,64}``) are kept, so a key reaches code as a literal needing no escaping.
Without a key in the source, only refusals are tested (and the repository's own key, when its
settings give one: ``token_words``).
"""

from __future__ import annotations

import re

from .api_shape import WITH_TOKEN

# A request step's words (candidates.py), read back by code.py: a key the source lists, and
# the setup project's token or key sent where the repository's settings say (``credential``).
TOKEN_PLACE = re.compile(r'with the API token in the (query parameter|header) "([\w.-]{1,40})"')
KEY_STEP = re.compile(
    r'with the API key "([A-Za-z0-9_.-]{1,64})" in the (query parameter|header) "([\w.-]{1,40})"'
)
INVALID_KEY = "amtp-invalid-key"  # no app issued it
_NAME = re.compile(r"^[\w.-]{1,40}$")
_VALUE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_SAYS_KEY = re.compile(r"(?i)(?:^|[-_.]|api|x)key$|^key$|apikey|api[-_]key")
_Q = r"(['\"])([\w.-]{1,40})\1"
_PLACES = (
    ("query parameter", re.compile(r"\breq(?:uest)?\.query\s*\[\s*" + _Q + r"\s*\]")),
    ("query parameter", re.compile(r"\breq(?:uest)?\.query\.([A-Za-z_$][\w$]{0,39})\b(?!\s*\()")),
    (
        "query parameter",
        re.compile(r"\brequest\.(?:args|GET|query_params)(?:\.get\(\s*|\[\s*)" + _Q),
    ),
    ("query parameter", re.compile(r"\bAPIKeyQuery\(\s*name\s*=\s*" + _Q)),
    ("header", re.compile(r"\breq\.(?:get|header)\(\s*" + _Q)),
    ("header", re.compile(r"\breq(?:uest)?\.headers\s*(?:\.get\(\s*|\[\s*)" + _Q)),
    ("header", re.compile(r"\bAPIKeyHeader\(\s*name\s*=\s*" + _Q)),
)
_KEYS = re.compile(
    r"\b([A-Za-z_$][\w$]{0,40}keys)\s*(?::[^=\n]{0,40})?=\s*(?:new\s+Set\s*\(\s*|set\(\s*)?"
    r"[\[{(]([^\]})]{0,600})[\]})]",
    re.IGNORECASE,
)
_LITERAL = re.compile(r"(['\"])([^'\"\n]{0,80})\1")
SOURCE = (".js", ".mjs", ".cjs", ".ts", ".py")


def api_key_of(files: dict[str, str]) -> dict | None:
    """``{"in": "query parameter"|"header", "name": …, "keys": [...]}``: where the source
    reads an API key and up to three keys it lists; None when no reading names a key."""
    place = None
    keys: list[str] = []
    for path in sorted(files):
        if not path.endswith(SOURCE):
            continue
        text = files[path]
        for where, pattern in _PLACES:
            for match in pattern.finditer(text):
                name = match.group(match.lastindex)
                if place is None and _NAME.match(name) and _SAYS_KEY.search(name):
                    place = {"in": where, "name": name}
        for match in _KEYS.finditer(text):
            for literal in _LITERAL.finditer(match.group(2)):
                value = literal.group(2)
                if _VALUE.match(value) and value not in keys:
                    keys.append(value)
    return {**place, "keys": keys[:3]} if place else None


def clean_api_key(value: object) -> dict | None:
    """``detected_stack.api_key`` checked (a model may have written it), else None."""
    if not isinstance(value, dict) or value.get("in") not in ("query parameter", "header"):
        return None
    name, keys = value.get("name"), value.get("keys")
    if not isinstance(name, str) or not _NAME.match(name) or not _SAYS_KEY.search(name):
        return None
    keys = (
        [k for k in keys if isinstance(k, str) and _VALUE.match(k)]
        if isinstance(keys, list)
        else []
    )
    return {"in": value["in"], "name": name, "keys": keys[:3]}


def key_words(api_key: dict, value: str) -> str:
    """The step's words for sending ``value`` where ``api_key`` says (``KEY_STEP``)."""
    return f'with the API key "{value}" in the {api_key["in"]} "{api_key["name"]}"'


def token_words(app_map: object) -> str:
    """How a test sends the setup project's credential: as a bearer token, or where the
    repository's own key goes (the app map's ``credential``, checked: a model may have seen
    it)."""
    place = app_map.get("credential") if isinstance(app_map, dict) else None
    if isinstance(place, dict) and place.get("in") in ("query parameter", "header"):
        name = place.get("name")
        if isinstance(name, str) and _NAME.match(name):
            return f'{WITH_TOKEN} in the {place["in"]} "{name}"'
    return WITH_TOKEN
