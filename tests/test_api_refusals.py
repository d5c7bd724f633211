"""API tests of refusals: what a token- or key-protected API answers a client without a valid
credential, recorded by exploration and asserted as seen (status and message).

The stand-in answers as two real APIs do (tests/fixtures/realworld/): FastAPI's
``OAuth2PasswordBearer`` (fastapi/security/oauth2.py: 401 ``{"detail": "Not authenticated"}``
with ``WWW-Authenticate: Bearer`` when the header is missing or not Bearer; the tutorial's
``get_current_user`` answers 401 "Could not validate credentials" for a token it cannot decode)
and express's web-service example (a missing ``api-key`` is 400 ``{"error": "api key
required"}``). Everything the box recorded is hostile: the message is one bounded line, quoted.
"""

from __future__ import annotations

import json

import schemas
from agents.offline import generate_cases
from agents.offline.api_shape import clean_apis, shape_lines
from runs.demo.app import serving
from tests.exploring import API_BOUNDS, explore_loopback
from tests.offline_checks import crawl, joined, playwright_files
from tests.plans import verified
from tests.realworld_apps import script
from tests.test_browser import chromium_path
from verification.exploration.service import app_view

REPO = {
    "main.py": (
        # Its own docs routes off, as the stand-in below serves none (this test is the refusals').
        "from fastapi import FastAPI\napp = FastAPI(openapi_url=None)\n\n"
        '@app.get("/users/me/")\nasync def me():\n    return {}\n\n'
        '@app.get("/api/users")\nasync def users():\n    return []\n'
    ),
    "requirements.txt": "fastapi\n",
}


def protected(environ, start_response):
    path, auth = environ["PATH_INFO"], environ.get("HTTP_AUTHORIZATION", "")
    if path == "/users/me/":
        bearer = {"WWW-Authenticate": "Bearer"}
        if not auth.startswith("Bearer "):
            return _json(start_response, 401, {"detail": "Not authenticated"}, bearer)
        return _json(start_response, 401, {"detail": "Could not validate credentials"}, bearer)
    if path == "/api/users":
        return _json(start_response, 400, {"error": "api key required"})
    start_response("200 OK", [("Content-Type", "text/html")])
    return [b"<!doctype html><title>API</title><h1>API</h1>"]


def _json(start_response, status: int, body: dict, headers: dict | None = None):
    reason = {400: "Bad Request", 401: "Unauthorized"}[status]
    extra = list((headers or {}).items())
    start_response(f"{status} {reason}", [("Content-Type", "application/json"), *extra])
    return [json.dumps(body).encode()]


def test_refusals_are_recorded_probed_and_pass_first_time(tmp_path):
    chromium_path()
    with serving(protected) as url:
        app_map = explore_loopback(
            url,
            tmp_path / "shots",
            start_paths=["/", "/users/me/", "/api/users"],
            bounds=API_BOUNDS,
        )
        schemas.validate("exploration/app_map", app_map)
        seen = {
            (r["path"], r.get("auth")): (r["status"], r.get("message")) for r in app_map["apis"]
        }
        assert seen == {
            ("/users/me/", "none"): (401, "Not authenticated"),
            # Asked again: a bearer token it never issued, and another scheme.
            ("/users/me/", "invalid_bearer"): (401, "Could not validate credentials"),
            ("/users/me/", "basic"): (401, "Not authenticated"),
            ("/api/users", "none"): (400, "api key required"),  # no Bearer asked: no probe
        }
        crawler = crawl(REPO)
        request = crawler | {"app_map": app_view(app_map, crawler), "depth_level": "core"}
        cases = [
            c for c in generate_cases(request, "core")["test_cases"] if c["id"].startswith("tc_api")
        ]
        titles = sorted(c["title"] for c in cases)
        assert titles == [
            'GET /api/users without credentials is refused: 400 "api key required"',
            'GET /users/me/ with a bearer token it never issued is refused: 401 "Could not'
            ' validate credentials"',
            'GET /users/me/ with another scheme is refused: 401 "Not authenticated"',
            'GET /users/me/ without credentials is refused: 401 "Not authenticated"',
        ]
        files = playwright_files(cases)
        code = joined(files)
        assert 'headers: { Authorization: "Bearer amtp-invalid-token" }' in code
        assert 'expect(responseBody["detail"]).toBe("Could not validate credentials");' in code
        tests = verified(files, url, tmp_path / "evidence")["tests"]
        assert [(t["status"], t["attempts"]) for t in tests] == [("passed", 1)] * 4, tests
    # The matcher of the benchmark counts them as FastAPI's own suite does (behaviours.yaml).
    rb = script("realworld_behaviours")
    own = rb.load(
        script("realworld_start").ROOT / "tests/fixtures/realworld/fastapi-jwt/behaviours.yaml"
    )
    assert sorted(rb.exercised(own, [code])) == [
        "me-invalid-token",
        "me-token-without-sub",
        "me-without-token",
        "me-wrong-token-type",
    ]


def test_hostile_refusal_records_keep_no_unsafe_message():
    body = {"type": "object", "keys": [{"name": "detail", "type": "string"}], "other_keys": 0}
    body |= {"empty": False, "item": None}
    raw = [
        {"path": "/a", "status": 401, "body": body, "message": 'x"); process.exit(1); ("'},
        {"path": "/b", "status": 401, "body": body, "message": "line\nbreak"},
        {"path": "/c", "status": 401, "body": body, "message": "m" * 121},
        {"path": "/d", "status": 200, "body": body, "auth": "invalid_bearer"},  # accepted: dropped
        {"path": "/e", "status": 401, "body": body, "auth": "root"},  # not a known probe
        {"path": "/f", "status": 500, "body": body, "message": "boom"},  # not a refusal
    ]
    found = {r["path"]: r for r in clean_apis(raw, lambda p: True)}
    assert set(found) == {"/a", "/b", "/c"}
    assert found["/a"]["message"] == 'x"); process.exit(1); ("'  # data: quoted where used
    assert found["/b"]["message"] == "" and found["/c"]["message"] == ""
    shape = 'a JSON object with the keys "detail" (string)'
    expected = f'responds with status 401; the body is {shape}; its "detail" reads "x\\"); ("'
    assert 'expect(responseBody["detail"]).toBe("x\\"); (");' in shape_lines("response", expected)
    # A key outside the closed list is never read.
    assert not [s for s in shape_lines("r", f'{shape}; its "__proto__" reads "x"') if "__" in s]
