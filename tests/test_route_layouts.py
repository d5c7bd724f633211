"""Routes found at the source, as each framework defines them: one realistic layout per
pattern, crawled the way a `standard` run crawls it (depth filter, read budget, rules)."""

from __future__ import annotations

import pytest

from agents.offline import MAX_READS, plan_reads
from repositories.depth import DEPTH_LEVELS, min_depth_level
from tests.offline_checks import assert_valid, crawl
from tests.samples_routes_py import LAYOUTS_PY, ROUTES_PY
from tests.samples_routes_web import LAYOUTS_WEB, PAGES_WEB, ROUTES_WEB

LAYOUTS = {**LAYOUTS_PY, **LAYOUTS_WEB}
ROUTES = {**ROUTES_PY, **ROUTES_WEB}


def at_depth(repo: dict[str, str], depth: str = "standard") -> dict[str, str]:
    """The files a crawl at `depth` sees (what `filter_tree` hands the crawler)."""
    rank = DEPTH_LEVELS.index(depth)
    return {
        path: text
        for path, text in repo.items()
        if (level := min_depth_level(path)) is not None and DEPTH_LEVELS.index(level) <= rank
    }


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layout_routes_are_found_at_standard_depth(name: str) -> None:
    repo = at_depth(LAYOUTS[name])
    output = crawl(repo)
    assert_valid("repo_crawler/output", output)
    stack = output["detected_stack"]
    routes = {(r["method"], r["path"]) for r in stack["routes"]}
    assert routes == ROUTES[name], (ROUTES[name] - routes, routes - ROUTES[name])
    pages = {p["route"] for p in stack["pages"]}
    assert pages == PAGES_WEB.get(name, set()), pages ^ PAGES_WEB.get(name, set())
    for item in stack["routes"] + stack["pages"]:
        assert item["file"] in repo


def test_flaskr_blog_module_is_an_entry_point() -> None:
    output = crawl(at_depth(LAYOUTS["flaskr"]))
    kinds = {e["path"]: e["kind"] for e in output["entry_points"]}
    assert kinds["flaskr/blog.py"] == "api_route" and kinds["flaskr/auth.py"] == "api_route"
    files = {(r["method"], r["path"]): r["file"] for r in output["detected_stack"]["routes"]}
    assert files[("POST", "/{id}/delete")] == "flaskr/blog.py"
    assert files[("GET", "/hello")] == "flaskr/__init__.py"


def test_express_boot_routes_point_at_their_controllers() -> None:
    stack = crawl(LAYOUTS["express_mvc"])["detected_stack"]
    files = {(r["method"], r["path"]): r["file"] for r in stack["routes"]}
    assert files[("GET", "/users")] == "controllers/user/index.js"
    assert files[("POST", "/user/{user_id}/pet")] == "controllers/user-pet/index.js"
    assert "express" in stack["frameworks"]


def test_next_docs_folder_is_routes_not_documentation() -> None:
    for path in ("pages/docs/index.tsx", "src/pages/docs/a.tsx", "app/docs/[slug]/page.tsx"):
        assert min_depth_level(path) == "core", path
    assert min_depth_level("docs/architecture.tsx") == "deep"  # a real docs folder
    assert min_depth_level("pages/docs/notes.md") == "deep"  # markdown stays documentation
    assert min_depth_level("website/docs/pages/x.tsx") == "deep"  # docs above pages/


def test_controllers_and_boot_file_are_read_within_the_budget() -> None:
    repo = dict(LAYOUTS["express_mvc"])
    for i in range(60):
        repo[f"controllers/widget{i:02d}/index.js"] = f"exports.list = function(){{}}; // {i}\n"
    reads = plan_reads(sorted(repo))
    assert len(reads) == MAX_READS
    assert {"package.json", "index.js", "lib/boot.js", "controllers/user/index.js"} <= set(reads)
    routes = {(r["method"], r["path"]) for r in crawl(repo)["detected_stack"]["routes"]}
    assert ROUTES["express_mvc"] <= routes
