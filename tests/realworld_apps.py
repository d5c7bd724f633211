"""The vendored real apps of tests/fixtures/realworld (scripts/realworld.py measures them)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

REALWORLD = Path(__file__).resolve().parent / "fixtures" / "realworld"
SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
# The suite, in the order the benchmark runs it: app folder → held out. Developers tune the
# engine on the others; the held-out apps measure it on apps it was not fitted to
# (docs/benchmarks.md, "`realworld.py`: real apps").
SUITE: dict[str, bool] = {
    "flaskr": False,
    "django-polls": False,
    "express-mvc": False,
    "nextjs-dynamic-routing": False,
    "react-router-auth": False,
    "todomvc-es5": False,
    "fastapi-jwt": False,
    "todomvc-svelte": True,
    "microblog": True,
    "express-auth": True,
    "express-web-service": True,
}
HELD_OUT = frozenset(k for k, held in SUITE.items() if held)
# The measures and our provenance note: not the app's, so never crawled.
NOT_CRAWLED = ("routes.json", "README.md", "behaviours.yaml")
# What tools leave beside the files (ruff caches under flaskr's own pyproject.toml, bytecode):
# git ignores them and a crawl of the repository never sees them.
_LEFT_BY_TOOLS = {"__pycache__", ".ruff_cache", ".pytest_cache", "node_modules"}


def app_repository(name: str) -> dict[str, str]:
    """The app's files as a crawler of its repository reads them: path → text."""
    folder = REALWORLD / name
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and rel.as_posix() not in NOT_CRAWLED:
            if not _LEFT_BY_TOOLS & set(rel.parts):
                out[rel.as_posix()] = path.read_text()
    return out


def script(name: str):
    """A module of scripts/ (run as files, not installed as a package), for the tests."""
    if str(SCRIPTS) not in sys.path:  # the scripts import each other by name
        sys.path.insert(0, str(SCRIPTS))
    return importlib.import_module(name)
