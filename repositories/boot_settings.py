"""The repository settings that override any field of the app recipe AMTP finds in a
repository (verification.boot.recipe): the values as the recipe uses them, and their rules.

Environment values may be secrets (a Stripe test key, say): they are stored encrypted, as the
login credentials are (:mod:`repositories.credentials`), and the recipe carries only their
names (``secret_env``); the stage that starts the app resolves them in the worker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SERVICES = ("postgres", "valkey")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
# The variables the box sets itself, or that would change how every program in it behaves.
RESERVED_ENV = frozenset(
    {"PATH", "HOME", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "NODE_OPTIONS", "PORT"}
    | {"DATABASE_URL", "REDIS_URL"}
)
COMMAND_MAX = 1000
PATH = re.compile(r"^/(?![/\\])[^\s#\\]{0,499}$")

COMMAND_INVALID = f"one line, at most {COMMAND_MAX} characters, no control characters"
PORT_INVALID = "a port number from 1024 to 65535 (the app runs unprivileged)"
READY_PATH_INVALID = "a path on the app, e.g. / or /health (no // or \\ at its start)"
SERVICES_INVALID = "each one of: " + ", ".join(SERVICES)
WORKDIR_INVALID = "a folder of the repository, e.g. . or web (relative, no ..)"
ENV_INVALID = (
    "NAME=value lines; NAME in capitals, digits and _ (at most 64), not one the box sets "
    "itself (" + ", ".join(sorted(RESERVED_ENV)) + ")"
)


@dataclass(frozen=True)
class RepositoryBootSettings:
    """What a repository's settings say about booting its app; None (or empty): not set, the
    recipe found in the repository decides."""

    install: tuple[str, ...] | None = None
    start: str | None = None
    port: int | None = None
    ready_path: str | None = None
    secret_env: tuple[str, ...] = ()  # names: the values are stored encrypted
    seed: str | None = None
    services: tuple[str, ...] | None = None
    workdir: str | None = None

    @property
    def fields(self) -> tuple[str, ...]:
        """The recipe fields these settings set, in the recipe's order."""
        names = ("install", "start", "port", "ready_path", "seed", "services", "workdir")
        chosen = [n for n in names if getattr(self, n) is not None]
        return tuple(chosen + (["secret_env"] if self.secret_env else []))


WORKER_PREFIX = "AMTP_APP_"  # the app's NAME comes from the worker's AMTP_APP_NAME
BOOT_ENV = "boot_env"  # the plain NAME=value lines: only ever written (stored encrypted)
ENV_TWICE = "{names}: set both as stored values and as worker variables; keep one"


def boot_settings_of(repository) -> RepositoryBootSettings | None:
    """``repository``'s overrides, or None when it sets none."""
    settings = RepositoryBootSettings(
        install=tuple(lines(repository.boot_install)) or None,
        start=repository.boot_start or None,
        port=repository.boot_port or None,
        ready_path=repository.boot_ready_path or None,
        secret_env=tuple(repository.boot_env_names or ()) + tuple(repository.boot_env_worker or ()),
        seed=repository.boot_seed or None,
        services=tuple(repository.boot_services) if repository.boot_services else None,
        workdir=repository.boot_workdir or None,
    )
    return settings if settings.fields else None


def lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _command_problem(value) -> str | None:
    if not isinstance(value, str) or len(value) > COMMAND_MAX or "\n" in value.strip():
        return COMMAND_INVALID
    return COMMAND_INVALID if any(ord(c) < 32 or ord(c) == 127 for c in value) else None


def parse_env(text: str) -> tuple[dict[str, str], str | None]:
    """``NAME=value`` lines → ({name: value}, the problem or None)."""
    found: dict[str, str] = {}
    for line in lines(text):
        name, sep, value = line.partition("=")
        bad_value = any(ord(c) < 32 or ord(c) == 127 for c in value) or len(value) > COMMAND_MAX
        if not sep or not ENV_NAME.match(name) or name in RESERVED_ENV or bad_value:
            return {}, ENV_INVALID
        found[name] = value
    return found, None


def boot_problems(values: dict) -> dict[str, list[str]]:
    """{field: problems} of the boot settings in ``values`` (as they would be saved)."""
    errors: dict[str, list[str]] = {}
    for name in ("boot_start", "boot_seed"):
        if values.get(name) and (problem := _command_problem(values[name])):
            errors[name] = [problem]
    install = values.get("boot_install") or ""
    if not isinstance(install, str) or any(_command_problem(c) for c in lines(install)):
        errors["boot_install"] = [COMMAND_INVALID + " (one command a line)"]
    port = values.get("boot_port")
    if port is not None and (
        isinstance(port, bool) or not isinstance(port, int) or not 1024 <= port <= 65535
    ):
        errors["boot_port"] = [PORT_INVALID]
    ready = values.get("boot_ready_path")
    if ready and (not isinstance(ready, str) or not PATH.match(ready)):
        errors["boot_ready_path"] = [READY_PATH_INVALID]
    services = values.get("boot_services") or []
    if not isinstance(services, list) or any(s not in SERVICES for s in services):
        errors["boot_services"] = [SERVICES_INVALID]
    worker = values.get("boot_env_worker") or []
    if not isinstance(worker, list) or any(
        not isinstance(n, str) or not ENV_NAME.match(n) or n in RESERVED_ENV for n in worker
    ):
        errors["boot_env_worker"] = [ENV_INVALID.replace("NAME=value lines; NAME", "names")]
    workdir = values.get("boot_workdir")
    if workdir and not _relative_folder(workdir):
        errors["boot_workdir"] = [WORKDIR_INVALID]
    return errors


def _relative_folder(value) -> bool:
    if not isinstance(value, str) or len(value) > 200 or value.startswith(("/", "\\")):
        return False
    parts = value.replace("\\", "/").split("/")
    return all(p and p != ".." and not any(ord(c) < 32 for c in p) for p in parts)
