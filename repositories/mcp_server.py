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

import functools
import os
import sys
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections
from mcp import StdioServerParameters
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.server import Settings as MCPServerSettings
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolRequest, CallToolResult, TextContent
from opentelemetry import trace

from amtp_site import valkey
from amtp_site.child import connection_env
from amtp_site.errors import AmtpError
from repositories.hosts import host_for, host_for_repo
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
READ_DESCRIPTION = (
    "Read one text file of a repository at a ref. The path must be one listed by repo.tree; "
    "binary, oversized and credential files are refused, and secret-looking values are "
    "replaced by [REDACTED:<kind>]."
)


class RepoServer(MCPServer):
    """One session's server. ``crawl_id`` names the crawl whose cache hits are counted;
    ``allowed_repo`` (optional) pins the session to one repository, as the crawler does, and
    ``repository`` (optional, its ``Repository`` row) saves looking it up."""

    def __init__(self, *, crawl_id: str = "", allowed_repo: str = "", repository=None) -> None:
        super().__init__(SERVER_NAME, tools=list(tools()))
        if not tracing():  # the SDK's span per message has nowhere to go: opt out, as it says
            self.middleware[:] = [
                m for m in self.middleware if type(m) is not OpenTelemetryMiddleware
            ]
        self.crawl_id = crawl_id
        self.allowed_repo = allowed_repo
        self.repository = repository
        self.readers: dict[str, CachedRepoReader] = {}

    def reader(self, repo: str) -> CachedRepoReader:
        if self.allowed_repo and repo != self.allowed_repo:
            raise ToolError(f"this session may only read {self.allowed_repo}, not {repo!r}")
        if repo not in self.readers:
            known = self.repository is not None and self.repository.full_name == repo
            self.readers[repo] = CachedRepoReader(
                host_for(self.repository) if known else host_for_repo(repo),
                valkey.client(),
                ttl=settings.AMTP_MCP_CACHE_TTL,
                max_read_bytes=settings.AMTP_MAX_READ_BYTES,
                crawl_id=self.crawl_id,
            )
        return self.readers[repo]


def _call(fn) -> CallToolResult:
    try:
        answer: dict[str, Any] | str = fn()
    except AmtpError as exc:
        raise ToolError(exc.message) from exc
    finally:  # asgiref's thread outlives the session when the server runs in-process
        connections.close_all()
    text = answer if isinstance(answer, str) else answer_text(answer)
    return CallToolResult(content=[TextContent(type="text", text=text)])


async def repo_tree(
    repo: str,
    ref: str,
    ctx: Context,
    depth_level: str = "standard",
    prefix: str = "",
    glob: str = "",
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> CallToolResult:
    server: RepoServer = ctx.mcp_server
    return await sync_to_async(_call)(
        lambda: server.reader(repo).tree_text(
            ref, depth_level, prefix=prefix, glob=glob, page=page, page_size=page_size
        )
    )


async def repo_read_file(repo: str, ref: str, path: str, ctx: Context) -> CallToolResult:
    server: RepoServer = ctx.mcp_server
    return await sync_to_async(_call)(lambda: server.reader(repo).read_file(ref, path))


def tracing() -> bool:
    """Whether OpenTelemetry tracing is set up in this process (an SDK tracer provider was
    installed, e.g. by ``opentelemetry-instrument``); without one, spans are dropped."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


@functools.cache
def tools() -> tuple[Tool, Tool]:
    """The two tools, built once per process (their argument models take milliseconds each)
    and shared by every session's server: they hold no session state, which each call finds
    on its own server (``ctx.mcp_server``). The SDK's models that pydantic builds on their
    first use are built here too: the server settings (~4 ms) and the client's tools/call
    request (~2 ms)."""
    MCPServerSettings.model_rebuild()
    CallToolRequest.model_rebuild()
    return (
        Tool.from_function(
            repo_tree, name=TREE_TOOL, description=TREE_DESCRIPTION, structured_output=False
        ),
        Tool.from_function(
            repo_read_file,
            name=READ_TOOL,
            description=READ_DESCRIPTION,
            structured_output=False,
        ),
    )


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
