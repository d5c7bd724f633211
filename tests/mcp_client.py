"""Talk to `manage.py mcp_github` the way the crawler does: a real MCP session over stdio."""

import asyncio
import json

from mcp import Client

from agents.crawler import mcp_server_params


def call_tools(calls, *, crawl_id="", repo=""):
    """Run [(tool, args), ...] in one session; return [tool names, (is_error, payload), ...]."""

    async def main():
        results = []
        params = mcp_server_params(crawl_id=crawl_id, repo=repo)
        async with Client(params, read_timeout_seconds=60) as client:
            tools = await client.list_tools()
            results.append(sorted(t.name for t in tools.tools))
            for name, args in calls:
                result = await client.call_tool(name, args)
                text = "".join(getattr(c, "text", "") for c in result.content)
                if result.is_error:
                    results.append((True, text))
                else:
                    results.append((False, result.structured_content or json.loads(text)))
        return results

    return asyncio.run(main())
