"""The API keeps its released clients working: the document it serves is compared with the
newest released one (docs/api/openapi-X.Y.Z.json), and a breaking change fails unless the
CHANGELOG's ``## [Unreleased]`` announces it under ``### Breaking`` (docs/releasing.md).
The comparer (amtp_site/api_compat.py) is tested on hand-made documents: each kind of break
is found, additions are not."""

import copy
import json
import tomllib
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from amtp_site.api_compat import (
    Break,
    announced_breaks,
    breaking_changes,
    is_announced,
    newest_release,
    release_documents,
)
from runs.management.commands import openapi_document

ROOT = Path(__file__).resolve().parent.parent
RELEASES = ROOT / "docs" / "api"


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: dict) -> dict:
    return {"anyOf": [schema, {"type": "null"}]}


def json_body(schema: dict) -> dict:
    return {"content": {"application/json": {"schema": schema}}}


# A small API in the shape django-ninja writes it: references, Optional as anyOf with null.
BASE = {
    "openapi": "3.1.0",
    "paths": {
        "/api/things": {
            "get": {
                "parameters": [
                    {
                        "in": "query",
                        "name": "limit",
                        "required": False,
                        "schema": {"type": "integer"},
                    }
                ],
                "responses": {"200": json_body({"type": "array", "items": ref("Thing")})},
            },
            "post": {
                "requestBody": json_body(ref("ThingIn")),
                "responses": {"201": json_body(ref("Thing")), "422": json_body({})},
            },
        },
        "/api/things/{id}": {
            "get": {
                "parameters": [
                    {"in": "path", "name": "id", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {"200": json_body(ref("Thing"))},
            },
            "delete": {"responses": {"204": {"description": "gone"}}},
        },
    },
    "components": {
        "schemas": {
            "Status": {"type": "string", "enum": ["open", "done"]},
            "Thing": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "count": {"type": "integer"},
                    "status": ref("Status"),
                    "owner": nullable(ref("Owner")),
                    "tags": {"type": "array", "items": ref("Tag")},
                },
                "required": ["id", "count", "status", "owner", "tags"],
            },
            "Owner": {
                "type": "object",
                "properties": {"login": {"type": "string"}},
                "required": ["login"],
            },
            "Tag": {"type": "object", "properties": {"name": {"type": "string"}}},
            "ThingIn": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "kind": nullable(ref("Kind")),
                    "size": {"type": "integer"},
                    "note": {"type": "string"},
                },
                "required": ["name"],
            },
            "Kind": {"type": "string", "enum": ["a", "b"]},
        }
    },
}


def changed(edit) -> list[str]:
    new = copy.deepcopy(BASE)
    edit(new)
    return [str(b) for b in breaking_changes(BASE, new)]


def schemas(doc: dict) -> dict:
    return doc["components"]["schemas"]


def test_the_same_document_has_no_break():
    assert breaking_changes(BASE, copy.deepcopy(BASE)) == []


def test_a_removed_path_or_method_breaks():
    assert changed(lambda d: d["paths"].pop("/api/things/{id}")) == [
        "GET /api/things/{id}: removed",
        "DELETE /api/things/{id}: removed",
    ]
    assert changed(lambda d: d["paths"]["/api/things"].pop("post")) == ["POST /api/things: removed"]


def test_a_removed_success_response_breaks_a_removed_error_does_not():
    def moved(d):
        answers = d["paths"]["/api/things"]["post"]["responses"]
        answers["200"] = answers.pop("201")
        answers.pop("422")

    assert changed(moved) == ["POST /api/things 201: response removed"]


def test_a_removed_response_field_breaks_wherever_it_is():
    assert changed(lambda d: schemas(d)["Thing"]["properties"].pop("count")) == [
        "GET /api/things 200 [].count: field removed",
        "POST /api/things 201 count: field removed",
        "GET /api/things/{id} 200 count: field removed",
    ]
    nested = changed(lambda d: schemas(d)["Owner"]["properties"].pop("login"))
    assert "GET /api/things/{id} 200 owner.login: field removed" in nested
    in_items = changed(lambda d: schemas(d)["Tag"]["properties"].pop("name"))
    assert "GET /api/things/{id} 200 tags[].name: field removed" in in_items


