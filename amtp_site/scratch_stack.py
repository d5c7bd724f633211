"""A database and a Valkey DB of their own on the embedded devstack, for the benchmarks in
``scripts/``: they recreate their data on every run and never touch the dev or test data."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from amtp_site import devstack


def use_scratch_stack(*, database: str, valkey_db: int, **env: str) -> None:
    """Start the devstack services the environment does not provide, recreate ``database``
    empty, point this process and its children (agent processes, the MCP server) at it and at
    Valkey DB ``valkey_db`` (plus ``env``) through the environment, set Django up and migrate.
    Call it before anything reads Django settings."""
    import psycopg
    from psycopg import sql

    external = devstack.external_services()
    devstack.up(tuple(s for s in devstack.SERVICES if s not in external))
    urls = {
        **devstack.urls(),
        **{v: os.environ[v] for v in devstack.ENV_VARS.values() if os.environ.get(v)},
    }
    pg = urlsplit(urls["DATABASE_URL"])
    with psycopg.connect(pg._replace(path="/postgres").geturl(), autocommit=True) as conn:
        name = sql.Identifier(database)
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(name))
    os.environ.update(
        DATABASE_URL=pg._replace(path=f"/{database}").geturl(),
        VALKEY_URL=urlsplit(urls["VALKEY_URL"])._replace(path=f"/{valkey_db}").geturl(),
        TEMPORAL_ADDRESS=urls["TEMPORAL_ADDRESS"],
        **env,
    )
    os.environ.setdefault("AMTP_LOG_LEVEL", "WARNING")
    os.environ.setdefault("DJANGO_DEBUG", "true")  # developer tools: development settings
    from amtp_site.child import django_setup

    django_setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
