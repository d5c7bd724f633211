"""Talk to amtp-github-mcp through a real MCP client session: over stdio to
`manage.py mcp_github`, as an external client does, or in-process over the SDK's in-memory
transport, as the Repo Crawler does (agents/crawler.py)."""

import asyncio
import json

from mcp import Client

from repositories.mcp_server import RepoServer, stdio_server_params


def client(*, crawl_id="", repo="", transport="stdio") -> Client:
    if transport == "memory":
        server = RepoServer(crawl_id=crawl_id, allowed_repo=repo)
        return Client(server, mode="legacy", read_timeout_seconds=60)
    return Client(stdio_server_params(crawl_id=crawl_id, repo=repo), read_timeout_seconds=60)


def call_tools(calls, *, crawl_id="", repo="", transport="stdio"):
    """Run [(tool, args), ...] in one session; return [tool names, (is_error, payload), ...]."""

    async def main():
        results = []
        async with client(crawl_id=crawl_id, repo=repo, transport=transport) as session:
            tools = await session.list_tools()
            results.append(sorted(t.name for t in tools.tools))
            for name, args in calls:
                result = await session.call_tool(name, args)
                text = "".join(getattr(c, "text", "") for c in result.content)
                if result.is_error:
                    results.append((True, text))
                else:
                    results.append((False, result.structured_content or json.loads(text)))
        return results

    return asyncio.run(main())
