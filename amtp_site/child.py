"""Initializer of spawned agent processes. Imports nothing from Django apps, because the
child unpickles this function before Django is set up."""

import ctypes
import os

PR_SET_DUMPABLE = 4


def undumpable() -> None:
    """Make this process non-dumpable: no other process of the same user may read its memory,
    its ``/proc/<pid>/environ`` or attach to it (keys, tokens and database URLs live there).
    Linux resets the flag at exec, so every worker and pool process calls this itself."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def django_setup() -> None:
    undumpable()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")
    import django

    django.setup()


def connection_env() -> dict[str, str]:
    """The environment a child process (MCP server, agent process) needs to reach the same
    database, Valkey and GitHub as this one, whatever this process's settings were built from
    (e.g. the test database)."""
    from urllib.parse import quote

    from django.conf import settings

    db = settings.DATABASES["default"]
    auth = quote(db["USER"], safe="") + (
        f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
    )
    return {
        "DATABASE_URL": f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "VALKEY_URL": settings.VALKEY_URL,
        "GITHUB_API_URL": settings.GITHUB_API_URL,
        "GITHUB_TOKEN": settings.GITHUB_TOKEN,
        "GITHUB_SECONDS_BETWEEN_WRITES": str(settings.GITHUB_SECONDS_BETWEEN_WRITES),
    }
