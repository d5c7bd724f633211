"""Where a repository says how its app starts, in the order :func:`first_recipe` tries them.

Each source returns the fields of an :class:`~runs.boot.recipe.AppRecipe` (a dict) or None
when the repository does not have it. The files are the repository's: parsed, never run.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Mapping
from urllib.parse import urlsplit

import json5

from runs.boot.errors import RecipeUnsupported
from runs.boot.playwright_config import web_servers

PLAYWRIGHT_CONFIGS = tuple(
    f"playwright.config.{ext}" for ext in ("ts", "js", "mts", "mjs", "cts", "cjs")
)
DEVCONTAINERS = (".devcontainer/devcontainer.json", ".devcontainer.json")
NODE_LOCKS = {  # lock file → the install that keeps to it (npm's, yarn's, pnpm's docs)
    "package-lock.json": "npm ci",
    "npm-shrinkwrap.json": "npm ci",
    "yarn.lock": "yarn install --frozen-lockfile",
    "pnpm-lock.yaml": "pnpm install --frozen-lockfile",
}
PYTHON_DEPENDENCIES = (
    "requirements.txt",
    "pyproject.toml",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
)
COMPOSE = ("compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml")
PYTHON_ENTRIES = {
    "app.py",
    "main.py",
    "wsgi.py",
    "asgi.py",
    "server.py",
    "api.py",
    "application.py",
    "__init__.py",
}
LOOKED_FOR = (
    "playwright.config.* webServer",
    ".devcontainer/devcontainer.json",
    "a Procfile web: line",
    "package.json scripts start/preview/dev",
    "Django manage.py",
    "a Flask, FastAPI or Starlette app with requirements.txt or pyproject.toml",
)
# Ports frameworks listen on when a script names none (their docs' defaults).
DEFAULT_PORTS = (
    (re.compile(r"\bvite\s+preview\b"), 4173),
    (re.compile(r"\bvite\b"), 5173),
    (re.compile(r"\bastro\b"), 4321),
    (re.compile(r"\bng\s+serve\b"), 4200),
    (re.compile(r"\b(next|nuxt|react-scripts|remix|node|nodemon|ts-node|tsx)\b"), 3000),
)
PORT_IN_COMMAND = re.compile(
    r"(?:--port|-p|--listen|--bind|-b)[ =](?:[\w.\[\]:]*:)?(\d{4,5})\b|\bPORT=(\d{4,5})\b"
    r"|(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\]):(\d{4,5})\b|\brunserver\s+(\d{4,5})\b"
)
APP_OBJECT = re.compile(r"^(\w+)\s*(?::\s*\w+\s*)?=\s*(Flask|FastAPI|Starlette)\(", re.MULTILINE)
FACTORY = re.compile(r"^def\s+(create_app|make_app)\s*\(", re.MULTILINE)


def _depth(path: str) -> int:
    return path.count("/")


def wanted(path: str) -> bool:
    """True for the files some source reads (the rest of the tree is never fetched)."""
    name, depth = posixpath.basename(path), _depth(path)
    if name in PLAYWRIGHT_CONFIGS:
        return depth <= 2 and "node_modules/" not in path
    if path in DEVCONTAINERS or path in {"Procfile", "Dockerfile"} or path in COMPOSE:
        return True
    if name in {"package.json", "manage.py", *NODE_LOCKS, *PYTHON_DEPENDENCIES} or (
        name.startswith("requirements") and name.endswith(".txt")
    ):
        return depth <= 1
    return name.endswith(".py") and (depth == 0 or (depth == 1 and name in PYTHON_ENTRIES))


def first_recipe(files: Mapping[str, str]) -> dict | None:
    for source in (_playwright, _devcontainer, _procfile, _package_json, _django, _python_app):
        found = source(files)
        if found is not None:
            return found
    for name in (*COMPOSE, "Dockerfile"):
        if name in files:
            raise RecipeUnsupported(
                f"the app is declared in {name}, which AMTP does not run (containers do not "
                "start inside its sandbox): set the start command and port (and install "
                "commands, if any) in the repository's boot settings",
                found=name,
                fields=["boot_start", "boot_port", "boot_install"],
            )
    return None


def _playwright(files: Mapping[str, str]) -> dict | None:
    configs = sorted((p for p in files if posixpath.basename(p) in PLAYWRIGHT_CONFIGS), key=_depth)
    for path in configs:
        servers = web_servers(files[path])
        if not servers:
            continue
        server = servers[0]
        if server.unreadable:
            raise _unreadable(path, server.unreadable)
        port = server.port or urlsplit(server.url or "").port
        if not server.command or not port:
            missing = "command" if not server.command else "url or port"
            raise _unreadable(path, (missing,))
        workdir = posixpath.normpath(posixpath.join(posixpath.dirname(path), server.cwd or "."))
        if workdir.startswith("..") or workdir.startswith("/"):
            raise _unreadable(path, ("cwd",))
        ready = urlsplit(server.url).path if server.url else "/"
        more = f" (the first of {len(servers)})" if len(servers) > 1 else ""
        return {
            "source": f"from {path} webServer{more}",
            "start": server.command,
            "port": port,
            "ready_path": ready or "/",
            "env": server.env,
            "workdir": workdir,
            **_dependencies(files, workdir),
        }
    return None


def _unreadable(path: str, fields: tuple[str, ...]) -> RecipeUnsupported:
    shown = ", ".join(f"webServer.{f}" for f in fields)
    return RecipeUnsupported(
        f"{path} has a webServer whose {shown} is not a literal AMTP can read without running "
        f"the config: set the start command and port in the repository's boot settings",
        found=path,
        fields=["boot_start", "boot_port"],
    )


def _devcontainer(files: Mapping[str, str]) -> dict | None:
    path = next((p for p in DEVCONTAINERS if p in files), None)
    if path is None:
        return None
    try:
        config = json5.loads(files[path])  # JSONC: comments and trailing commas
    except ValueError as exc:
        raise RecipeUnsupported(
            f"{path} is not valid JSON with comments: {exc}", found=path
        ) from None
    if not isinstance(config, dict):
        return None
    install = _lifecycle_commands(config.get("postCreateCommand"))
    forwarded = config.get("forwardPorts")
    ports = [_forwarded_port(p) for p in forwarded] if isinstance(forwarded, list) else []
    port = next((p for p in ports if p), None)
    if not install and not port:
        return None
    # The commands a person's session starts with: the server, where a repository names it.
    start_key = next((k for k in ("postStartCommand", "postAttachCommand") if config.get(k)), None)
    start = _lifecycle_commands(config.get(start_key)) if start_key else ()
    rest = None if start else _later(files)
    if not start and rest is None:
        raise RecipeUnsupported(
            f"{path} says how to install (postCreateCommand) but not how the app starts, and "
            "nothing else in the repository does: set the start command in the repository's "
            "boot settings",
            found=path,
            fields=["boot_start"],
        )
    used = ", ".join(
        name for name, v in (("postCreateCommand", install), ("forwardPorts", port)) if v
    )
    if start:
        found = {
            "source": f"from {path} {used}, {start_key}",
            "start": " && ".join(start),
            "port": port or 3000,
        }
        return {**found, "install": install, **_lock_files(files, ".")}
    port = port or rest["port"]
    return {
        **rest,
        "source": f"from {path} {used}; start {rest['source']}",
        "install": install or rest.get("install", ()),
        "port": port,
        "env": tuple((k, str(port) if k == "PORT" else v) for k, v in rest.get("env", ())),
    }


def _lifecycle_commands(value) -> tuple[str, ...]:
    """A devcontainer lifecycle command: a string (shell), an array (one command, no shell)
    or an object of those run in parallel (containers.dev/implementors/json_reference)."""
    if isinstance(value, str) and value.strip():
        return (value.strip(),)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return (shlex.join(value),)
    if isinstance(value, dict):
        return tuple(c for v in value.values() for c in _lifecycle_commands(v))
    return ()


def _forwarded_port(value) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 1024 <= value <= 65535:
        return value
    if isinstance(value, str) and re.fullmatch(r"[\w.-]+:\d{4,5}", value):
        return _forwarded_port(int(value.rsplit(":", 1)[1]))
    return None


def _later(files: Mapping[str, str]) -> dict | None:
    for source in (_procfile, _package_json, _django, _python_app):
        found = source(files)
        if found is not None:
            return found
    return None


def _procfile(files: Mapping[str, str]) -> dict | None:
    lines = (files.get("Procfile") or "").splitlines()
    command = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("web:")), "")
    if not command:
        return None
    port = (
        _port_of(command) or 5000
    )  # Heroku passes $PORT; 5000 is its local default (heroku local)
    return {
        "source": "from Procfile web",
        "start": command,
        "port": port,
        "env": (("PORT", str(port)),),
        **_dependencies(files, "."),
    }


def _package_json(files: Mapping[str, str], folder: str = ".") -> dict | None:
    path = posixpath.join(folder, "package.json") if folder != "." else "package.json"
    scripts = _scripts(files.get(path))
    if not scripts:
        return None
    run = _runner(files, folder)
    install = []
    if "start" in scripts:
        chosen = ["start"]
    elif "build" in scripts and ("preview" in scripts or "serve" in scripts):
        chosen = ["build", "preview" if "preview" in scripts else "serve"]
    elif "dev" in scripts:
        chosen = ["dev"]
    else:
        return None
    if len(chosen) == 2:
        install.append(f"{run} build")
    script = scripts[chosen[-1]]
    port = _port_of(script) or next((p for rule, p in DEFAULT_PORTS if rule.search(script)), 3000)
    deps = _dependencies(files, folder)
    return {
        "source": f"from {path} scripts.{' + '.join(chosen)}",
        "start": f"{run} {chosen[-1]}",
        "port": port,
        "env": (("PORT", str(port)),),
        "workdir": folder,
        "install": (*deps["install"], *install),
        "lock_files": deps["lock_files"],
    }


def _scripts(text: str | None) -> dict[str, str]:
    try:
        scripts = json.loads(text).get("scripts") if text else None
    except (ValueError, AttributeError):
        return {}
    return (
        {k: v for k, v in scripts.items() if isinstance(v, str)}
        if isinstance(scripts, dict)
        else {}
    )


def _runner(files: Mapping[str, str], folder: str) -> str:
    lock = next((name for name in NODE_LOCKS if _in(files, folder, name)), "package-lock.json")
    return {"yarn.lock": "yarn", "pnpm-lock.yaml": "pnpm run"}.get(lock, "npm run")


def _django(files: Mapping[str, str]) -> dict | None:
    manage = sorted((p for p in files if posixpath.basename(p) == "manage.py"), key=_depth)
    if not manage:
        return None
    folder = posixpath.dirname(manage[0]) or "."
    deps = _dependencies(files, folder)
    return {
        "source": f"from {manage[0]} (Django)",
        "start": "python manage.py runserver 127.0.0.1:8000 --noreload",
        "port": 8000,
        "seed": "python manage.py migrate --noinput",
        "workdir": folder,
        "services": _python_services(files, folder),
        **deps,
    }


def _python_app(files: Mapping[str, str]) -> dict | None:
    declared = " ".join(
        files[p].lower()
        for p in files
        if posixpath.basename(p) in PYTHON_DEPENDENCIES
        or posixpath.basename(p).startswith("requirements")
    )
    for path in sorted((p for p in files if p.endswith(".py")), key=lambda p: (_depth(p), p)):
        match = APP_OBJECT.search(files[path])
        factory = FACTORY.search(files[path])
        kind = match.group(2) if match else ("Flask" if factory and "flask" in declared else None)
        if kind is None or kind.lower() not in declared:
            continue
        module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        if kind == "Flask":
            target = f"{module}:{match.group(1)}" if match else module
            start, port = f"flask --app {target} run --host 127.0.0.1 --port 5000", 5000
        else:
            start, port = f"uvicorn {module}:{match.group(1)} --host 127.0.0.1 --port 8000", 8000
        return {
            "source": f"from {path} ({kind})",
            "start": start,
            "port": port,
            "services": _python_services(files, "."),
            **_dependencies(files, "."),
        }
    return None


def _python_services(files: Mapping[str, str], folder: str) -> tuple[str, ...]:
    declared = " ".join(
        files.get(posixpath.normpath(posixpath.join(folder, n)), "").lower()
        for n in ("requirements.txt", "pyproject.toml")
    )
    wants = (
        ("postgres", r"\bpsycopg|\basyncpg\b"),
        ("valkey", r"\b(django-)?redis\b|\bvalkey\b|\bcelery\b"),
    )
    return tuple(name for name, rule in wants if re.search(rule, declared))


def _in(files: Mapping[str, str], folder: str, name: str) -> bool:
    return posixpath.normpath(posixpath.join(folder, name)) in files


def _lock_files(files: Mapping[str, str], folder: str) -> dict:
    names = (*NODE_LOCKS, "package.json", *PYTHON_DEPENDENCIES)
    found = [posixpath.normpath(posixpath.join(folder, n)) for n in names if _in(files, folder, n)]
    locks = [p for p in found if posixpath.basename(p) != "package.json"]
    return {"lock_files": tuple(locks or found)}


def _dependencies(files: Mapping[str, str], folder: str) -> dict:
    """The install commands for ``folder``'s dependency files, and the files keying their cache."""
    install = []
    if _in(files, folder, "package.json"):
        lock = next((n for n in NODE_LOCKS if _in(files, folder, n)), None)
        install.append(NODE_LOCKS[lock] if lock else "npm install")
    if _in(files, folder, "requirements.txt"):
        install.append("python -m pip install -r requirements.txt")
    elif _in(files, folder, "pyproject.toml"):
        install.append("python -m pip install .")
    return {"install": tuple(install), **_lock_files(files, folder)}


def _port_of(command: str) -> int | None:
    match = PORT_IN_COMMAND.search(command)
    port = int(next(g for g in match.groups() if g)) if match else None
    return port if port and 1024 <= port <= 65535 else None
