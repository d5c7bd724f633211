"""The real apps of tests/fixtures/realworld (scripts/realworld.py starts and measures them;
this only checks what is cheap): each carries its licence, a README naming its source and a
route list that parses, and reading its files finds every route of that list."""

import json
import re

import pytest

from agents.offline import detect, plan_reads
from tests.realworld_apps import REALWORLD, app_repository

APPS = sorted(p.name for p in REALWORLD.iterdir() if p.is_dir())
LICENCE_TEXT = re.compile(r"Permission is hereby granted|Redistribution and use in source")


def test_the_suite_has_its_five_apps():
    assert APPS == [
        "django-polls",
        "express-mvc",
        "flaskr",
        "nextjs-dynamic-routing",
        "react-router-auth",
    ]


@pytest.mark.parametrize("name", APPS)
def test_each_app_has_its_licence_source_and_route_list(name):
    folder = REALWORLD / name
    assert LICENCE_TEXT.search((folder / "LICENSE").read_text()), f"{name}: LICENSE"
    readme = (folder / "README.md").read_text()
    assert re.search(r"https://github\.com/[\w.-]+/[\w.-]+", readme), f"{name}: no source"
    assert re.search(r"\b[0-9a-f]{40}\b", readme) or "docs/intro" in readme, f"{name}: commit"
    routes = json.loads((folder / "routes.json").read_text())["routes"]
    assert routes, f"{name}: empty route list"
    for route in routes:
        assert re.fullmatch(r"/[\w{}/.-]*", route["path"]), f"{name}: path {route['path']!r}"
        assert isinstance(route["login"], bool) and isinstance(route["in_source"], bool)
    assert len({r["path"] for r in routes}) == len(routes), f"{name}: a route listed twice"
    listed = {_shape(r["path"]) for r in routes}
    for form in json.loads((folder / "routes.json").read_text())["forms"]:
        assert _shape(form["page"]) in listed and form["submit"].strip(), f"{name}: {form}"


def _found(name: str) -> set[str]:
    """The paths the offline crawl finds in the app's files (what scripts/realworld.py
    crawls), trailing slashes dropped."""
    files = app_repository(name)
    paths = sorted(files)
    _entry_points, stack = detect(paths, {p: files[p] for p in plan_reads(paths)})
    found = [r["path"] for r in stack["routes"]] + [p["route"] for p in stack["pages"]]
    return {p.rstrip("/") or "/" for p in found}


def _shape(path: str) -> str:
    return re.sub(r"\{\w+\}", "{}", path.rstrip("/") or "/")


@pytest.mark.parametrize("name", APPS)
def test_reading_each_app_finds_every_route_of_its_list(name):
    routes = json.loads((REALWORLD / name / "routes.json").read_text())["routes"]
    found = {_shape(p) for p in _found(name)}
    missed = [r["path"] for r in routes if _shape(r["path"]) not in found]
    assert missed == [], f"{name}: the crawl does not find {missed}"
