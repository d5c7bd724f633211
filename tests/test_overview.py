"""repo.tree's bounded views (repositories/overview.py): the overview and the pages."""

import json

import pytest

from repositories.errors import RepositoryAccessError
from repositories.overview import (
    BAD_PAGE,
    BAD_PAGE_SIZE,
    FULL_LIST_FILES,
    MAX_PAGE_SIZE,
    build_overview,
    listing,
    ranked,
    relevance,
)
from tests.scale_repo import generate, route_files

SHA = "0" * 40


def rows_of(files) -> list[list]:
    return [[path, len(content), SHA] for path, content in files.items()]


@pytest.fixture(scope="module")
def big():
    """The 100k-file monorepo as the deep view sees it (what crawls never list removed)."""
    from repositories.depth import min_depth_level

    return [row for row in rows_of(generate(100_000)) if min_depth_level(row[0])]


def test_the_overview_stays_the_same_size_from_10k_to_100k_files(big):
    small = [r for r in rows_of(generate(10_000)) if not r[0].startswith("node_modules/")]
    sizes = [len(json.dumps(build_overview(rows, {}))) for rows in (small, big)]
    assert max(sizes) < 64_000  # about 16k tokens at most, whatever the repository's size
    assert sizes[1] < sizes[0] * 1.5, sizes


def test_the_app_routes_outrank_look_alikes_in_workspace_packages(big):
    overview = build_overview(big, {"deep": len(big)})
    shown = {
        name if folder == "." else f"{folder}/{name}"
        for folder, names in overview["candidates"].items()
        for name in names
    }
    assert set(route_files()) <= shown
    assert overview["omitted"]["candidates"] > 0  # packages' api/ and views/ folders
    folder, count = next(iter(overview["more_candidates_in"].items()))
    assert folder.startswith("packages/") and count > 0
    assert overview["total_files"] == len(big) and "files" not in overview
    assert overview["tests"]["total"] > 1000 and len(overview["tests"]["examples"]) <= 20
    assert overview["directories"]["src/pages"] == 33 and "packages" in overview["directories"]


def test_a_small_tree_is_listed_whole_in_the_overview():
    rows = rows_of({f"src/f{i}.ts": "x" for i in range(FULL_LIST_FILES)})
    assert len(build_overview(rows, {})["files"]) == FULL_LIST_FILES
    assert "files" not in build_overview(rows + [["x.ts", 1, SHA]], {})


def test_relevance_kinds_and_ranking():
    assert relevance("package.json")[0] == "manifest"
    assert relevance("src/pages/about.tsx")[0] == "page"
    assert relevance("src/main.ts")[0] == "entry"
    assert relevance("mysite/shop/urls.py")[0] == "route"
    assert relevance("app/src/main/java/SettingsActivity.kt")[0] == "screen"
    assert relevance("e2e/login.spec.ts")[0] == "test"
    assert relevance("src/lib/format.ts") is None and relevance("docs/guide.md") is None
    order = ranked(["packages/a/src/views/V.tsx", "src/pages/x.tsx", "next.config.js"])
    assert order["candidate"] == ["src/pages/x.tsx", "packages/a/src/views/V.tsx"]


ROWS = rows_of({f"src/pages/p{i:03d}.tsx": "x" for i in range(250)} | {"src/a.py": "", "b.ts": ""})


def test_pages_cover_the_listing_exactly_once():
    first = listing(ROWS, page_size=100)
    assert (first["total"], first["pages"], len(first["entries"])) == (252, 3, 100)
    pages = [listing(ROWS, page=n, page_size=100)["entries"] for n in (1, 2, 3)]
    assert [e["path"] for page in pages for e in page] == [r[0] for r in ROWS]
    assert listing(ROWS, page=4, page_size=100)["entries"] == []
    assert set(first["entries"][0]) == {"path", "size", "sha"}


@pytest.mark.parametrize(
    "args, paths",
    [
        ({"prefix": "src"}, 251),
        ({"prefix": "src/"}, 251),
        ({"prefix": "src/pages"}, 250),
        ({"prefix": "src/pag"}, 0),  # a folder, not a string prefix
        ({"prefix": "b.ts"}, 1),
        ({"glob": "*.py"}, 1),
        ({"glob": "src/**/*.tsx"}, 250),
        ({"glob": "**/p00?.tsx"}, 10),
        ({"glob": "**"}, 252),
        ({"prefix": "src", "glob": "*.ts"}, 0),
        ({"glob": "src/*.py"}, 1),
    ],
)
def test_prefix_and_glob_filters(args, paths):
    assert listing(ROWS, page_size=MAX_PAGE_SIZE, **args)["total"] == paths


@pytest.mark.parametrize(
    "args, words",
    [
        ({"prefix": "../etc"}, "leaves the repository"),
        ({"prefix": "src/../../etc"}, "leaves the repository"),
        ({"prefix": "/etc"}, "absolute"),
        ({"prefix": "C:/Windows"}, "drive letter"),
        ({"prefix": "src\\pages"}, "backslash"),
        ({"prefix": ".git"}, ".git"),
        ({"prefix": "src\x00"}, "control"),
        ({"prefix": 7}, "not a string"),
        ({"glob": "../**"}, "leaves the repository"),
        ({"glob": "/etc/*"}, "absolute"),
        ({"glob": "*" * 300}, "longer than"),
        ({"glob": "*a" * 20}, "wildcards"),
        ({"page": 0}, BAD_PAGE),
        ({"page": -1}, BAD_PAGE),
        ({"page": "2"}, BAD_PAGE),
        ({"page_size": -5}, BAD_PAGE_SIZE),
        ({"page_size": 1.5}, BAD_PAGE_SIZE),
    ],
)
def test_hostile_arguments_are_refused_saying_why(args, words):
    with pytest.raises(RepositoryAccessError, match="(?i)" + words.replace("(", r"\(")):
        listing(ROWS, **args)


def test_huge_pages_are_clamped_and_far_pages_are_empty():
    answer = listing(ROWS, page_size=10**12)
    assert answer["page_size"] == MAX_PAGE_SIZE and len(answer["entries"]) == 252
    assert listing(ROWS, page=10**12, page_size=10)["entries"] == []


def test_a_pathological_glob_is_matched_in_linear_time():
    import time

    rows = [["/".join(["a"] * 40) + f"/f{i}", 1, SHA] for i in range(2_000)]
    started = time.perf_counter()
    assert listing(rows, glob="**/a/**/a/**/a/**/b")["total"] == 0
    assert listing(rows, glob="*a*a*a*a*a*a*a*b")["total"] == 0
    assert time.perf_counter() - started < 5