def test_a_response_field_no_longer_always_present_breaks():
    assert "GET /api/things/{id} 200 status: no longer always present" in changed(
        lambda d: schemas(d)["Thing"]["required"].remove("status")
    )


def test_a_removed_enum_value_breaks_in_a_response_and_a_request():
    response = changed(lambda d: schemas(d)["Status"]["enum"].remove("done"))
    assert 'GET /api/things/{id} 200 status: enum value "done" removed' in response
    assert changed(lambda d: schemas(d)["Kind"]["enum"].remove("b")) == [
        'POST /api/things body kind: enum value "b" removed'
    ]


def test_a_new_required_request_field_or_parameter_breaks():
    def new_field(d):
        schemas(d)["ThingIn"]["properties"]["colour"] = {"type": "string"}
        schemas(d)["ThingIn"]["required"].append("colour")

    assert changed(new_field) == ["POST /api/things body colour: new required field"]
    assert changed(lambda d: schemas(d)["ThingIn"]["required"].append("size")) == [
        "POST /api/things body size: became required"
    ]

    def new_parameter(d):
        parameters = d["paths"]["/api/things"]["get"]["parameters"]
        parameters[0]["required"] = True
        parameters.append(
            {"in": "query", "name": "team", "required": True, "schema": {"type": "string"}}
        )

    assert changed(new_parameter) == [
        "GET /api/things query limit: became required",
        "GET /api/things query team: new required parameter",
    ]


def test_a_changed_type_breaks():
    def count(d):
        schemas(d)["Thing"]["properties"]["count"] = {"type": "string"}

    assert "GET /api/things/{id} 200 count: type integer -> string" in changed(count)

    def size(d):
        schemas(d)["ThingIn"]["properties"]["size"] = {"type": "string"}

    assert changed(size) == ["POST /api/things body size: type integer -> string"]

    def nulled(d):  # a response that may now be null gives a type a client did not expect
        schemas(d)["Thing"]["properties"]["count"] = nullable({"type": "integer"})

    assert "GET /api/things/{id} 200 count: type integer -> integer|null" in changed(nulled)


def test_additions_and_wider_requests_do_not_break():
    def additions(d):
        d["paths"]["/api/others"] = {"get": {"responses": {"200": json_body({})}}}
        d["paths"]["/api/things/{id}"]["patch"] = {"responses": {"200": json_body({})}}
        schemas(d)["Thing"]["properties"]["colour"] = {"type": "string"}
        schemas(d)["Thing"]["required"].append("colour")
        schemas(d)["ThingIn"]["properties"]["colour"] = {"type": "string"}
        schemas(d)["Kind"]["enum"].append("c")
        schemas(d)["ThingIn"]["required"] = []  # name optional now: still accepted
        schemas(d)["ThingIn"]["properties"]["size"] = {"type": "number"}  # 1.5 accepted too
        schemas(d)["ThingIn"]["properties"]["note"] = nullable({"type": "string"})
        d["paths"]["/api/things"]["get"]["parameters"].append(
            {"in": "query", "name": "team", "required": False, "schema": {"type": "string"}}
        )
        schemas(d)["Thing"]["description"] = "A thing, described."

    assert changed(additions) == []


def test_a_response_narrowed_from_number_to_integer_does_not_break_the_reverse_does():
    def count(schema):
        return lambda d: schemas(d)["Thing"]["properties"].update(count=schema)

    base = copy.deepcopy(BASE)
    count({"type": "number"})(base)
    assert breaking_changes(base, copy.deepcopy(BASE)) == []  # number -> integer
    assert "GET /api/things/{id} 200 count: type integer -> number" in changed(
        count({"type": "number"})
    )


def test_references_that_loop_are_compared_once():
    def loop(d):
        schemas(d)["Owner"]["properties"]["manager"] = nullable(ref("Owner"))

    looped = copy.deepcopy(BASE)
    loop(looped)
    again = copy.deepcopy(looped)
    schemas(again)["Owner"]["properties"].pop("login")
    found = [str(b) for b in breaking_changes(looped, again)]
    assert "GET /api/things/{id} 200 owner.login: field removed" in found
    assert "GET /api/things/{id} 200 owner.manager.login: field removed" in found


