"""Routes found at the source, as each framework defines them: one realistic layout per
pattern, crawled the way a `standard` run crawls it (depth filter, read budget, rules)."""

from __future__ import annotations

import time

import pytest

from agents.offline import MAX_READS, detect, plan_reads
from agents.offline.common import MAX_FINDINGS, clean_route
from agents.offline.stack import MAX_ITEMS
from repositories.depth import DEPTH_LEVELS, min_depth_level
from tests.offline_checks import assert_valid, crawl
from tests.samples_routes_py import LAYOUTS_PY, ROUTES_PY
from tests.samples_routes_real import LAYOUTS_REAL, ROUTES_REAL
from tests.samples_routes_web import LAYOUTS_WEB, PAGES_WEB, ROUTES_WEB

LAYOUTS = {**LAYOUTS_PY, **LAYOUTS_WEB, **LAYOUTS_REAL}
ROUTES = {**ROUTES_PY, **ROUTES_WEB, **ROUTES_REAL}


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


# --- hostile layouts ----------------------------------------------------------------------


def _boot(folder: str, url: str) -> str:
    """A boot module in the examples/mvc style reading `folder` and mapping `list` to `url`."""
    return (
        "var fs = require('fs'); var path = require('path');\n"
        f"module.exports = function(app){{ var dir = path.join(__dirname, {folder});\n"
        "fs.readdirSync(dir).forEach(function(name){ var obj = require(path.join(dir, name));\n"
        "var name = obj.name || name; var method; var url;\n"
        f"for (var key in obj) {{ switch (key) {{ case 'list': method = 'get'; url = {url};"
        " break; }\n app[method](url, obj[key]); } }); };\n"
    )


