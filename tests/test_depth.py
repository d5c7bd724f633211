"""Depth levels as tree filters, checked on a generated repository read through LocalGitHost."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from repositories import depth
from repositories.depth import (
    DEPTH_LEVELS,
    filter_tree,
    is_binary_path,
    looks_binary,
    min_depth_level,
)
from repositories.hosts.base import TreeEntry
from repositories.hosts.local import LocalGitHost
from tests.gitrepo import make_git_repo

# path -> the shallowest level that shows it (None: never shown)
EXPECTED = {
    # smoke: root manifests and shallow entry files
    "package.json": "smoke",
    "requirements.txt": "smoke",
    "manage.py": "smoke",
    "app.json": "smoke",
    "next.config.js": "smoke",
    "playwright.config.ts": "smoke",
    "README.md": "smoke",
    "App.tsx": "smoke",
    "src/index.ts": "smoke",
    "src/app/layout.tsx": "smoke",
    "src/app/page.tsx": "smoke",
    "mysite/wsgi.py": "smoke",
    "mysite/urls.py": "smoke",
    # core: route/page/screen files, depth-limited
    "src/app/dashboard/page.tsx": "core",
    "src/app/api/users/route.ts": "core",
    "src/screens/Home.tsx": "core",
    "blog/views.py": "core",
    "blog/templates/blog/views.html": "core",
    "pages/docs/intro.tsx": "core",  # a docs folder below pages/ or app/ holds routes
    "src/app/docs/[slug]/page.tsx": "core",
    # standard: other source and config
    "src/app/a/b/c/d/e/page.tsx": "standard",  # depth 8 > CORE_MAX_DEPTH
    "src/components/Button.tsx": "standard",
    "src/styles/globals.css": "standard",
    "mysite/settings.py": "standard",
    "blog/models.py": "standard",
    ".github/workflows/ci.yml": "standard",
    "tests.md.py": "standard",  # not a test or doc despite the name
    "src/Latest.kt": "standard",
    # deep: tests, docs, assets, very deep files
    "tests/test_api.py": "deep",
    "src/components/Button.test.tsx": "deep",
    "e2e/home.spec.ts": "deep",
    "src/FooTest.kt": "deep",
    "docs/guide.md": "deep",
    "docs/pages/intro.tsx": "deep",  # a docs folder above pages/ is documentation
    "pages/docs/guide.md": "deep",  # markdown stays documentation
    "CHANGELOG.md": "deep",
    "LICENSE": "deep",
    "public/logo.svg": "deep",
    "public/index.html": "deep",
    "a/b/c/d/e/f/g/h/i/j/k.ts": "deep",
    # never: dependencies, build output, caches, binaries, lockfiles, minified, junk
    "node_modules/react/index.js": None,
    "frontend/node_modules/x/package.json": None,
    ".venv/lib/site.py": None,
    "build/main.js": None,
    "dist/index.js": None,
    ".next/server/app.js": None,
    "ios/Pods/Foo/Foo.m": None,
    "blog/__pycache__/views.cpython-311.pyc": None,
    "pkg.egg-info/PKG-INFO": None,
    "coverage/lcov.info": None,
    "package-lock.json": None,
    "yarn.lock": None,
    "public/favicon.ico": None,
    "assets/logo.PNG": None,
    "fonts/Inter.woff2": None,
    "libs/thing.jar": None,
    "native/lib.so": None,
    "static/app.min.js": None,
    "static/app.js.map": None,
    ".DS_Store": None,
}

NESTED_GIT_ENTRIES = [".git/config", "sub/.git/HEAD", "x/.GIT/hooks/post-checkout"]


def _content(path: str) -> str | bytes:
    return b"\x89PNG\r\n\x1a\n\0\0" if is_binary_path(path) else f"// {path}\n"


@pytest.fixture
def host(tmp_path: Path) -> LocalGitHost:
    files = {path: _content(path) for path in EXPECTED}
    files["blob.dat"] = b"\0\1\2 binary without a telling extension"
    return LocalGitHost("acme/shop", make_git_repo(tmp_path / "repo", files))


@pytest.fixture
def tree(host: LocalGitHost) -> list[TreeEntry]:
    return host.tree(host.resolve_ref("main"))


def _paths(entries: list[TreeEntry]) -> set[str]:
    return {e.path for e in entries}


def test_levels_nest_strictly(tree: list[TreeEntry]) -> None:
    seen = [_paths(filter_tree(tree, level)) for level in DEPTH_LEVELS]
    for smaller, larger in zip(seen, seen[1:], strict=False):
        assert smaller < larger


@pytest.mark.parametrize("level", DEPTH_LEVELS)
def test_each_file_appears_exactly_from_its_level(tree: list[TreeEntry], level: str) -> None:
    shown = _paths(filter_tree(tree, level))
    rank = DEPTH_LEVELS.index(level)
    for path, first in EXPECTED.items():
        expected = first is not None and DEPTH_LEVELS.index(first) <= rank
        assert (path in shown) is expected, (level, path, first)


@pytest.mark.parametrize("level", DEPTH_LEVELS)
def test_never_dependencies_git_or_binaries(tree: list[TreeEntry], level: str) -> None:
    extra = [TreeEntry(path=p, size=1, sha="0" * 40) for p in NESTED_GIT_ENTRIES]
    shown = _paths(filter_tree(tree + extra, level))
    for path in shown:
        parts = path.lower().split("/")
        assert not {"node_modules", ".git", ".venv", "build", "dist"} & set(parts), path
        assert not is_binary_path(path), path


def test_filter_keeps_host_order_and_entries(tree: list[TreeEntry]) -> None:
    kept = filter_tree(tree, "standard")
    assert kept == [e for e in tree if e in kept]


def test_host_reported_binaries_are_dropped(tree: list[TreeEntry]) -> None:
    assert "blob.dat" in _paths(filter_tree(tree, "deep"))
    assert "blob.dat" not in _paths(filter_tree(tree, "deep", binary_paths={"blob.dat"}))


def test_unknown_level_is_refused(tree: list[TreeEntry]) -> None:
    with pytest.raises(ValueError, match="unknown depth level 'everything'"):
        filter_tree(tree, "everything")


@pytest.mark.parametrize(
    ("path", "binary"),
    [
        ("a/logo.png", True),
        ("Font.TTF", True),
        ("release.tar.gz", True),
        ("lib/x.so", True),
        ("app.jar", True),
        ("clip.mp4", True),
        ("src/app.ts", False),
        ("Makefile", False),
        (".env", False),
        ("icon.svg", False),
    ],
)
def test_is_binary_path(path: str, binary: bool) -> None:
    assert is_binary_path(path) is binary


def test_looks_binary() -> None:
    assert looks_binary(b"abc\0def")
    assert looks_binary(b"\xff\xfe not utf-8")
    assert not looks_binary("plain text, ünïcode".encode())
    assert not looks_binary(b"")
    # cut in the middle of a multi-byte character (as a MAX_READ_BYTES read would) is text
    assert not looks_binary("ü".encode()[:1])
    assert not looks_binary(b"x" * depth.BINARY_SNIFF_BYTES + b"\0")  # NUL after the sniff
    assert depth.MAX_READ_BYTES == 256 * 1024


def test_min_depth_level_matches_filter(tree: list[TreeEntry]) -> None:
    for path, first in EXPECTED.items():
        assert min_depth_level(path) == first, path


def test_docs_page_states_the_same_limits() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "depth-levels.md").read_text()
    for level in DEPTH_LEVELS:
        assert f"| `{level}` |" in doc
    assert f"depth ≤ **{depth.CORE_MAX_DEPTH}**" in doc
    assert f"depth ≤ **{depth.STANDARD_MAX_DEPTH}**" in doc
    for name in ("node_modules", "vendor", "Pods", ".gradle", "coverage", "yarn.lock", "jar"):
        assert re.search(rf"\b{re.escape(name)}\b", doc), name
    assert f"({depth.CORE_MAX_DEPTH})" in depth.__doc__
    assert f"({depth.STANDARD_MAX_DEPTH})" in depth.__doc__
