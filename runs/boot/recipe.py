"""How a repository's app is started (the shared interface of issue 40).

Placeholder holding only the agreed ``AppRecipe``: engineer "recipe" owns this module (with
``find_recipe``); at merge their version replaces this one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AppRecipe:
    source: str  # shown to users: "from playwright.config.ts webServer", "repository settings"
    start: str  # shell command that starts the app, run from `workdir`
    port: int  # the port the app listens on (inside the box, loopback)
    ready_path: str = "/"  # GET this until it answers < 500
    install: tuple[str, ...] = ()  # shell commands, in order, run from `workdir`
    env: tuple[tuple[str, str], ...] = ()  # plain (non-secret) environment
    secret_env: tuple[str, ...] = ()  # NAMES of variables whose values come from settings/env
    services: tuple[str, ...] = ()  # subset of ("postgres", "valkey")
    seed: str | None = None  # command run once after the services are up and before start
    workdir: str = "."  # relative to the repository root
    lock_files: tuple[str, ...] = ()  # files whose content keys the dependency cache
