"""amtp-github-mcp through a real MCP client session, on a local git repository: over stdio
(`manage.py mcp_github`, for external clients) and, where marked, also in-process over the
in-memory transport the Repo Crawler uses."""

import pytest

from repositories.reader import crawl_cache_hits, tree_key
from tests.factories import RepositoryFactory
from tests.gitrepo import commit_files, make_git_repo
from tests.mcp_client import call_tools, client

pytestmark = pytest.mark.django_db(transaction=True)
both_transports = pytest.mark.parametrize("transport", ["stdio", "memory"])

FILES = {
    "package.json": '{"name": "web", "scripts": {"start": "node server.js"}}',
    "server.js": "const app = require('express')();\napp.get('/api/users', (q, r) => r.json([]));\n",
    "src/routes/users.js": "module.exports = [];\n",
    "docs/guide.md": "# Guide\n",
    "node_modules/express/index.js": "module.exports = 1;\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary",
    "big.txt": "x" * 300_000,
}


@pytest.fixture
def repo(tmp_path, valkey):
    path = make_git_repo(tmp_path / "web", FILES)
    RepositoryFactory(full_name="acme/web", host="local", local_path=str(path))
    return path


def test_tools_are_named_exactly_and_tree_is_filtered(repo):
    tools, (err, smoke), (err2, deep) = call_tools(
        [
            ("repo.tree", {"repo": "acme/web", "ref": "main", "depth_level": "smoke"}),
            ("repo.tree", {"repo": "acme/web", "ref": "main", "depth_level": "deep"}),
        ]
    )
    assert tools == ["repo.read_file", "repo.tree"]
    assert not err and not err2
    smoke_paths = {e["path"] for e in smoke["entries"]}
    deep_paths = {e["path"] for e in deep["entries"]}
    assert "package.json" in smoke_paths and "docs/guide.md" not in smoke_paths
    assert "docs/guide.md" in deep_paths
    assert not any(p.startswith("node_modules/") or p == "logo.png" for p in deep_paths)
    assert len(deep["commit_sha"]) == 40


@both_transports
def test_bad_arguments_come_back_as_tool_errors_that_say_what_is_wrong(repo, transport):
    _, *results = call_tools(
        [
            ("repo.tree", {"repo": "acme/nope", "ref": "main"}),
            ("repo.tree", {"repo": "acme/web", "ref": "no-such-branch"}),
            ("repo.tree", {"repo": "acme/web", "ref": "main", "depth_level": "everything"}),
            ("repo.read_file", {"repo": "acme/web", "ref": "main", "path": "../../etc/passwd"}),
            (
                "repo.read_file",
                {"repo": "acme/web", "ref": "main", "path": "node_modules/express/index.js"},
            ),
            ("repo.read_file", {"repo": "acme/web", "ref": "main", "path": "big.txt"}),
            ("repo.read_file", {"repo": "acme/web", "ref": "main", "path": "logo.png"}),
        ],
        transport=transport,
    )
    assert all(is_error for is_error, _ in results)
    messages = [text for _, text in results]
    assert "unknown repository 'acme/nope'" in messages[0]
    assert "no-such-branch" in messages[1]
    assert "everything" in messages[2] and "smoke" in messages[2]
    assert "not a file" in messages[3]
    assert "read limit" in messages[5]
    assert "binary" in messages[6]


def test_second_crawl_of_the_same_commit_hits_the_cache_and_a_new_commit_does_not(repo, valkey):
    calls = [
        ("repo.tree", {"repo": "acme/web", "ref": "main", "depth_level": "deep"}),
        ("repo.read_file", {"repo": "acme/web", "ref": "main", "path": "server.js"}),
    ]
    _, (_, first_tree), (_, first_file) = call_tools(calls, crawl_id="crawl-1")
    assert crawl_cache_hits(valkey, "crawl-1") == 0  # cold: nothing served from the cache
    _, (_, tree), (_, file) = call_tools(calls, crawl_id="crawl-2")
    assert crawl_cache_hits(valkey, "crawl-2") == 2  # the tree and the file
    assert (tree, file) == (first_tree, first_file)

    commit_files(repo, {"server.js": "// moved on\n"}, message="move the branch")
    _, (_, new_tree), (_, new_file) = call_tools(calls, crawl_id="crawl-3")
    assert new_tree["commit_sha"] != first_tree["commit_sha"]
    assert new_file["content"] == "// moved on\n"
    assert crawl_cache_hits(valkey, "crawl-3") == 0


@both_transports
def test_a_session_pinned_to_one_repository_cannot_read_another(repo, tmp_path, transport):
    other = make_git_repo(tmp_path / "other", {"a.txt": "secret"})
    RepositoryFactory(full_name="acme/other", host="local", local_path=str(other))
    _, (is_error, text) = call_tools(
        [("repo.tree", {"repo": "acme/other", "ref": "main"})], repo="acme/web", transport=transport
    )
    assert is_error and "may only read acme/web" in text


