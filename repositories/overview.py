"""Bounded views of a commit's filtered tree: what ``repo.tree`` answers.

The tree of a 100,000-file monorepo is about 10 MB of JSON, far more than a model's context
holds. So ``repo.tree`` answers in two ways, each of bounded size at every repository size:

- the **overview** (an unfiltered first page): file counts per depth level and per directory
  (the biggest subtrees expanded first), the manifests, the candidate entry points, routes,
  pages and screens (ranked: file-routing folders and app entry files first, under a
  framework's own root, shallow before deep) and the existing tests. Every list is cut to a
  character budget and says how much it left out. A tree of at most ``FULL_LIST_FILES`` files
  is also listed whole.
- a **page** of the files under a path ``prefix`` and/or matching a ``glob``, ``page_size``
  entries at a time (at most ``MAX_PAGE_SIZE``). The Repo Crawler pages through the whole
  listing for its ``file_tree``; a model asks for a short page.

Arguments are untrusted (a model chooses them): a prefix or glob must pass the read-path rules
(no ``..``, absolute, drive or backslash paths, no control characters); a glob is matched one
path segment at a time (``fnmatch`` per segment, ``**`` for any number of segments), so
matching stays linear; oversized pages are clamped to ``MAX_PAGE_SIZE``.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Callable, Iterable

from repositories.depth import excluded_class
from repositories.depth_names import (
    CODE_EXTENSIONS,
    CONFIG_EXTENSIONS,
    CONFIG_STEMS,
    ENTRY_STEMS,
    ROOT_MANIFESTS,
    ROUTE_DIRS,
    ROUTE_FILE_STEMS,
    ROUTE_FILE_SUFFIXES,
    TEMPLATE_EXTENSIONS,
    TEST_DIRS,
)
from repositories.errors import RepositoryAccessError
from repositories.paths import read_path_problem

DEFAULT_PAGE_SIZE = 200
MAX_PAGE_SIZE = 5_000
FULL_LIST_FILES = 300
MAX_GLOB_CHARS = 256
MAX_GLOB_WILDCARDS = 16
MAX_DIRECTORY_ROWS = 60
CHILDREN_SHOWN = 8  # biggest sub-folders listed per folder
DIRECTORY_DEPTH = 4  # directory counts go this many levels down
MORE_IN_DIRECTORIES = 30
# Characters each section of the overview may take: about 15k tokens for all of them.
SECTION_CHARS = {
    "directories": 5_000,
    "manifests": 4_000,
    "candidates": 32_000,
    "tests": 4_000,
    "files": 16_000,
}

BAD_PAGE = "page must be a whole number of at least 1"
BAD_PAGE_SIZE = "page_size must be a whole number of at least 0"
BAD_PREFIX = "prefix {prefix!r}: {problem}; give a directory of the repository, e.g. 'src/pages'"
BAD_GLOB = "glob {glob!r}: {problem}; e.g. '**/*.tsx', 'src/**/routes/*.ts' or '*.py'"
GLOB_TOO_LONG = f"longer than {MAX_GLOB_CHARS} characters"
GLOB_TOO_WILD = f"more than {MAX_GLOB_WILDCARDS} wildcards"

# Folders whose files are routes, pages or screens by their place (file-based routing).
PAGE_DIRS = frozenset({"pages", "app", "screens", "routes", "route", "views"})
UI_EXTENSIONS = frozenset({"tsx", "jsx", "js", "ts", "vue", "svelte", "astro", "mdx", "html"})
SCREEN_EXTENSIONS = frozenset({"kt", "java", "swift", "dart", "tsx", "jsx"})
# Files that mark the root of an app (a framework's own config): candidates under it rank first.
APP_ROOT_NAMES = frozenset({"manage.py", "app.json", "androidmanifest.xml", "info.plist"})
APP_ROOT_BONUS = 15
ROUTING_BONUS = 30
# Folders of file-based routing under an app root: Next.js, Nuxt, Expo Router, SvelteKit, Remix.
ROUTING_FOLDERS = ("pages", "src/pages", "app", "src/app", "src/routes", "app/routes")
_SCREEN = re.compile(r"[A-Z]\w*(Screen|Activity|ViewController|View|Fragment|Page)$")
_SCORES = {"page": 95, "entry": 90, "route": 85, "screen": 85}


def _name_parts(name: str) -> tuple[str, str]:
    """(stem, extension), lower-case; ``Makefile`` → ("makefile", "")."""
    stem, dot, ext = name.lower().rpartition(".")
    return (stem, ext) if dot and stem else (name.lower(), "")


def _is_manifest(name: str) -> bool:
    low = name.lower()
    stem, ext = _name_parts(name)
    if low in ROOT_MANIFESTS or (low.startswith("requirements") and ext == "txt"):
        return True
    return stem in CONFIG_STEMS and ext in CONFIG_EXTENSIONS


def relevance(path: str) -> tuple[str, int] | None:
    """What a file says about what to test: (kind, score), higher scores first, or None for an
    ordinary file. Kinds: manifest, page, entry, route, screen, test. Shallow files score
    higher than deep ones of the same kind."""
    *dirs, name = path.split("/")
    penalty = 3 * len(dirs)
    if _is_manifest(name):
        return "manifest", 100 - penalty
    excluded = excluded_class(path)
    if excluded == "test":
        return "test", 50 - penalty
    stem, ext = _name_parts(name)
    if excluded or ext not in CODE_EXTENSIONS | TEMPLATE_EXTENSIONS:
        return None
    lowered = [d.lower() for d in dirs]
    if ext in UI_EXTENSIONS and PAGE_DIRS.intersection(lowered):
        kind = "page"
    elif stem in ENTRY_STEMS and (len(dirs) <= 1 or (len(dirs) == 2 and lowered[0] == "src")):
        kind = "entry"
    elif ext in SCREEN_EXTENSIONS and _SCREEN.search(name.rsplit(".", 1)[0]):
        kind = "screen"
    elif ROUTE_DIRS.intersection(lowered) or stem in ROUTE_FILE_STEMS:
        kind = "route"
    elif stem.endswith(ROUTE_FILE_SUFFIXES):
        kind = "route"
    else:
        return None
    return kind, _SCORES[kind] - penalty


def app_roots(paths: Iterable[str]) -> set[str]:
    """Folders holding a framework's own config (``next.config.js``, ``manage.py`` ...)."""
    roots = set()
    for path in paths:
        folder, _, name = path.rpartition("/")
        stem, ext = _name_parts(name)
        if name.lower() in APP_ROOT_NAMES or (stem in CONFIG_STEMS and ext in CONFIG_EXTENSIONS):
            roots.add(folder)
    return roots


