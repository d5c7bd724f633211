"""Repo Crawler brains: which files to read, and what stack, routes, pages and screens exist.

`plan_reads(paths)` picks at most `MAX_READS` files (manifests first, then likely route, page
and screen files). `detect(paths, read)` runs the per-stack rules over the tree and the file
contents and returns the contract's `entry_points` and a `detected_stack` of this shape:

    {"runtime": "node", "runtimes": [...], "frameworks": ["express", "react"],
     "languages": [...], "platform": "web" | "mobile" | "unknown",
     "suggested_framework": "playwright" | "maestro", "base_url": "http://localhost:3000",
     "routes": [{"method": "GET", "path": "/api/users/{id}", "file": "...", "json": true}],
     "pages": [{"route": "/about", "file": "...", "heading": "About us"}],
     "screens": [{"name": "Settings", "file": "...", "route": "/settings", "title": "...",
                  "tab_label": "...", "deep_link": "acme://settings", "root": true}],
     "app_id": "com.acme.app", "app_ids": {"android": ..., "ios": ...}, "scheme": "acme",
     "generator": "amtp-offline-rules"}

Route parameters are normalised to `{name}` whatever the framework's own syntax. Only paths
from the tree are ever reported, and repository text is treated as data: it can add routes
(validated by `common.clean_route`) but never choose files, paths or tools.
"""

from __future__ import annotations

import posixpath
import re

from .api_keys import api_key_of
from .common import Findings
from .mobile_rules import detect_mobile
from .node_rules import detect_node
from .python_rules import detect_python
from .spa_rules import detect_spa

MAX_READS = 40
MAX_ITEMS = 300  # routes / pages / screens kept; beyond this the cases are capped anyway

_SKIP_DIRS = re.compile(
    r"(^|/)(node_modules|\.git|\.next|dist|build|out|coverage|vendor|venv|\.venv|env|"
    r"__pycache__|Pods|DerivedData|\.expo|\.gradle|migrations|site-packages|\.idea)/"
)
_MANIFEST = re.compile(
    r"(^|/)(package\.json|requirements[\w.-]*\.txt|pyproject\.toml|Pipfile|setup\.py|"
    r"manage\.py|app\.json|app\.config\.(js|ts)|next\.config\.\w+|build\.gradle(\.kts)?|"
    r"AndroidManifest\.xml|Info\.plist|project\.pbxproj|strings\.xml)$"
)
# (score, pattern): higher scores are read first when the budget is tight.
_CANDIDATES = (
    (90, r"(^|/)urls\.py$"),
    (90, r"(^|/)(app|main|server|index|wsgi|asgi|__init__)\.(py|js|ts|mjs|cjs)$"),
    # A boot module that mounts a controllers folder (Express's examples/mvc `lib/boot.js`).
    (90, r"(^|/)(boot|bootstrap|loader|autoload|load-?routes)\.(js|ts|mjs|cjs)$"),
    (85, r"(^|/)(routes?|routers?|api|controllers|endpoints|blueprints)/[^/]+\.(py|[jt]sx?|mjs)$"),
    (80, r"(^|/)[^/]*(routes?|router|views|api|auth)\.(py|js|ts|jsx|tsx)$"),
    (80, r"(^|/)(App|main|index|routes|router)\.(jsx|tsx)$"),
    (80, r"(?i)(^|/)[^/]*(routes?|router|navigat\w*)\.(jsx|tsx|js|ts)$"),
    (75, r"(^|/)app/(.+/)?_layout\.(tsx|jsx|ts|js)$"),
    (70, r"(^|/)app/(.+/)?(page|route)\.(tsx|jsx|ts|js)$"),
    (70, r"(^|/)(pages|app)/api/.+\.(ts|js)$"),
    (65, r"(^|/)(MainActivity|[A-Z]\w*Activity)\.(kt|java)$"),
    (65, r"(^|/)(ContentView|[A-Z]\w*App)\.swift$"),
    (60, r"(^|/)[A-Z]\w*(View|Screen|ViewController)\.(swift|kt|tsx|jsx)$"),
    (55, r"(^|/)(src/)?(app|pages|screens)/.+\.(tsx|jsx)$"),
    # Any other server-side module (a Flask blueprint named `blog.py`, a router `admin.js`):
    # read last, when the budget allows.
    (40, r"\.(py|js|ts|mjs|cjs)$"),
)
# Compiled here, i.e. once in the agent process template, not in every crawl (~2 ms each).
_CANDIDATES = tuple((score, re.compile(pattern)) for score, pattern in _CANDIDATES)
_TEST_OR_SPEC = re.compile(r"\.(test|spec)\.")
_TEST_CONFIG = re.compile(r"(playwright|cypress|jest|vitest)\.config\.\w+|conftest\.py")
_TEST_DIR = re.compile(r"(^|/)(e2e|tests?|__tests__|\.maestro)/")
_TEST_FILE = re.compile(r"\.(test|spec)\.(js|ts|jsx|tsx)$|(^|/)test_\w+\.py$")


