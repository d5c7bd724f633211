"""``amtp-github-mcp``: the MCP server the Repo Crawler reads repositories through.

Two tools, named exactly ``repo.tree`` and ``repo.read_file``, over the repository-host
interface, cached in Valkey (:mod:`repositories.reader`). Run it with
``python manage.py mcp_github`` (stdio); any MCP client can use it. The Repo Crawler runs the
same server object in its own process over the SDK's in-memory transport (:mod:`agents.crawler`). Bad arguments come back as
MCP tool errors (``isError``) whose text says what was wrong. Secret-bearing files are
neither listed nor readable and secret-looking values are redacted (:mod:`repositories.secrets`),
so no credential reaches the model, its vendor, an artifact or the cache.

``repo.tree`` answers in bounded pieces (:mod:`repositories.overview`): an overview on an
unfiltered first page, and pages of the files under a ``prefix`` or matching a ``glob``.
Answers are compact JSON text only: the same data is not sent again as structured content.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections
from mcp import StdioServerParameters
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from amtp_site import valkey
from amtp_site.child import connection_env
from amtp_site.errors import AmtpError
from repositories.hosts import host_for_repo
from repositories.overview import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from repositories.reader import CachedRepoReader, answer_text

ROOT = Path(__file__).resolve().parent.parent
SERVER_NAME = "amtp-github-mcp"
TREE_TOOL = "repo.tree"
READ_TOOL = "repo.read_file"
TREE_DESCRIPTION = (
    "List the files of a repository at a ref (branch, tag or commit SHA), filtered for a depth "
    "level: smoke, core, standard or deep. Answers one page (page, page_size up to "
    f"{MAX_PAGE_SIZE}) of the files under 'prefix' (a folder) and/or matching 'glob' "
    "('**/*.tsx'; without a '/', matched against file names). An unfiltered first page also "
    "carries an overview of bounded size: file counts per depth and per folder, manifests, "
    "candidate entry points, routes, pages and screens, and existing tests. Files that hold "
    "credentials (.env, keys, certificates, credential files) are never listed."
)


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

    def call(fn, *args) -> CallToolResult:
        try:
            answer: dict[str, Any] | str = fn(*args)
        except AmtpError as exc:
            raise ToolError(exc.message) from exc
        finally:  # asgiref's thread outlives the session when the server runs in-process
            connections.close_all()
        text = answer if isinstance(answer, str) else answer_text(answer)
        return CallToolResult(content=[TextContent(type="text", text=text)])

    @server.tool(name=TREE_TOOL, description=TREE_DESCRIPTION, structured_output=False)
    async def repo_tree(
        repo: str,
        ref: str,
        depth_level: str = "standard",
        prefix: str = "",
        glob: str = "",
        page: int = 1,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> CallToolResult:
        return await sync_to_async(call)(
            lambda: reader(repo).tree_text(
                ref, depth_level, prefix=prefix, glob=glob, page=page, page_size=page_size
            )
        )

    @server.tool(
        name=READ_TOOL,
        description="Read one text file of a repository at a ref. The path must be one listed "
        "by repo.tree; binary, oversized and credential files are refused, and secret-looking "
        "values are replaced by [REDACTED:<kind>].",
        structured_output=False,
    )
    async def repo_read_file(repo: str, ref: str, path: str) -> CallToolResult:
        return await sync_to_async(call)(lambda: reader(repo).read_file(ref, path))

    return server


def stdio_server_params(*, crawl_id: str = "", repo: str = "") -> StdioServerParameters:
    """How an MCP client in this installation starts ``manage.py mcp_github`` on stdio, against
    this process's database and Valkey (the tests and ``scripts/bench_crawl.py`` do)."""
    env = {**os.environ, **connection_env()}
    env["DJANGO_SETTINGS_MODULE"] = os.environ.get("DJANGO_SETTINGS_MODULE", "amtp_site.settings")
    return StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "manage.py"), "mcp_github", "--crawl-id", crawl_id, "--repo", repo],
        env=env,
        cwd=str(ROOT),
    )