def _bonus(path: str, roots: set[str], routing: set[str]) -> int:
    """ROUTING_BONUS inside a framework's routing folder, APP_ROOT_BONUS elsewhere under an
    app root, else 0: in a monorepo the app's own pages outrank look-alikes in packages."""
    folder = path.rpartition("/")[0]
    bonus = APP_ROOT_BONUS if "" in roots else 0
    while folder:
        if folder in routing:
            return ROUTING_BONUS
        if folder in roots:
            bonus = APP_ROOT_BONUS
        folder = folder.rpartition("/")[0]
    return bonus


def ranked(paths: Iterable[str]) -> dict[str, list[str]]:
    """Relevant paths by kind, best first: {"manifest": [...], "candidate": [...],
    "test": [...]}; candidates are entry points, routes, pages and screens."""
    paths = list(paths)
    roots = app_roots(paths)
    routing = {f"{root}/{sub}" if root else sub for root in roots for sub in ROUTING_FOLDERS}
    scored: dict[str, list[tuple[int, str]]] = {"manifest": [], "candidate": [], "test": []}
    for path in paths:
        found = relevance(path)
        if found is None:
            continue
        kind, score = found
        if kind in ("manifest", "test"):
            scored[kind].append((-score, path))
        else:
            scored["candidate"].append((-score - _bonus(path, roots, routing), path))
    return {kind: [p for _, p in sorted(items)] for kind, items in scored.items()}


