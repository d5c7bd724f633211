"""Write probes: what the app answers the writes its generated tests send.

The offline engine tests each write route the crawl found with an empty payload (``Send POST
/create with an empty JSON body``; a route with a parameter on a record that cannot exist,
``/999999999/update``). Without knowing the answer such a test can only check "no server
error". The box (``box/explore.mjs``) sends the same requests, in the explored session (signed
in when exploration was), and hands back the status, the path the answer ended on after
redirects and the message it showed (a Flask flash, a Django ``errorlist``, an ``alert``, a
JSON ``detail``): so the test asserts what the app says ("Username is required.", a 404, the
login page). Routes that log out are never sent (the session the suite shares would end),
nor a destructive one on a record that may exist.

Everything the box wrote is untrusted: each record must name a path this module asked for,
and the message is one printable line the generated code can quote.
"""

from __future__ import annotations

import re

from agents.offline.api_keys import clean_api_key
from agents.offline.common import clean_route, logs_out, params, sample_path, static_segments
from verification.exploration.trials import PLACEHOLDER, risky
from verification.playwright import clean

METHODS = ("POST", "PUT", "PATCH", "DELETE")
# A sign-in route (its last segment): also sent a username and password no account has
# (CREDENTIALS), in the fields OAuth 2.0's password grant names (RFC 6749, 4.3.2) and most
# login forms use.
_SIGN_IN = re.compile(r"(?i)^(log-?in|sign-?in|token|sessions?|authenticate)$")
# A sign-up route (its last segment): with its page's form (a password field, no hidden
# token), a new account is signed up twice ("taken": what the second answer says) and a new
# user name without a password ("no_password"); then a sign-in route is sent the first
# account's name with a wrong password ("wrong_password"). Each in a request context of its
# own: the explored session stays as it was.
_SIGN_UP = re.compile(r"(?i)^(register|sign-?up|join)$")
ACCOUNT_PAYLOADS = ("taken", "no_password", "wrong_password")
KINDS = ("username", "email", "password")
MAX_WRITES = 12  # writes asked for
MAX_RECORDS = 20  # their answers: a write also sent signed out adds one
# A message the test can look for as written in the page: no character HTML escapes.
_MESSAGE = re.compile(r"[^<>&\"'`\\]{2,120}")
_SENTENCE = re.compile(r"^(.{2,120}?[.!?])(?=\s|$)")
# signed_out: logged in by a recipe, the same write also sent without a session, kept when
# it ended elsewhere (a login page); it follows the write's own record, with its fields.
OUT = "signed_out"
PAYLOADS = ("empty", "form", "credentials", OUT, *ACCOUNT_PAYLOADS)
# A field name a request can send (``user[name]``): no quote, no space.
_FIELD = re.compile(r"^[\w\[\].-]{1,80}$")
_PATH = re.compile(r"^/([^/\\\s]\S{0,498})?$")