_FLASK_CHAIN = "".join(
    f'b{i} = Blueprint("b{i}", __name__, url_prefix="/n{i}")\n'
    f"b{i}.register_blueprint(b{i + 1})\n@b{i}.get('/x')\ndef v{i}(): pass\n"
    for i in range(300)
)
HOSTILE = {
    "flask": {
        "requirements.txt": "flask\n",
        "app.py": "from flask import Flask, Blueprint\napp = Flask(__name__)\n"
        + _FLASK_CHAIN  # 300 nested blueprints, the last registering the first: a cycle
        + "app.register_blueprint(b0)\nb300 = Blueprint('z', __name__)\n"
        + "b300.register_blueprint(b0)\n"
        + "@b0.route('/q\"uote')\ndef q(): pass\n@b0.route('/t${x}')\ndef t(): pass\n"
        + "b0.add_url_rule('/`tick`', view_func=q)\nb0.add_url_rule('/ok', view_func=q)\n",
    },
    "django": {
        "requirements.txt": "django\n",
        "a/urls.py": 'from django.urls import include, path\nurlpatterns = [path("a/", '
        'include("b.urls")), path("self/", include(loop)), path("q\\"x/", v)]\n'
        "loop = [path('l/', include(loop)), path('in/', v)]\n",
        "b/urls.py": 'from django.urls import include, path\nurlpatterns = [path("b/", '
        'include("a.urls")), path("${x}/", v), path("deep/", '
        + "include([path('d/', " * 100
        + "v"
        + ")])" * 100
        + ")]\n",
    },
    "express": {
        "package.json": '{"dependencies": {"express": "4"}}',
        "a.js": "const express = require('express');\nconst app = express();\n"
        "const r = express.Router();\nr.use('/r', app);\napp.use('/a', r);\n"
        "app.use('/b', require('./b'));\nr.get('/`x`', h);\napp.get('/ok', h);\n",
        "b.js": "const express = require('express');\nconst router = express.Router();\n"
        "router.use('/a', require('./a'));\nrouter.get(\"/q'x\", h);\nmodule.exports = router;\n",
        "lib/boot.js": _boot("'..', 'controllers'", "'/' + name + 's'"),
        "lib/escape.js": _boot("'..', '..', '..', 'etc'", "'/' + name"),
        "lib/unknown.js": _boot("'..', 'controllers'", "'/' + secret + name"),
        "controllers/evil/index.js": 'exports.name = "x\'/${y}";\nexports.list = function(){};\n',
        "controllers/ok/index.js": "exports.list = function(){};\n",
    },
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_layouts_terminate_with_clean_routes(name: str) -> None:
    started = time.monotonic()
    stack = crawl(HOSTILE[name])["detected_stack"]
    assert time.monotonic() - started < 5
    found = [r["path"] for r in stack["routes"]] + [p["route"] for p in stack["pages"]]
    assert found, "the clean routes beside the hostile ones are still found"
    for route in found:
        assert clean_route(route) == route and not set("\"'`$\\ ") & set(route), route
    if name == "express":  # the boot file's own folder only, and only clean names
        assert {(r["method"], r["path"]) for r in stack["routes"]} >= {("GET", "/oks")}
        assert not [r for r in stack["routes"] if "etc" in r["file"] or "evil" in r["path"]]


def test_a_huge_urlconf_is_bounded() -> None:
    rows = "".join(f'    path("p{i}/<int:pk>/", views.v{i}),\n' for i in range(250_000))
    repo = {"requirements.txt": "django\n", "site/urls.py": f"urlpatterns = [\n{rows}]\n"}
    assert len(repo["site/urls.py"]) > 10_000_000
    # CPU seconds, not wall time: a quadratic reader would take minutes; a loaded machine
    # must not fail a linear one.
    started = time.process_time()
    entry_points, stack = detect(sorted(repo), repo)
    assert time.process_time() - started < 10
    assert 0 < len(stack["routes"]) <= MAX_ITEMS and len(stack["routes"]) <= MAX_FINDINGS


def test_a_prefix_constant_set_twice_is_not_guessed() -> None:
    """`prefix=settings.API_V1_STR` is read where the constant is set once; set to two values
    (or to something not a path) it is not guessed: the routes keep the prefixes known."""
    repo = dict(LAYOUTS["fastapi_template"])
    assert ("GET", "/api/v1/utils/health-check/") in {
        (r["method"], r["path"]) for r in crawl(repo)["detected_stack"]["routes"]
    }
    repo["app/core/staging.py"] = 'class Staging:\n    API_V1_STR: str = "/api/v2"\n'
    routes = {(r["method"], r["path"]) for r in crawl(repo)["detected_stack"]["routes"]}
    assert ("GET", "/utils/health-check/") in routes
    assert not any(path.startswith(("/api/v1", "/api/v2")) for _, path in routes)
    repo["app/core/staging.py"] = 'API_V1_STR = "javascript:alert(1)"\n'
    routes = {(r["method"], r["path"]) for r in crawl(repo)["detected_stack"]["routes"]}
    assert ("GET", "/api/v1/utils/health-check/") in routes


def test_an_imported_blueprint_takes_the_prefix_it_is_registered_with() -> None:
    """microblog's `@bp.route` in app/auth/routes.py, `bp` imported from app/auth: renaming the
    registration's prefix moves every route of that blueprint, and only those."""
    repo = dict(LAYOUTS["microblog"])
    repo["app/__init__.py"] = repo["app/__init__.py"].replace("'/auth'", "'/account'")
    routes = {(r["method"], r["path"]) for r in crawl(repo)["detected_stack"]["routes"]}
    assert ("POST", "/account/login") in routes and ("GET", "/auth/login") not in routes
    assert ("GET", "/explore") in routes and ("POST", "/api/tokens") in routes


def test_fastapi_mounts_its_schema_and_docs_pages_unless_told_otherwise() -> None:
    # fastapi/applications.py: openapi_url="/openapi.json", docs_url="/docs",
    # redoc_url="/redoc"; None turns one off (no schema: no docs page either).
    def routes(call: str) -> set[tuple[str, str]]:
        repo = {
            "requirements.txt": "fastapi\n",
            "main.py": f"from fastapi import FastAPI\napp = {call}\n\n@app.get('/x')\ndef x():\n    pass\n",
        }
        return {(r["method"], r["path"]) for r in crawl(repo)["detected_stack"]["routes"]}

    docs = {("GET", "/docs"), ("GET", "/openapi.json"), ("GET", "/redoc")}
    assert routes("FastAPI()") == {("GET", "/x"), *docs}
    assert routes('FastAPI(docs_url="/api/docs", redoc_url=None)') == {
        ("GET", "/x"),
        ("GET", "/api/docs"),
        ("GET", "/openapi.json"),
    }
    assert routes("FastAPI(openapi_url=None)") == {("GET", "/x")}
    assert routes("FastAPI(docs_url=settings.DOCS)") == {("GET", "/x"), *docs - {("GET", "/docs")}}
