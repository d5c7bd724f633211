"""APIs whose key the source names: where the app reads it and the keys it lists
(agents/offline/api_keys.py), on layouts taken from real projects; exploration asks with no
key, a key no app issued and the source's key; the tests assert what each answered.

The live stand-in answers as express's web-service example does
(tests/fixtures/realworld/express-web-service/index.js: ``app.use('/api', ...)`` checks
``req.query['api-key']`` against ``['foo', 'bar', 'baz']``: 400 "api key required", 401 "invalid
api key"; an unknown user or route is 404 "Sorry, can't find that").
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest

import schemas
from agents.offline import generate_cases
from agents.offline.api_keys import api_key_of, clean_api_key
from repositories.credentials import Credentials, in_use
from repositories.login import ApiKey
from runs.demo.app import serving
from tests.exploring import API_BOUNDS, explore_loopback
from tests.offline_checks import RUN_ID, crawl, joined, playwright_files
from tests.plans import verified
from tests.realworld_apps import script
from tests.test_browser import chromium_path
from verification.exploration.service import app_view
from verification.exploration.writes import api_key_probe
from verification.login import Login

# express examples/web-service (the vendored app's own file).
EXPRESS_QUERY = script("realworld_start").ROOT / "tests/fixtures/realworld/express-web-service"


@pytest.mark.parametrize(
    ("files", "found"),
    [
        (
            {"index.js": (EXPRESS_QUERY / "index.js").read_text()},
            {"in": "query parameter", "name": "api-key", "keys": ["foo", "bar", "baz"]},
        ),
        (  # an Express middleware reading a header, its keys in a Set
            {
                "src/auth.ts": "const VALID_API_KEYS = new Set(['dev-key-1', 'dev-key-2']);\n"
                "export function auth(req, res, next) {\n"
                "  const key = req.get('X-API-Key');\n"
                "  if (!VALID_API_KEYS.has(key)) return res.status(401).json({error: 'no'});\n"
                "  next();\n}\n"
            },
            {"in": "header", "name": "X-API-Key", "keys": ["dev-key-1", "dev-key-2"]},
        ),
        (  # Flask, the key from the query string, keys in a set
            {
                "app.py": 'API_KEYS = {"demo123"}\n\n@app.before_request\ndef check():\n'
                '    if request.args.get("api_key") not in API_KEYS:\n        abort(401)\n'
            },
            {"in": "query parameter", "name": "api_key", "keys": ["demo123"]},
        ),
        (  # FastAPI's security helper; the key is compared to settings: none listed
            {
                "main.py": 'api_key_header = APIKeyHeader(name="X-API-Key")\n'
                "def check(key: str = Security(api_key_header)):\n"
                "    if key != settings.api_key: raise HTTPException(403)\n"
            },
            {"in": "header", "name": "X-API-Key", "keys": []},
        ),
        (  # a key the reader redacted, and one with a quote: no key
            {
                "server.js": "const apiKeys = ['[REDACTED:generic-api-key]', 'it\\'s'];\n"
                "app.use((req, res, next) => req.query.apiKey ? next() : res.sendStatus(400));\n"
            },
            {"in": "query parameter", "name": "apiKey", "keys": []},
        ),
        # Readings that name no key: a page number, the Authorization header, a client call.
        ({"a.js": "const page = req.query.page; const auth = req.headers['authorization'];"}, None),
        ({"b.js": "fetch('/api?api-key=' + key); const keys = ['a'];"}, None),
        ({"c.md": "req.query['api-key'] in the docs"}, None),
    ],
)
def test_the_key_reading_and_listed_keys_are_found(files, found):
    assert api_key_of(files) == found


@pytest.mark.parametrize(
    "hostile",
    [
        {"in": "query parameter", "name": 'api-key"); evil(', "keys": []},
        {"in": "cookie", "name": "api-key", "keys": []},
        {"in": "header", "name": "Authorization", "keys": []},  # not a key: the token path's
        {"in": "header", "name": "X-API-Key", "keys": "foo"},
        "api-key",
    ],
)
def test_a_key_a_model_wrote_is_checked_again(hostile):
    cleaned = clean_api_key(hostile)
    assert cleaned is None or cleaned == {"in": "header", "name": "X-API-Key", "keys": []}


def test_hostile_keys_are_dropped_not_quoted():
    raw = {"in": "header", "name": "X-API-Key", "keys": ["ok-1", "a'b", "x" * 65, 7, "${x}"]}
    assert clean_api_key(raw)["keys"] == ["ok-1"]


def keyed(environ, start_response):
    path, query = environ["PATH_INFO"], parse_qs(environ.get("QUERY_STRING", ""))
    if not path.startswith("/api"):
        start_response("200 OK", [("Content-Type", "text/html")])
        return [b"<!doctype html><title>API</title><h1>API</h1>"]
    key = query.get("api-key", [""])[0]
    if not key:
        return _json(start_response, 400, {"error": "api key required"})
    if key not in ("foo", "bar", "baz"):
        return _json(start_response, 401, {"error": "invalid api key"})
    if path == "/api/users":
        return _json(start_response, 200, [{"name": "tobi"}, {"name": "loki"}])
    if path == "/api/user/tobi/repos":
        return _json(start_response, 200, [{"name": "express", "url": "https://x.example"}])
    return _json(start_response, 404, {"error": "Sorry, can't find that"})


def _json(start_response, status: int, body):
    reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}[status]
    start_response(f"{status} {reason}", [("Content-Type", "application/json")])
    return [json.dumps(body).encode()]


REPO = {
    "package.json": '{"dependencies": {"express": "5.2.1"}}',
    "index.js": (
        "var express = require('express');\nvar app = module.exports = express();\n"
        "var apiKeys = ['foo', 'bar', 'baz'];\n"
        "app.use('/api', function (req, res, next) { var key = req.query['api-key']; next(); });\n"
        "app.get('/api/users', function (req, res) { res.send([]); });\n"
        "app.get('/api/user/:name/repos', function (req, res) { res.send([]); });\n"
    ),
}


def _explored(url: str, tmp_path, start_paths: list[str], **options) -> tuple[dict, dict]:
    """The API's map, and what each path answered by the key sent: ``(path, auth): status``."""
    app_map = explore_loopback(
        url, tmp_path / "shots", start_paths=start_paths, bounds=API_BOUNDS, **options
    )
    schemas.validate("exploration/app_map", app_map)
    return app_map, {(r["path"], r.get("auth", "none")): r["status"] for r in app_map["apis"]}


