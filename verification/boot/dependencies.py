"""The dependency files of an app's folder: the commands that install them, and the lock
files that key the dependency cache (verification.boot.recipe_sources uses them for every source)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping

NODE_LOCKS = {  # lock file → the install that keeps to it (npm's, yarn's, pnpm's docs)
    "package-lock.json": "npm ci",
    "npm-shrinkwrap.json": "npm ci",
    "yarn.lock": "yarn install --frozen-lockfile",
    "pnpm-lock.yaml": "pnpm install --frozen-lockfile",
    "bun.lock": "bun install --frozen-lockfile",
    "bun.lockb": "bun install --frozen-lockfile",
}
PYTHON_DEPENDENCIES = (
    "requirements.txt",
    "pyproject.toml",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
)
PORT_IN_COMMAND = re.compile(
    r"(?:--port|-p|--listen|--bind|-b)[ =](?:[\w.\[\]:]*:)?(\d{4,5})\b|\bPORT=(\d{4,5})\b"
    r"|(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\]):(\d{4,5})\b|\brunserver\s+(\d{4,5})\b"
)


def in_folder(files: Mapping[str, str], folder: str, name: str) -> bool:
    return posixpath.normpath(posixpath.join(folder, name)) in files


def lock_files(files: Mapping[str, str], folder: str) -> dict:
    names = (*NODE_LOCKS, "package.json", *PYTHON_DEPENDENCIES)
    found = [
        posixpath.normpath(posixpath.join(folder, n)) for n in names if in_folder(files, folder, n)
    ]
    locks = [p for p in found if posixpath.basename(p) != "package.json"]
    return {"lock_files": tuple(locks or found)}


def dependencies(files: Mapping[str, str], folder: str) -> dict:
    """The install commands for ``folder``'s dependency files, and the files keying their cache."""
    install = []
    if in_folder(files, folder, "package.json"):
        lock = next((n for n in NODE_LOCKS if in_folder(files, folder, n)), None)
        install.append(NODE_LOCKS[lock] if lock else "npm install")
    if in_folder(files, folder, "requirements.txt"):
        install.append("python -m pip install -r requirements.txt")
    elif in_folder(files, folder, "pyproject.toml"):
        install.append("python -m pip install .")
    return {"install": tuple(install), **lock_files(files, folder)}


def port_of(command: str) -> int | None:
    match = PORT_IN_COMMAND.search(command)
    port = int(next(g for g in match.groups() if g)) if match else None
    return port if port and 1024 <= port <= 65535 else None
