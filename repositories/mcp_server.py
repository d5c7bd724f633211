"""``amtp-github-mcp``: the MCP server the Repo Crawler reads repositories through.

Two tools, named exactly ``repo.tree`` and ``repo.read_file``, over the repository-host
interface, cached in Valkey (:mod:`repositories.reader`). Run it with
``python manage.py mcp_github`` (stdio); any MCP client can use it. Bad arguments come back as
MCP tool errors (``isError``) whose text says what was wrong. Secret-bearing files are
neither listed nor readable and secret-looking values are redacted (:mod:`repositories.secrets`),
so no credential reaches the model, its vendor, an artifact or the cache.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from amtp_site import valkey
from amtp_site.errors import AmtpError
from repositories.hosts import host_for_repo
from repositories.reader import CachedRepoReader

SERVER_NAME = "amtp-github-mcp"
TREE_TOOL = "repo.tree"
READ_TOOL = "repo.read_file"


def build_server(*, crawl_id: str = "", allowed_repo: str = "") -> MCPServer:
    """``crawl_id`` names the crawl whose cache hits are counted; ``allowed_repo`` (optional)
    pins the server to one repository, as the crawler does."""
    server = MCPServer(SERVER_NAME)
    readers: dict[str, CachedRepoReader] = {}

    def reader(repo: str) -> CachedRepoReader:
        if allowed_repo and repo != allowed_repo:
            raise ToolError(f"this session may only read {allowed_repo}, not {repo!r}")
        if repo not in readers:
            readers[repo] = CachedRepoReader(
                host_for_repo(repo),
                valkey.client(),
                ttl=settings.AMTP_MCP_CACHE_TTL,
                max_read_bytes=settings.AMTP_MAX_READ_BYTES,
                crawl_id=crawl_id,
            )
        return readers[repo]

    def call(fn, *args) -> dict[str, Any]:
        try:
            return fn(*args)
        except AmtpError as exc:
            raise ToolError(exc.message) from exc

    @server.tool(
        name=TREE_TOOL,
        description="List the files of a repository at a ref (branch, tag or commit SHA), "
        "filtered for a depth level: smoke, core, standard or deep. Files that hold "
        "credentials (.env, keys, certificates, credential files) are never listed.",
    )
    async def repo_tree(repo: str, ref: str, depth_level: str = "standard") -> dict[str, Any]:
        return await sync_to_async(call)(lambda: reader(repo).tree(ref, depth_level))

    @server.tool(
        name=READ_TOOL,
        description="Read one text file of a repository at a ref. The path must be one listed "
        "by repo.tree; binary, oversized and credential files are refused, and secret-looking "
        "values are replaced by [REDACTED:<kind>].",
    )
    async def repo_read_file(repo: str, ref: str, path: str) -> dict[str, Any]:
        return await sync_to_async(call)(lambda: reader(repo).read_file(ref, path))

    return server
