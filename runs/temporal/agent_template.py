"""The template every agent process is forked from.

The worker's agent pool uses multiprocessing's forkserver, which preloads this module once in
its own single-threaded process: Django is set up and the whole agent stack is imported there,
so a fresh agent process costs a fork (milliseconds), not a Python start-up, ``django.setup()``
and the SDK imports (2-4 s of CPU). Each activity still runs in a process that has never run
another one: the template runs none, and the pool forks one child per task
(``max_tasks_per_child=1``). The template holds no open database connection, Valkey
connection, thread or event loop for its children to inherit.

What an agent process needs is listed here, in one place; add a module when an agent starts
importing a heavy one lazily, and a function to ``CACHES`` for a cache every child would
otherwise fill on its own. Only pure, read-only caches belong there (compiled validators,
tables, regexes): never a connection, client, thread, event loop, or anything an activity
writes to, so that a child still starts as a process that has never run an activity.
"""

from __future__ import annotations

import gc
import importlib
import logging
import threading

from amtp_site.child import django_setup

log = logging.getLogger(__name__)

PRELOAD = (
    "runs.temporal.agent_process",  # the pool's initializer, and what wraps each task
    "verification.healer",  # the healing session, unpickled by the pool
    "agents.service",
    "agents.crawler",  # the MCP SDK
    "repositories.mcp_server",  # the MCP server the crawler runs in its own process
    "repositories.hosts.github",  # PyGithub
    "repositories.hosts.local",  # pygit2 (libgit2)
    "agents.providers.offline",
    "agents.providers.anthropic",  # the vendors' SDKs
    "agents.providers.openai",
    # Imported on first use, i.e. in every crawl (measured: ~30 ms of a child's CrawlRepo):
    "anyio._backends._asyncio",  # anyio picks its backend when the MCP session starts
    "rich.console",  # the MCP SDK's MCPServer() configures logging with rich
    "rich.logging",
)
# Called once here; each fills a pure, read-only cache.
CACHES = (
    "schemas.compile_all",  # both validators of every contract, ~2 ms per stage
    "repositories.mcp_server.tools",  # the MCP tools' argument and request models, ~12 ms per crawl
)


def warm(modules=PRELOAD, caches=CACHES) -> None:
    """Set Django up, import ``modules`` and fill ``caches``; an import that fails raises
    ImportError naming the module."""
    gc.disable()  # no collection leaves holes in the pages the children share
    django_setup()
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:
            raise ImportError(f"preload module {name} failed to import: {exc!r}") from exc
    for path in caches:
        module, _, function = path.rpartition(".")
        getattr(importlib.import_module(module), function)()
    from django.db import connections

    connections.close_all()  # each child opens its own; none is shared through the fork
    if threading.active_count() > 1:  # forking a process with threads can deadlock its child
        log.warning("agent template: threads running after preload: %s", threading.enumerate())
    # A child's collections skip what the template made, instead of touching every object
    # (measured: a full collection in a child took 2-3 s of copy-on-write faults on a loaded
    # machine). Each child turns collection back on (runs.temporal.worker).
    gc.freeze()


def preload(modules=PRELOAD, caches=CACHES) -> str:
    """:func:`warm`; what went wrong ('' if nothing). Never raises: the forkserver skips a
    preload module that raises ImportError without a word, and dies on anything else, which
    leaves the pool unable to start any process. Instead, every task given to an agent
    process fails with this message (runs.temporal.worker), and the log says it at once."""
    try:
        warm(modules, caches)
    except Exception as exc:
        log.error("the agent process template could not preload", exc_info=True)
        return f"agent processes cannot start: {exc}"
    return ""


PRELOAD_ERROR = preload()