def _specs_pass_first_time(
    crawler: dict, app_map: dict, depth: str, url: str, tmp_path, credentials=None, **plan
) -> tuple[list[dict], dict]:
    """The API cases planned at ``depth`` from the map, written as specs, checked and verified
    once (``credentials`` in use): each passes on its first attempt. The specs and the report."""
    request = crawler | {"app_map": app_view(app_map, crawler), "depth_level": depth}
    cases = [
        c for c in generate_cases(request, depth)["test_cases"] if c["id"].startswith("tc_api")
    ]
    files = playwright_files({"run_id": RUN_ID, "test_cases": cases, "coverage_notes": ""})
    with in_use(credentials):
        report = verified(files, url, tmp_path / "evidence", **plan)
    assert [(t["status"], t["attempts"]) for t in report["tests"]] == [("passed", 1)] * len(cases)
    return files, report


def test_keyed_api_is_asked_three_ways_and_the_tests_pass_first_time(tmp_path):
    chromium_path()
    crawler = crawl(REPO)
    probe = api_key_probe(crawler)
    assert probe == {
        "in": "query parameter",
        "name": "api-key",
        "keys": ["foo", "bar", "baz"],
        "paths": ["/api/user/amtp-missing-example/repos"],
        "unknown": "/api/amtp-no-such-route",
    }
    with serving(keyed) as url:
        app_map, seen = _explored(url, tmp_path, ["/", "/api/users"], api_key=probe)
        missing = "/api/user/amtp-missing-example/repos"
        assert seen == {
            ("/api/users", "none"): 400,
            ("/api/users", "invalid_key"): 401,
            ("/api/users", "key"): 200,
            (missing, "none"): 400,
            (missing, "invalid_key"): 401,
            (missing, "key"): 404,
            ("/api/amtp-no-such-route", "key"): 404,
        }
        files, _report = _specs_pass_first_time(crawler, app_map, "standard", url, tmp_path)
    code = joined(files)
    assert 'request.get("/api/users?api-key=foo")' in code
    assert 'request.get("/api/users?api-key=amtp-invalid-key")' in code
    assert 'request.get("/api/amtp-no-such-route?api-key=foo")' in code
    rb = script("realworld_behaviours")
    own = rb.load(EXPRESS_QUERY / "behaviours.yaml")
    assert sorted(rb.exercised(own, [code])) == [
        "unknown-route-json-404",
        "user-repos-invalid-key",
        "user-repos-unknown-user",
        "user-repos-without-key",
        "users-invalid-key",
        "users-without-key",
    ]


SETTING_KEY = "canary-key-9Vw2"  # the repository's own key (its login password)


def key_in_header(environ, start_response):
    """An API whose key (not in its source) comes in the X-API-Key header."""
    key = environ.get("HTTP_X_API_KEY", "")
    if environ["PATH_INFO"] != "/api/users":
        start_response("404 Not Found", [("Content-Type", "text/html")])
        return [b"<!doctype html><title>Not found</title><h1>Not found</h1>"]
    if not key:
        return _json(start_response, 401, {"error": "api key required"})
    if key != SETTING_KEY:
        return _json(start_response, 401, {"error": "invalid api key"})
    return _json(start_response, 200, [{"name": "tobi"}])


def test_the_repositorys_own_key_is_sent_where_it_says_and_never_written(tmp_path):
    chromium_path()
    credentials = Credentials("", SETTING_KEY)
    login = Login(ApiKey("header", "X-API-Key"), credentials)
    with serving(key_in_header) as url:
        with in_use(credentials):
            app_map, seen = _explored(url, tmp_path, ["/api/users"], login=login)
        assert app_map["credential"] == {"in": "header", "name": "X-API-Key"}
        assert seen == {
            ("/api/users", "none"): 401,
            ("/api/users", "invalid_key"): 401,
            ("/api/users", "token"): 200,
        }
        source = REPO["index.js"].replace("req.query['api-key']", "req.get('x')")
        crawler = crawl(
            {**REPO, "index.js": source.replace("var apiKeys = ['foo', 'bar', 'baz'];\n", "")}
        )
        files, report = _specs_pass_first_time(
            crawler, app_map, "core", url, tmp_path, credentials, run_id="key-check", login=login
        )
    code = joined(files)
    assert 'headers: { "X-API-Key": apiToken() }' in code
    assert 'headers: { "X-API-Key": "amtp-invalid-key" }' in code
    kept = json.dumps([app_map, files, report]).encode() + b"".join(
        p.read_bytes() for p in (tmp_path / "evidence").rglob("*") if p.is_file()
    )
    assert SETTING_KEY.encode() not in kept