# --- the CHANGELOG rule ----------------------------------------------------------------------

CHANGELOG = """# Changelog

## [Unreleased]

### Added

- `GET /api/things/{id}` has `colour`; `count` is gone (in the wrong section).

### Breaking

- `GET /api/things/{id}`: the `count` field is removed; read
  `tags[].name` instead.
- `DELETE /api/things/{id}` is gone.

## [1.0.0] - 2026-11-29

### Breaking

- `POST /api/things`: `size` is required.
"""


def test_a_break_is_announced_by_a_bullet_naming_its_operation_and_field():
    bullets = announced_breaks(CHANGELOG)
    assert len(bullets) == 2 and "`tags[].name` instead." in bullets[0]
    count = Break("GET /api/things/{id}", "200 count", "field removed")
    assert is_announced(count, bullets)
    assert is_announced(Break("DELETE /api/things/{id}", "", "removed"), bullets)
    assert is_announced(Break("GET /api/things/{id}", "200 tags[].name", "x"), bullets)
    # Named only in another section, in a released version, or without its field: not.
    assert not is_announced(Break("GET /api/things/{id}", "200 colour", "x"), bullets)
    assert not is_announced(Break("POST /api/things", "body size", "became required"), bullets)
    assert not is_announced(Break("GET /api/things", "200 [].count", "field removed"), bullets)
    assert announced_breaks("# Changelog\n\n## [Unreleased]\n\n### Added\n\n- x\n") == []


# --- the API as it is ------------------------------------------------------------------------


def served() -> dict:
    return Client().get("/api/openapi.json").json()


def test_the_api_has_no_unannounced_break_since_the_newest_release():
    documents = release_documents(RELEASES)
    assert documents and documents[0].name == "openapi-1.0.0.json"
    bullets = announced_breaks((ROOT / "CHANGELOG.md").read_text())
    breaks = breaking_changes(newest_release(RELEASES), served())
    unannounced = [str(b) for b in breaks if not is_announced(b, bullets)]
    assert unannounced == [], (
        f"breaking changes since {documents[-1].name}: announce each under '### Breaking' in "
        "CHANGELOG.md's [Unreleased] (a bullet naming the operation and the `field`), or "
        "keep the API compatible"
    )


def test_each_release_document_shows_its_version_as_the_api_shows_the_current_one(settings):
    """A release's document is written after its version is set in pyproject.toml."""
    for path in release_documents(RELEASES):
        version = path.name.removeprefix("openapi-").removesuffix(".json")
        assert json.loads(path.read_text())["info"]["version"] == version
    assert served()["info"]["version"] == settings.AMTP_VERSION
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert settings.AMTP_VERSION == pyproject["project"]["version"]


def test_a_field_removed_from_the_served_document_is_found():
    """The comparer on django-ninja's real output, not only on hand-made documents."""
    document = served()
    edited = copy.deepcopy(document)
    run_out = edited["components"]["schemas"]["RunDetailOut"]["properties"]
    run_out.pop("status")
    assert "GET /api/runs/{run_id} 200 status: field removed" in [
        str(b) for b in breaking_changes(document, edited)
    ]


def test_the_command_writes_the_document_as_served(tmp_path, monkeypatch):
    out = StringIO()
    call_command("openapi_document", stdout=out)
    assert json.loads(out.getvalue()) == served()
    monkeypatch.setattr(openapi_document, "RELEASES", tmp_path)
    call_command("openapi_document", "--release", "9.9.9", stdout=StringIO())
    assert json.loads((tmp_path / "openapi-9.9.9.json").read_text()) == served()
    with pytest.raises(CommandError, match="a release's document does not change"):
        call_command("openapi_document", "--release", "9.9.9")
    with pytest.raises(CommandError, match="expected MAJOR.MINOR.PATCH"):
        call_command("openapi_document", "--release", "../../x")
