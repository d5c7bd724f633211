"""The vendored real apps of tests/fixtures/realworld (scripts/realworld.py measures them)."""

from __future__ import annotations

from pathlib import Path

REALWORLD = Path(__file__).resolve().parent / "fixtures" / "realworld"
# The measure and our provenance note: not the app's, so never crawled.
NOT_CRAWLED = ("routes.json", "README.md")
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
