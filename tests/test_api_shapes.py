"""API tests assert the status and the shape of the JSON answer the explored app gave.

ExploreApp records a bounded shape per GET that answered JSON (keys and types, never a
value); the offline rules turn it into an expectation and the expectation into Playwright
assertions. Everything on the way is hostile input: the box's record, an app map that reached
a model, and a case's ``expected`` text a model wrote.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import schemas
from agents import expectations
from agents.offline import generate_cases
from agents.offline.api_shape import MAX_KEYS, clean_apis, describe, parse, summary
from agents.rendering import render_envelope, text_tokens
from amtp_site.canonical import canonical_text
from runs.demo.app import serving
from tests.contract_examples import APP_VIEW, ENVELOPE
from tests.exploring import explore_loopback
from tests.offline_checks import crawl, playwright_code, playwright_files
from tests.plans import verified
from tests.test_browser import chromium_path
from tests.verify_apps import NOTES_REPO, NotesApp
from verification.exploration.explore import Bounds
from verification.exploration.service import app_view, start_paths

NOTES_SHAPE = {
    "type": "array",
    "keys": [],
    "other_keys": 0,
    "empty": False,
    "item": {
        "type": "object",
        "keys": [{"name": "id", "type": "number"}, {"name": "text", "type": "string"}],
        "other_keys": 0,
    },
}
HOSTILE_NAMES = ['a"b', "a`b", "${process.exit(1)}", "line\nbreak", "\u2028", "__proto__", "x" * 41]


def _object(keys: list[dict], other: int = 0) -> dict:
    return {"type": "object", "keys": keys, "other_keys": other, "empty": False, "item": None}


def _app_map(apis: list) -> dict:
    """A minimal stored app map around ``apis``."""
    return {
        "target_url": "http://127.0.0.1:8000",
        "settings": {"max_pages": 5, "max_depth": 1, "time_s": 30, "page_timeout_s": 10},
        "tool_versions": {},
        "pages": [],
        "stopped": "",
        "unvisited": 0,
        "unknown_path_status": 404,
        "apis": apis,
        "truncated": False,
        "sandbox": {"isolated": True, "blocked": []},
    }


def test_hostile_shape_records_are_checked_bounded_and_valid():
    keys = [{"name": n, "type": "string"} for n in HOSTILE_NAMES]
    keys += [{"name": f"k{i}", "type": t} for i, t in enumerate(["number", "date", None] * 40)]
    raw = [
        {"path": "/api/a", "status": 200, "body": _object(keys, other=-5) | {"secret": "v"}},
        {"path": "/api/a", "status": 200, "body": _object([])},  # one record per path
        {"path": "/api/b", "status": True, "body": _object([])},  # a bool is no status
        {"path": "/api/c", "status": 500, "body": _object([])},
        {"path": "//evil.test/x", "status": 200, "body": _object([])},
        {"path": "/api/d", "status": 200, "body": {"type": "bigint"}},
        {"path": "/api/e", "status": 200, "body": {"type": "array", "empty": True, "item": 1}},
        {
            "path": "/api/f",
            "status": 204,
            "body": {"type": "array", "item": {"type": "array", "item": {"type": "object"}}},
        },
        "not a record",
        *({"path": f"/api/n{i}", "status": 200, "body": {"type": "null"}} for i in range(100)),
    ]
    found = clean_apis(raw, lambda path: path.startswith("/") and not path.startswith("//"))
    assert len(found) == 30  # the cap, whatever the box sent
    first, empty, nested = found[:3]
    names = [k["name"] for k in first["body"]["keys"]]
    assert len(names) == MAX_KEYS and all(re.fullmatch(r"k\d+", n) for n in names)
    assert {k["type"] for k in first["body"]["keys"]} == {"number"}
    assert first["body"]["other_keys"] == 0 and "secret" not in first["body"]
    assert (empty["path"], empty["body"]["item"]) == ("/api/e", None)
    # Depth 2 at most: a list's first item carries no item of its own.
    assert nested["status"] == 204 and nested["body"]["item"] == {
        "type": "array",
        "keys": [],
        "other_keys": 0,
    }
    schemas.validate("exploration/app_map", _app_map(found))
    envelope = copy.deepcopy(ENVELOPE)
    envelope["app_map"]["apis"] = found
    schemas.validate("handoff/envelope", envelope)


def test_a_rendering_cut_to_the_budget_keeps_the_first_shapes_and_counts_the_rest():
    keys = [{"name": f"{'k' * 36}{i:04d}", "type": "string"} for i in range(MAX_KEYS)]
    apis = [{"path": f"/api/r{i}", "status": 200, "body": _object(keys)} for i in range(30)]
    envelope = copy.deepcopy(ENVELOPE)
    envelope["app_map"]["apis"] = apis
    rendered = json.loads(render_envelope(envelope, budget_tokens=6000))
    shown = rendered["app_map"]["apis"]
    assert 0 < len(shown) < 30 and shown == apis[: len(shown)]
    assert rendered["rendering"]["omitted"]["app_map.apis"] == 30 - len(shown)
    assert text_tokens(canonical_text(rendered)) <= 6000
    assert rendered["app_map"]["pages"]  # the pages keep the larger share


def test_the_shape_reads_back_from_its_own_words():
    text = describe(200, NOTES_SHAPE)
    assert parse(text) == {
        "type": "array",
        "keys": [],
        "item": {"type": "object", "keys": [("id", "number"), ("text", "string")]},
    }
    assert summary("/api/v1/notes", NOTES_SHAPE) == "a list of notes with id and text"
    wide = _object([{"name": n, "type": "boolean"} for n in "abcde"])
    assert summary("/api/flags", wide) == "a JSON object with a, b and c and 2 more keys"
    assert summary("/api/", {**NOTES_SHAPE, "item": None, "empty": True}) == "a JSON list"
    assert parse("responds with a 2xx status and a JSON body") is None


def test_a_hostile_case_cannot_break_the_generated_typescript():
    # A model wrote this case: its key names carry quotes, backticks, ${}, line breaks.
    keys = ", ".join(f"{json.dumps(n)} (string)" for n in HOSTILE_NAMES)
    case = {
        "id": "tc_api_get_evil",
        "title": "GET /api/evil answers `${x}`",
        "preconditions": [],
        "steps": ["Send GET /api/evil"],
        "expected": f"responds with status 200; the body is a JSON object with the keys {keys}",
        "priority": "high",
    }
    code = playwright_code([case])  # tree-sitter finds no error node; the file policy passes
    assert "expect(response.status()).toBe(200);" in code
    assert '"a\\"b": expect.any(String)' in code and '"line\\nbreak": expect.any(String)' in code
    assert '"${process.exit(1)}": expect.any(String)' in code  # a plain string, not a template
    assert '"\\u2028": expect.any(String)' in code and "\u2028" not in code
    assert '"__proto__": expect' not in code  # it would set the prototype, checking nothing


def test_a_heal_may_not_drop_or_loosen_a_shape_assertion():
    view = {**APP_VIEW, "apis": [{"path": "/api/notes", "status": 200, "body": NOTES_SHAPE}]}
    request = crawl(NOTES_REPO) | {"depth_level": "core", "app_map": view}
    cases = generate_cases(request, "core")
    cases["test_cases"] = [c for c in cases["test_cases"] if c["id"] == "tc_api_get_notes"]
    code = playwright_code(cases)
    test = code[code.index("  test(") : code.rindex("});")]
    item = next(line for line in test.splitlines() if "objectContaining" in line)
    assert expectations.weakening(test, test) == []
    assert expectations.weakening(test, test.replace(item, "")) != []
    looser = item.replace('"id": expect.any(Number)', '"id": expect.anything()')
    assert expectations.weakening(test, test.replace(item, looser)) != []


def test_without_a_shape_the_title_says_only_the_status_is_checked():
    request = crawl(NOTES_REPO) | {"depth_level": "core"}
    cases = {c["id"]: c for c in generate_cases(request, "core")["test_cases"]}
    notes = cases["tc_api_get_notes"]
    assert notes["title"] == "GET /api/notes answers 2xx JSON (status only, shape not checked)"
    # A write test checks only that no server error answers, and its title claims no more.
    assert cases["tc_api_post_notes"]["title"] == (
        "POST /api/notes answers an empty payload without a server error"
    )
    view = {**APP_VIEW, "apis": [{"path": "/api/notes", "status": 200, "body": NOTES_SHAPE}]}
    shaped = {c["id"]: c for c in generate_cases(request | {"app_map": view}, "core")["test_cases"]}
    assert (
        shaped["tc_api_get_notes"]["title"]
        == "GET /api/notes answers a list of notes with id and text"
    )
    # The tests that check only the status rank after the stronger ones of their priority:
    # "/" is found after /api/notes, and only "/" has a known shape.
    view = {**APP_VIEW, "apis": [{"path": "/", "status": 200, "body": NOTES_SHAPE}]}
    ranked = generate_cases(request | {"app_map": view}, "core")["test_cases"]
    priority = next(c["priority"] for c in ranked if c["title"].startswith("GET / answers"))
    same = [c["title"] for c in ranked if c["priority"] == priority]
    weak = [t.endswith("(status only, shape not checked)") for t in same]
    assert weak == sorted(weak) and weak[-1] and not weak[0], same


def test_a_write_test_fails_when_its_route_answers_404():
    """A route the app does not have (a prefix missed at discovery) answers 404 below 500:
    the write test must not pass on it."""
    request = crawl(NOTES_REPO) | {"depth_level": "core"}
    cases = generate_cases(request, "core")
    cases["test_cases"] = [c for c in cases["test_cases"] if c["id"] == "tc_api_post_notes"]
    code = playwright_code(cases)
    assert "expect(response.status()).toBeLessThan(500);" in code
    assert "expect(response.status(), 'the route exists').not.toBe(404);" in code


def test_the_llm_prompts_ask_for_the_status_and_the_shape():
    prompts = Path(__file__).resolve().parent.parent / "agents" / "prompts"
    planner = " ".join((prompts / "test_case_generator.md").read_text().split())
    engineer = " ".join((prompts / "test_engineer.md").read_text().split())
    assert "Its apis list the GET requests that answered JSON" in planner
    assert '"GET /api/notes answers a list of notes with id and title"' in planner
    assert "(status only, shape not checked)" in planner
    assert "expect(response.status()).toBe(200)" in engineer
    assert "expect.objectContaining({ id: expect.any(Number)" in engineer
    assert "Never a value the exploration saw" in engineer


# --- live: explored in the sandbox, then verified --------------------------------------------


class ShapedNotes(NotesApp):
    """The notes service, plus an endpoint whose JSON is built to break a naive recorder."""

    HOSTILE = {
        **{f"key{i}": i for i in range(5000)},
        'quote"d': 1,
        "back`tick": 2,
        "${injected}": 3,
        "new\nline": 4,
        "deep": {"a": [[[[{"b": 1}]]]]},
    }

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == "/api/hostile":
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(self.HOSTILE).encode()]
        return super().__call__(environ, start_response)


def test_an_explored_shape_passes_first_time_and_catches_a_changed_type(tmp_path):
    chromium_path()
    app = ShapedNotes()
    with serving(app) as url:
        app.api_requests = 1  # past its warm-up 503
        crawler = crawl(NOTES_REPO)
        paths = start_paths(crawler, "/", 10) + ["/api/hostile"]
        app_map = explore_loopback(
            url, tmp_path / "shots", start_paths=paths, bounds=Bounds(10, 0, 40, 10, 1 << 20)
        )
        schemas.validate("exploration/app_map", app_map)
        apis = {record["path"]: record for record in app_map["apis"]}
        assert apis["/api/notes"] == {"path": "/api/notes", "status": 200, "body": NOTES_SHAPE}
        hostile = apis["/api/hostile"]["body"]
        assert len(hostile["keys"]) == 30 and hostile["other_keys"] == 5005 - 30
        assert "Buy milk" not in json.dumps(app_map["apis"])  # shapes, never values

        request = crawler | {"app_map": app_view(app_map, crawler), "depth_level": "core"}
        (case,) = [
            c
            for c in generate_cases(request, "core")["test_cases"]
            if c["id"] == "tc_api_get_notes"
        ]
        assert case["title"] == "GET /api/notes answers a list of notes with id and text"
        files = playwright_files([case])
        (test,) = verified(files, url, tmp_path / "evidence")["tests"]
        assert (test["status"], test["attempts"]) == ("passed", 1), test

        app.notes[0]["id"] = "1"  # the API now answers its ids as strings
        (test,) = verified(files, url, tmp_path / "evidence-changed")["tests"]
    assert test["status"] != "passed" and "Number" in test["error"], test
