"""Talk to `manage.py mcp_github` the way the crawler does: a real MCP session over stdio."""

import asyncio
import json
import os
import sys
from pathlib import Path

from django.conf import settings
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent


def server_env() -> dict[str, str]:
    """The child process must see the test database and Valkey database, not the dev ones."""
    db = settings.DATABASES["default"]
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["DATABASE_URL"] = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env["VALKEY_URL"] = settings.VALKEY_URL
    env["GITHUB_API_URL"] = settings.GITHUB_API_URL
    env["GITHUB_TOKEN"] = settings.GITHUB_TOKEN
    return env


def call_tools(calls, *, crawl_id="", repo=""):
    """Run [(tool, args), ...] in one session; return [(is_error, payload_or_text), ...]."""

    async def main():
        params = StdioServerParameters(
            command=sys.executable,
            args=["manage.py", "mcp_github", "--crawl-id", crawl_id, "--repo", repo],
            env=server_env(),
            cwd=str(ROOT),
        )
        results = []
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
