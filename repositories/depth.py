"""Depth levels: which files of a commit's tree the Repo Crawler gets to see.

The spec only says "smoke = entry points only; deep = full recursive tree". These are the exact
rules, so a run's depth is reproducible and an operator can predict what a crawl will contain.
Every level is the previous level plus its own additions, so smoke ⊆ core ⊆ standard ⊆ deep
holds by construction. Paths are compared case-insensitively, one ``/``-separated component at a
time; "depth" is the number of components (``src/app/page.tsx`` has depth 3).

======== ==================================================================================
level    a file is included when (besides not being always-skipped)
======== ==================================================================================
smoke    a root manifest (``ROOT_MANIFESTS``, ``requirements*.txt``, a framework config such
         as ``next.config.*`` / ``vite.config.*`` / ``playwright.config.*``, root ``README``);
         or an entry file: stem in ``ENTRY_STEMS`` (index, main, app, server, layout, page,
         _app, _layout, wsgi, asgi, urls, routes, router, __main__, manage) with a code
         extension, at the root, one folder deep, or one folder below ``src/``
         (``src/index.ts``, ``app/layout.tsx``, ``src/app/page.tsx``, ``App.tsx``,
         ``mysite/wsgi.py``, ``lib/main.dart``), not inside a test, docs or asset folder
core     smoke, plus code/template files with depth <= ``CORE_MAX_DEPTH`` (7) that hold
         routes, pages or screens: inside a folder named in ``ROUTE_DIRS`` (app, pages,
         routes, api, views, screens, navigation, controllers, handlers, endpoints, routers,
         blueprints, ...) or named like a route file (``urls.py``, ``views.py``,
         ``app.routes.ts``, ``app-routing.module.ts``, ``router.js``); no tests/docs/assets
standard core, plus every file with depth <= ``STANDARD_MAX_DEPTH`` (10) that is not a test,
         docs or asset file (source and config: ``.github/``, ``settings.py``, ``.css`` ...)
deep     every file that is not always-skipped (tests, docs, assets and any depth included)
======== ==================================================================================

Always skipped, at every level:

* anything under a dependency, build, cache or tool folder (``SKIPPED_DIRS``: ``.git``,
  ``node_modules``, ``vendor``, ``.venv``/``venv``, ``__pycache__``, ``dist``, ``build``,
  ``.next``, ``target``, ``Pods``, ``.gradle``, ``coverage``, ``*.egg-info`` ...);
* binaries: ``is_binary_path`` (images, fonts, archives, media, office documents, compiled
  objects, ``.jar``, ``.so``, databases, model weights ...) or a path the host reports binary;
* generated noise: lockfiles (``LOCKFILES``; the manifest next to them carries what a test
  writer needs, and they are often megabytes) and minified bundles / source maps;
* OS junk (``.DS_Store``, ``Thumbs.db``).

Test files: a folder in ``TEST_DIRS`` (tests, __tests__, e2e, cypress, .maestro ...) or a test
file name (``test_*.py``, ``*_test.go``, ``*.test.ts``, ``*.spec.js``, ``*.cy.ts``,
``conftest.py``, ``FooTest.kt``). Docs: a folder in ``DOC_DIRS`` or a ``.md/.rst/.adoc`` file or
LICENSE/CHANGELOG-like names; a docs folder below ``pages/`` or ``app/`` (``FILE_ROUTE_DIRS``)
holds routes, not docs (``pages/docs/intro.tsx``). Assets: a folder in ``ASSET_DIRS`` (assets,
static, public, images, fonts, ``*.xcassets`` ...) or ``.svg/.csv/.tsv``.

Reading: hosts and the MCP server read at most ``MAX_READ_BYTES`` of a file, and
``looks_binary`` catches binaries that slipped past the extension check. The name lists live in
``repositories/depth_names.py``. The same table lives in ``docs/depth-levels.md``; keep the two
in step.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Collection

from repositories.depth_names import (
    ASSET_DIR_SUFFIXES,
    ASSET_DIRS,
    ASSET_EXTENSIONS,
    BINARY_EXTENSIONS,
    CODE_EXTENSIONS,
    CONFIG_EXTENSIONS,
    CONFIG_STEMS,
    DOC_DIRS,
    DOC_EXTENSIONS,
    DOC_STEMS,
    ENTRY_STEMS,
    FILE_ROUTE_DIRS,
    GENERATED_SUFFIXES,
    LOCKFILES,
    ROOT_MANIFESTS,
    ROUTE_DIRS,
    ROUTE_FILE_STEMS,
    ROUTE_FILE_SUFFIXES,
    SKIPPED_DIR_SUFFIXES,
    SKIPPED_DIRS,
    SKIPPED_FILES,
    TEMPLATE_EXTENSIONS,
    TEST_DIRS,
)
from repositories.hosts.base import TreeEntry

DEPTH_LEVELS = ("smoke", "core", "standard", "deep")
CORE_MAX_DEPTH = 7
STANDARD_MAX_DEPTH = 10
MAX_READ_BYTES = 256 * 1024
BINARY_SNIFF_BYTES = 8 * 1024  # git's own heuristic looks at the same prefix for NUL bytes

_JVM_TEST_NAME = re.compile(r"[a-z0-9]Tests?\.[a-z]+$")


def _extension(name: str) -> str:
    """Last extension, lower-case, without the dot ("" for ``Makefile`` or ``.env``)."""
    stem, dot, ext = name.rpartition(".")
    return ext.lower() if dot and stem else ""


def _stem(name: str) -> str:
    """Name without its last extension, lower-case (``App.tsx`` -> ``app``)."""
    stem, dot, _ext = name.rpartition(".")
    return (stem if dot and stem else name).lower()


def is_binary_path(path: str) -> bool:
    """True when the file extension says binary (images, fonts, archives, media, objects...)."""
    return _extension(path.rsplit("/", 1)[-1]) in BINARY_EXTENSIONS


def looks_binary(data: bytes) -> bool:
    """True when content is binary: a NUL byte in the first 8 KiB, or not UTF-8.

    The decoder runs in incremental mode so that text cut at ``MAX_READ_BYTES`` in the middle
    of a multi-byte character is still text.
    """
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return True
    return False


def _always_skipped(dirs: list[str], name: str) -> bool:
    if any(d in SKIPPED_DIRS or d.endswith(SKIPPED_DIR_SUFFIXES) for d in dirs):
        return True
    if name in SKIPPED_FILES or name in LOCKFILES or name.endswith(GENERATED_SUFFIXES):
        return True
    return _extension(name) in BINARY_EXTENSIONS


def _is_test(dirs: list[str], name: str, original_name: str) -> bool:
    if any(d in TEST_DIRS for d in dirs):
        return True
    stem, ext = _stem(name), _extension(name)
    if name == "conftest.py" or (ext == "py" and stem.startswith("test_")):
        return True
    if stem.endswith((".test", ".spec", ".cy", ".e2e", "_test", "_spec")):
        return True
    # JVM/Swift convention FooTest.kt / FooTests.swift; case matters so Latest.kt is not a test
    return ext in {"java", "kt", "swift"} and _JVM_TEST_NAME.search(original_name) is not None


def _is_doc(dirs: list[str], name: str) -> bool:
    # A docs folder below a file-routing folder (Next.js `pages/docs/`, `app/docs/`) is a
    # site's pages, not its documentation: only docs folders above such a folder count.
    routed = next((i for i, d in enumerate(dirs) if d in FILE_ROUTE_DIRS), len(dirs))
    if any(d in DOC_DIRS for d in dirs[:routed]):
        return True
    return _extension(name) in DOC_EXTENSIONS or _stem(name) in DOC_STEMS


def _is_asset(dirs: list[str], name: str) -> bool:
    if any(d in ASSET_DIRS or d.endswith(ASSET_DIR_SUFFIXES) for d in dirs):
        return True
    return _extension(name) in ASSET_EXTENSIONS


def excluded_class(path: str) -> str | None:
    """``"test"``, ``"doc"`` or ``"asset"`` for the files the standard level leaves out
    (always-skipped files aside), else None."""
    original_name = path.rsplit("/", 1)[-1]
    parts = path.strip("/").lower().split("/")
    dirs, name = parts[:-1], parts[-1]
    if _is_test(dirs, name, original_name):
        return "test"
    if _is_doc(dirs, name):
        return "doc"
    return "asset" if _is_asset(dirs, name) else None


def _is_smoke(dirs: list[str], name: str, excluded: bool) -> bool:
    if not dirs:
        if name in ROOT_MANIFESTS or (name.startswith("requirements") and name.endswith(".txt")):
            return True
        if _stem(name) in CONFIG_STEMS and _extension(name) in CONFIG_EXTENSIONS:
            return True
    shallow = len(dirs) <= 1 or (len(dirs) == 2 and dirs[0] == "src")
    is_entry = _stem(name) in ENTRY_STEMS and _extension(name) in CODE_EXTENSIONS
    return shallow and is_entry and not excluded


def _is_core(dirs: list[str], name: str, excluded: bool) -> bool:
    if excluded or len(dirs) + 1 > CORE_MAX_DEPTH:
        return False
    if _extension(name) not in CODE_EXTENSIONS | TEMPLATE_EXTENSIONS:
        return False
    stem = _stem(name)
    in_route_dir = any(d in ROUTE_DIRS for d in dirs)
    return in_route_dir or stem in ROUTE_FILE_STEMS or stem.endswith(ROUTE_FILE_SUFFIXES)


def min_depth_level(path: str) -> str | None:
    """The shallowest level whose tree includes ``path``; None if it is always skipped."""
    original_name = path.rsplit("/", 1)[-1]
    parts = path.strip("/").lower().split("/")
    dirs, name = parts[:-1], parts[-1]
    if _always_skipped(dirs, name):
        return None
    excluded = _is_test(dirs, name, original_name) or _is_doc(dirs, name) or _is_asset(dirs, name)
    if _is_smoke(dirs, name, excluded):
        return "smoke"
    if _is_core(dirs, name, excluded):
        return "core"
    if not excluded and len(parts) <= STANDARD_MAX_DEPTH:
        return "standard"
    return "deep"


def filter_tree(
    entries: list[TreeEntry], depth_level: str, *, binary_paths: Collection[str] = ()
) -> list[TreeEntry]:
    """The entries a crawl at ``depth_level`` sees, in their original order.

    ``binary_paths`` lets a host that knows better (e.g. from ``.gitattributes`` or a content
    sniff) mark files binary that the extension check would miss.
    """
    if depth_level not in DEPTH_LEVELS:
        raise ValueError(f"unknown depth level {depth_level!r}; expected one of {DEPTH_LEVELS}")
    rank = DEPTH_LEVELS.index(depth_level)
    binary = set(binary_paths)
    kept = []
    for entry in entries:
        level = min_depth_level(entry.path)
        if level is None or entry.path in binary:
            continue
        if DEPTH_LEVELS.index(level) <= rank:
            kept.append(entry)
    return kept