def test_github_host_second_crawl_makes_no_api_calls_and_a_new_commit_is_fresh(settings, valkey):
    from tests.fakes.github_api import FakeGitHub

    with FakeGitHub() as gh:
        gh.create_repo("acme/api", {k: v for k, v in FILES.items() if isinstance(v, str)})
        settings.GITHUB_API_URL, settings.GITHUB_TOKEN = gh.url, gh.token
        RepositoryFactory(full_name="acme/api", host="github")
        sha = gh.head("acme/api", "main")
        calls = [
            ("repo.tree", {"repo": "acme/api", "ref": sha, "depth_level": "deep"}),
            ("repo.read_file", {"repo": "acme/api", "ref": sha, "path": "server.js"}),
        ]
        before = len(gh.ledger)
        _, (_, cold), (_, cold_file) = call_tools(calls, crawl_id="gh-1")
        assert gh.count("GET", r"/git/trees/") == 1  # one recursive tree call
        cold_calls = len(gh.ledger) - before
        assert crawl_cache_hits(valkey, "gh-1") == 0 and cold_calls >= 2
        before = len(gh.ledger)
        # Warm answers are served as cached (the page's text, the readable index), so not
        # even the cached tree is needed: without it, GitHub still sees no call.
        assert valkey.delete(tree_key("acme/api", sha)) == 1
        _, (_, warm), (_, warm_file) = call_tools(calls, crawl_id="gh-2")
        assert len(gh.ledger) == before, gh.ledger[before:]  # nothing reached GitHub
        assert crawl_cache_hits(valkey, "gh-2") == 2
        assert (warm, warm_file) == (cold, cold_file)
        moved = gh.push("acme/api", "main", {"server.js": "// v2\n"})
        _, (_, new_tree), (_, new_file) = call_tools(
            [
                ("repo.tree", {"repo": "acme/api", "ref": "main", "depth_level": "deep"}),
                ("repo.read_file", {"repo": "acme/api", "ref": "main", "path": "server.js"}),
            ]
        )
        assert new_tree["commit_sha"] == moved and new_file["content"] == "// v2\n"


@both_transports
def test_tree_pages_filters_and_hostile_arguments_over_the_protocol(repo, transport):
    base = {"repo": "acme/web", "ref": "main", "depth_level": "deep"}
    _, *results = call_tools(
        [
            ("repo.tree", {**base, "page_size": 1}),
            ("repo.tree", {**base, "page_size": 1, "page": 2}),
            ("repo.tree", {**base, "prefix": "src"}),
            ("repo.tree", {**base, "glob": "*.js"}),
            ("repo.tree", {**base, "page_size": 10**9}),
            ("repo.tree", {**base, "prefix": "../../etc"}),
            ("repo.tree", {**base, "prefix": "/etc"}),
            ("repo.tree", {**base, "glob": "../*"}),
            ("repo.tree", {**base, "page": 0}),
            ("repo.tree", {**base, "page_size": -1}),
        ],
        transport=transport,
    )
    (e1, first), (e2, second), (e3, src), (e4, js), (e5, huge), *refused = results
    assert not any((e1, e2, e3, e4, e5))
    assert first["total"] == 5 and first["pages"] == 5 and len(first["entries"]) == 1
    assert "overview" in first and "overview" not in second  # only on an unfiltered page 1
    assert first["entries"] != second["entries"]
    assert [e["path"] for e in src["entries"]] == ["src/routes/users.js"]
    assert {e["path"] for e in js["entries"]} == {"server.js", "src/routes/users.js"}
    assert huge["page_size"] == 5000 and len(huge["entries"]) == 5
    assert all(is_error for is_error, _ in refused)
    words = ["leaves the repository", "absolute", "leaves the repository", "page must", "page_size"]
    for (_, text), word in zip(refused, words, strict=True):
        assert word in text, text


@both_transports
def test_answers_are_sent_once_as_compact_text(repo, transport):
    import asyncio

    async def raw():
        async with client(transport=transport) as c:
            return await c.call_tool("repo.tree", {"repo": "acme/web", "ref": "main"})

    result = asyncio.run(raw())
    assert result.structured_content is None and len(result.content) == 1
    assert "\n" not in result.content[0].text and ", " not in result.content[0].text[:200]


def test_the_sdks_span_per_message_is_dropped_only_while_nothing_traces(monkeypatch):
    """The MCP SDK wraps every message in an OpenTelemetry span; with no tracer provider
    installed the span goes nowhere, so a session's server drops that middleware (as the SDK
    says to opt out). Once tracing is set up, it stays."""
    from mcp.server._otel import OpenTelemetryMiddleware
    from opentelemetry import trace

    from repositories import mcp_server

    def otel(server) -> list:
        return [m for m in server.middleware if isinstance(m, OpenTelemetryMiddleware)]

    assert not mcp_server.tracing()
    assert otel(mcp_server.RepoServer()) == []
    assert mcp_server.RepoServer().middleware  # the SDK's other middleware is kept
    monkeypatch.setattr(trace, "get_tracer_provider", trace.NoOpTracerProvider)
    assert mcp_server.tracing()
    assert len(otel(mcp_server.RepoServer())) == 1