def take_within(items: Iterable[str], chars: int) -> tuple[list[str], int]:
    """(the leading items whose JSON fits ``chars``, how many were left out)."""
    taken: list[str] = []
    used, left = 0, 0
    for item in items:
        cost = len(item) + 4  # quotes, comma, space
        if left or used + cost > chars:
            left += 1
            continue
        taken.append(item)
        used += cost
    return taken, left


def grouped(paths: Iterable[str]) -> dict[str, list[str]]:
    """Paths grouped by folder ("." for the root), folders in order of first appearance."""
    out: dict[str, list[str]] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        out.setdefault(folder or ".", []).append(name)
    return out


def directory_counts(paths: Iterable[str]) -> tuple[Counter, int]:
    """(files under each folder up to DIRECTORY_DEPTH levels down, files at the root)."""
    counts: Counter = Counter()
    root_files = 0
    for path in paths:
        start, level = 0, 0
        while level < DIRECTORY_DEPTH:
            cut = path.find("/", start)
            if cut < 0:
                break
            counts[path[:cut]] += 1
            start, level = cut + 1, level + 1
        root_files += level == 0
    return counts, root_files


def _directories(counts: Counter) -> tuple[dict[str, int], int]:
    """Every top-level folder, then level by level the biggest children of the folders shown
    (at most CHILDREN_SHOWN each), within MAX_DIRECTORY_ROWS and the section's budget."""
    children: dict[str, list[str]] = {}
    for folder in sorted(counts, key=lambda f: (-counts[f], f)):
        children.setdefault(folder.rpartition("/")[0], []).append(folder)
    level, shown, used = [""], {}, 0
    while level and len(shown) < MAX_DIRECTORY_ROWS:
        below = []
        for parent in level:
            limit = None if parent == "" else CHILDREN_SHOWN
            for folder in children.get(parent, [])[:limit]:
                cost = len(folder) + 12
                if len(shown) >= MAX_DIRECTORY_ROWS or used + cost > SECTION_CHARS["directories"]:
                    break
                shown[folder], used = counts[folder], used + cost
                below.append(folder)
        level = below
    return dict(sorted(shown.items())), len(counts) - len(shown)


def _test_folder(path: str) -> str:
    parts = path.split("/")[:-1]
    for i, part in enumerate(parts):
        if part.lower() in TEST_DIRS:
            return "/".join(parts[: i + 1])
    return "/".join(parts) or "."