def _skipped(path: str) -> bool:
    return bool(_SKIP_DIRS.search(path)) or path.endswith((".min.js", ".d.ts", ".map"))


def plan_reads(paths: list[str]) -> list[str]:
    """At most MAX_READS tree paths worth reading, best first (deterministic)."""
    scored: dict[str, int] = {}
    for path in paths:
        if not isinstance(path, str) or _skipped(path) or _TEST_OR_SPEC.search(path):
            continue
        if _TEST_DIR.search(path) or _TEST_FILE.search(path) or _TEST_CONFIG.search(path):
            continue
        if _MANIFEST.search(path):
            # Root manifests beat nested ones; an app module's manifest beats a library's.
            scored[path] = 100 - 2 * path.count("/")
            continue
        for score, pattern in _CANDIDATES:
            if pattern.search(path):
                scored[path] = score - path.count("/")
                break
    ranked = sorted(scored, key=lambda p: (-scored[p], p))
    return ranked[:MAX_READS]


_TEST_SOURCE = re.compile(r"\.(py|js|ts|tsx|ya?ml|swift|kt)$")


def _test_fixtures(paths: list[str], found: Findings) -> None:
    for path in paths:
        name = posixpath.basename(path)
        if _TEST_CONFIG.fullmatch(name):
            found.mark(path, "test_fixture")
        elif _TEST_DIR.search(path) and _TEST_SOURCE.search(path):
            found.mark(path, "test_fixture")
        elif _TEST_FILE.search(path):
            found.mark(path, "test_fixture")


def detect(paths: list[str], read: dict[str, str]) -> tuple[list[dict], dict]:
    """(entry_points, detected_stack) from the tree paths and the contents of the files read."""
    tree = [p for p in dict.fromkeys(paths) if isinstance(p, str) and p and not _skipped(p)]
    known = set(tree)
    files = {p: t for p, t in (read or {}).items() if p in known and isinstance(t, str)}
    found = Findings()
    detect_node(tree, files, found)
    detect_spa(tree, files, found)
    detect_python(tree, files, found)
    detect_mobile(tree, files, found)
    _test_fixtures(tree, found)
    entry_points = [
        {"path": path, "kind": kind}
        for path, kind in sorted(found.entries.items())
        if path in known  # the rules only ever see tree paths; this makes it a guarantee
    ]
    stack = _stack(found)
    if stack["platform"] == "web" and (key := api_key_of(files)):
        stack["api_key"] = key  # where the app reads an API key (api_keys.py)
    return entry_points, stack


def _stack(found: Findings) -> dict:
    mobile = bool({"react-native", "android"} & set(found.frameworks)) or "swift" in (
        found.runtimes
    )
    web = bool(found.routes or found.pages)
    platform = "mobile" if mobile else ("web" if web or found.frameworks else "unknown")
    runtime = found.runtimes[0] if found.runtimes else "unknown"
    if mobile:  # a helper script's language must not hide the app's own runtime
        runtime = "node" if "react-native" in found.frameworks else runtime
        runtime = "jvm" if "android" in found.frameworks and runtime != "node" else runtime
        runtime = "swift" if runtime not in ("node", "jvm") else runtime
    stack: dict = {
        "generator": "amtp-offline-rules",
        "runtime": runtime,
        "runtimes": found.runtimes,
        "frameworks": found.frameworks,
        "languages": found.languages,
        "platform": platform,
        "suggested_framework": "maestro" if mobile else "playwright",
        "routes": sorted(found.routes, key=lambda r: (r["path"], r["method"]))[:MAX_ITEMS],
        "pages": sorted(found.pages, key=lambda p: p["route"])[:MAX_ITEMS],
        "screens": found.screens[:MAX_ITEMS],
    }
    if platform == "web":
        stack["base_url"] = found.base_url or "http://localhost:3000"
    app_id = found.app_ids.get("android") or found.app_ids.get("ios")
    if app_id:
        stack["app_id"] = app_id
        stack["app_ids"] = dict(sorted(found.app_ids.items()))
    if found.scheme:
        stack["scheme"] = found.scheme
    return stack