def write_paths(crawl: dict, limit: int = MAX_WRITES) -> list[list[str]]:
    """[method, path] of the writes the offline tests send (``candidates._api_cases``): the
    crawl's routes with a write method, a parameter filled with a value that cannot exist;
    never a logout, nor a destructive route on a record that may exist. A sign-in route is
    also listed as [method, path, "credentials"]: sent CREDENTIALS (no account has them)."""
    stack = crawl.get("detected_stack") if isinstance(crawl, dict) else None
    routes = stack.get("routes") if isinstance(stack, dict) else None
    out: list[list[str]] = []
    accounts: list[list[str]] = []  # sign-up first: the sign-in probe uses its account
    for item in routes if isinstance(routes, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        method, route = str(item.get("method", "")).upper(), clean_route(item["path"])
        if method not in METHODS or not route or logs_out(route):
            continue
        if (risky(route) or method == "DELETE") and not params(route):
            continue
        pair = [method, sample_path(route, missing=True)]
        if pair not in out:
            out.append(pair)
        last = route.rstrip("/").rsplit("/", 1)[-1]
        if method == "POST" and not params(route) and _SIGN_IN.match(last):
            out.append([*pair, "credentials"])
            accounts.append([*pair, "wrong_password"])
        if method == "POST" and not params(route) and _SIGN_UP.match(last):
            # without a password first: its name is new then, as a test's own is
            accounts[:0] = [[*pair, "no_password"], [*pair, "taken"]]
    if not any(a[2] == "taken" for a in accounts):
        accounts = []
    return (out[: limit - len(accounts[:4])] + accounts[:4])[:limit]


def writes(items, asked: list[list[str]], tag: str, held: list[str]) -> list[dict]:
    """The box's write records, each checked: a [method, path] that was asked, a status, a
    local path after, a message fit to quote (else empty); ``form``: the page's form for that
    write sent with its ``fields`` empty (names a request can carry)."""
    out: list[dict] = []
    for raw in items[: MAX_RECORDS * 2] if isinstance(items, list) else []:
        raw = raw if isinstance(raw, dict) else {}
        payload = raw.get("payload", "empty")
        if payload not in PAYLOADS:
            continue
        sign_in = [payload] if payload in ("credentials", *ACCOUNT_PAYLOADS) else []
        pair = [raw.get("method"), raw.get("path"), *sign_in]
        status = raw.get("status")
        if pair not in asked or any(_asked(r) == pair + [OUT] * (payload == OUT) for r in out):
            continue
        if payload == OUT and not any(_asked(r) == pair for r in out):
            continue  # the signed-out answer follows the same write's own
        same = next((r for r in out if _asked(r) == pair), None) if payload == OUT else None
        named = payload == "form" or payload in ACCOUNT_PAYLOADS
        names = raw.get("fields") if named else (same["fields"] if same else [])
        names = names[:20] if isinstance(names, list) else []
        if named and not (names and all(isinstance(n, str) and _FIELD.match(n) for n in names)):
            continue
        kinds = raw.get("kinds") if payload in ACCOUNT_PAYLOADS else []
        kinds = kinds if isinstance(kinds, list) else []
        if payload in ACCOUNT_PAYLOADS and (
            len(kinds) != len(names)
            or not all(k in KINDS for k in kinds)
            or "password" not in kinds
        ):
            continue
        if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
            continue
        after = raw.get("path_after")
        after = after if isinstance(after, str) and _PATH.match(after) else ""
        message = clean(raw.get("message") if isinstance(raw.get("message"), str) else "", 300)
        message = " ".join(message.split())
        if payload in ACCOUNT_PAYLOADS:  # the account's name in it is the test's own, then
            message = message.replace(tag, PLACEHOLDER)
        if not _MESSAGE.fullmatch(message) and (first := _SENTENCE.match(message)):
            message = first.group(1)  # its first sentence, when that one can be quoted
        if not _MESSAGE.fullmatch(message.replace(PLACEHOLDER, "x")) or tag in message:
            message = ""
        if any(s in message for s in held):
            message = ""
        if any(s in after for s in held) or tag in after:
            after = ""
        if raw.get("redirected") is not False or (after and after != pair[1]):
            # Shown after a redirect, a message came through the session (a flash kept for
            # the next page): the tests share one session, and another test's page load may
            # take the flash first. Kept only when the box says there was no redirect.
            message = ""
        record = {
            "method": pair[0],
            "path": pair[1],
            "payload": payload,
            "fields": list(dict.fromkeys(names)),
            "status": status,
            "path_after": after,
            "message": message,
        }
        if payload in ACCOUNT_PAYLOADS:
            if len(record["fields"]) != len(names):
                continue
            signed_up = raw.get("signed_up_to") if payload == "taken" else ""
            ok = isinstance(signed_up, str) and _PATH.match(signed_up) and tag not in signed_up
            record |= {"kinds": kinds, "signed_up_to": signed_up if ok else ""}
        out.append(record)
    return out[:MAX_RECORDS]


def _asked(record: dict) -> list[str]:
    """The [method, path(, payload)] a record answers."""
    own = record["payload"] in ("credentials", OUT, *ACCOUNT_PAYLOADS)
    return [record["method"], record["path"], *([record["payload"]] if own else [])]


UNKNOWN_API_ROUTE = "amtp-no-such-route"


def api_key_probe(crawl: dict) -> dict | None:
    """What the box needs to ask an API whose key the source names (``detected_stack.api_key``,
    checked again): where the key goes and the keys the source lists, the GET routes with a
    parameter filled with values that cannot exist (the tests' "missing record"), and a route
    under the GET routes' common first segment that cannot exist; None without a key."""
    stack = crawl.get("detected_stack") if isinstance(crawl, dict) else None
    key = clean_api_key(stack.get("api_key")) if isinstance(stack, dict) else None
    if key is None:
        return None
    routes = stack.get("routes") if isinstance(stack.get("routes"), list) else []
    gets = [
        route
        for item in routes
        if isinstance(item, dict) and str(item.get("method", "")).upper() == "GET"
        if isinstance(item.get("path"), str) and (route := clean_route(item["path"]))
    ]
    paths = list(dict.fromkeys(sample_path(r, missing=True) for r in gets if params(r)))[:5]
    firsts = {(static_segments(r) or [""])[0] for r in gets}
    prefix = f"/{firsts.pop()}" if len(firsts) == 1 and "" not in firsts else ""
    return {**key, "paths": paths, "unknown": f"{prefix}/{UNKNOWN_API_ROUTE}"}