def _tests(tests: list[str]) -> tuple[dict, int]:
    folders = Counter(_test_folder(p) for p in tests)
    top = [f for f, _ in sorted(folders.items(), key=lambda kv: (-kv[1], kv[0]))]
    shown, _ = take_within(top[:15], SECTION_CHARS["tests"] // 2)
    examples, _ = take_within(tests[:20], SECTION_CHARS["tests"] // 2)
    section = {"total": len(tests), "directories": {f: folders[f] for f in shown}}
    section["examples"] = examples
    return section, len(tests) - len(examples)


def build_overview(rows: list[list], files_at_depth: dict[str, int]) -> dict:
    """The overview of the rows ``[path, size, sha]`` a crawl at one depth level sees."""
    paths = [row[0] for row in rows]
    kinds = ranked(paths)
    counts, root_files = directory_counts(paths)
    directories, dirs_left = _directories(counts)
    manifests, manifests_left = take_within(kinds["manifest"], SECTION_CHARS["manifests"])
    candidates, candidates_left = take_within(kinds["candidate"], SECTION_CHARS["candidates"])
    tests, tests_left = _tests(kinds["test"])
    out: dict = {
        "total_files": len(rows),
        "total_bytes": sum(row[1] for row in rows),
        "files_at_depth": files_at_depth,
        "root_files": root_files,
        "directories": directories,
        "manifests": manifests,
        "candidates": grouped(candidates),
        "tests": tests,
    }
    if len(paths) <= FULL_LIST_FILES:
        every, left = take_within(sorted(paths), SECTION_CHARS["files"])
        if not left:
            out["files"] = every
    # Folders of the candidates left out, the one holding the best of them first.
    more = Counter(p.rpartition("/")[0] or "." for p in kinds["candidate"][len(candidates) :])
    out["omitted"] = {
        "directories": dirs_left,
        "manifests": manifests_left,
        "candidates": candidates_left,
        "tests": tests_left,
    }
    top_more = list(more.items())[:MORE_IN_DIRECTORIES]
    out["more_candidates_in"] = {f: n for f, n in top_more if len(f) < 300}
    return out


# --- listing --------------------------------------------------------------------------------


def checked_prefix(prefix: object) -> str:
    """A folder to list under ("" for the whole tree), or RepositoryAccessError."""
    if not isinstance(prefix, str):
        raise RepositoryAccessError(BAD_PREFIX.format(prefix=prefix, problem="not a string"))
    text = prefix[:-1] if prefix.endswith("/") else prefix
    if text in ("", "."):
        return ""
    problem = read_path_problem(text)
    if problem:
        raise RepositoryAccessError(BAD_PREFIX.format(prefix=prefix[:120], problem=problem))
    return text


def glob_matcher(glob: object) -> Callable[[str], bool] | None:
    """A test for paths matching ``glob`` (None when there is no glob). Without a '/', the
    glob is matched against file names; with one, against whole paths, where ``**`` is any
    number of folders and ``*``/``?``/``[...]`` stay inside one path segment."""
    if glob in ("", None):
        return None
    if not isinstance(glob, str):
        raise RepositoryAccessError(BAD_GLOB.format(glob=glob, problem="not a string"))
    problem = (
        GLOB_TOO_LONG
        if len(glob) > MAX_GLOB_CHARS
        else GLOB_TOO_WILD
        if sum(glob.count(c) for c in "*?[") > MAX_GLOB_WILDCARDS
        else read_path_problem(glob)
    )
    if problem:
        raise RepositoryAccessError(BAD_GLOB.format(glob=glob[:120], problem=problem))
    if "/" not in glob:
        name = re.compile(fnmatch.translate(glob))
        return lambda path: name.match(path.rpartition("/")[2]) is not None
    segments: list[re.Pattern | None] = []
    for part in glob.split("/"):
        if part == "**":
            if not segments or segments[-1] is not None:
                segments.append(None)  # consecutive ** are one
        else:
            segments.append(re.compile(fnmatch.translate(part)))
    return lambda path: _segments_match(segments, path.split("/"))


def _segments_match(segments: list[re.Pattern | None], parts: list[str]) -> bool:
    """Match segment by segment: the set of reachable positions in ``parts`` (linear)."""
    positions = {0}
    for segment in segments:
        if segment is None:
            positions = set(range(min(positions), len(parts) + 1))
        else:
            positions = {i + 1 for i in positions if i < len(parts) and segment.match(parts[i])}
        if not positions:
            return False
    return len(parts) in positions


def listing(
    rows: list[list],
    *,
    prefix: object = "",
    glob: object = "",
    page: object = 1,
    page_size: object = DEFAULT_PAGE_SIZE,
) -> dict:
    """One page of the rows under ``prefix`` matching ``glob``, as tree entries."""
    folder, matches = checked_prefix(prefix), glob_matcher(glob)
    if not isinstance(page, int) or isinstance(page, bool) or page < 1:
        raise RepositoryAccessError(BAD_PAGE)
    if not isinstance(page_size, int) or isinstance(page_size, bool) or page_size < 0:
        raise RepositoryAccessError(BAD_PAGE_SIZE)
    size = min(page_size, MAX_PAGE_SIZE)
    selected = rows
    if folder:
        selected = [r for r in selected if r[0] == folder or r[0].startswith(folder + "/")]
    if matches is not None:
        selected = [r for r in selected if matches(r[0])]
    start = (page - 1) * size
    return {
        "prefix": folder,
        "glob": glob or "",
        "total": len(selected),
        "page": page,
        "page_size": size,
        "pages": -(-len(selected) // size) if size else 0,
        "entries": [
            {"path": r[0], "size": r[1], "sha": r[2]} for r in selected[start : start + size]
        ],
    }
