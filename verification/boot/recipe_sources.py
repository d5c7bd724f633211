"""Where a repository says how its app starts, in the order :func:`first_recipe` tries them.

Each source returns the fields of an :class:`~verification.boot.recipe.AppRecipe` (a dict) or None
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

from verification.boot import dependencies as deps
from verification.boot.errors import RecipeUnsupported
from verification.boot.playwright_config import web_servers

PLAYWRIGHT_CONFIGS = tuple(
    f"playwright.config.{ext}" for ext in ("ts", "js", "mts", "mjs", "cts", "cjs")
)
DEVCONTAINERS = (".devcontainer/devcontainer.json", ".devcontainer.json")
COMPOSE = ("compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml")
NODE_ENTRIES = tuple(
    f"{n}.{e}" for n in ("server", "app", "index", "main") for e in ("js", "mjs", "cjs")
)
NODE_LISTEN = re.compile(
    r"\.listen\(\s*(?:(?:process\.env\.PORT|port|PORT)\s*(?:\|\||\?\?)\s*)?(\d{4,5})?"
)
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
    "a Node server file (server.js, app.js, index.js, main.js) that calls .listen(",
)
NOT_APP_FOLDERS = {"tests", "test", "docs", "docs_src", "examples", "scripts", "migrations"}
# Ports frameworks listen on when a script names none (their docs' defaults).
DEFAULT_PORTS = (
    (re.compile(r"\bvite\s+preview\b"), 4173),
    (re.compile(r"\bvite\b"), 5173),
    (re.compile(r"\bastro\b"), 4321),
    (re.compile(r"\bng\s+serve\b"), 4200),
    (re.compile(r"\b(next|nuxt|react-scripts|remix|node|nodemon|ts-node|tsx)\b"), 3000),
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
    if name in {"package.json", "manage.py", *deps.NODE_LOCKS, *deps.PYTHON_DEPENDENCIES} or (
        name.startswith("requirements") and name.endswith(".txt")
    ):
        return depth <= 1
    if name in NODE_ENTRIES:
        return depth == 0
    if not name.endswith(".py") or path.split("/", 1)[0] in NOT_APP_FOLDERS:
        return False
    return depth == 0 or (depth == 1 and name in PYTHON_ENTRIES)


def first_recipe(files: Mapping[str, str]) -> dict | None:
    for source in (
        _playwright,
        _devcontainer,
        _procfile,
        _package_json,
        _django,
        _python_app,
        _node_entry,
    ):
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
        port = server.port if server.port and 1024 <= server.port <= 65535 else None
        port = port or _url_port(server.url)
        if not server.command or not port:
            missing = "command" if not server.command else "url or port"
            raise _unreadable(path, (missing,))
        workdir = posixpath.normpath(posixpath.join(posixpath.dirname(path), server.cwd or "."))
        if workdir.startswith("..") or workdir.startswith("/"):
            raise _unreadable(path, ("cwd",))
        ready = urlsplit(server.url).path if server.url and port else "/"
        more = f" (the first of {len(servers)})" if len(servers) > 1 else ""
        return {
            "source": f"from {path} webServer{more}",
            "start": server.command,
            "port": port,
            "ready_path": ready or "/",
            "env": server.env,
            "workdir": workdir,
            **deps.dependencies(files, workdir),
        }
    return None


def _url_port(url: str | None) -> int | None:
    """The port of a webServer ``url`` (http's 80 is no app port the box can use)."""
    try:
        port = urlsplit(url or "").port
    except ValueError:  # "http://localhost:99999", "http://[::1"
        return None
    return port if port and 1024 <= port <= 65535 else None


def _unreadable(path: str, fields: tuple[str, ...]) -> RecipeUnsupported:
    shown = ", ".join(f if f == "webServer" else f"webServer.{f}" for f in fields)
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
        return {**found, "install": install, **deps.lock_files(files, ".")}
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
    for source in (_procfile, _package_json, _django, _python_app, _node_entry):
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
        deps.port_of(command) or 5000
    )  # Heroku passes $PORT; 5000 is its local default (heroku local)
    return {
        "source": "from Procfile web",
        "start": command,
        "port": port,
        "env": (("PORT", str(port)),),
        **deps.dependencies(files, "."),
    }


def _package_json(files: Mapping[str, str], folder: str = ".") -> dict | None:
    path = posixpath.join(folder, "package.json") if folder != "." else "package.json"
    scripts = _scripts(files.get(path))
    if not scripts:
        return None
    run = _runner(files, folder)
    install = []
    served = "start" if "start" in scripts else "preview" if "preview" in scripts else "serve"
    if served == "start" or ("build" in scripts and served in scripts):
        # a start or preview script serves the build (`next start` refuses without one)
        chosen = ["build", served] if "build" in scripts else [served]
    elif "dev" in scripts:
        chosen = ["dev"]
    else:
        return None
    if len(chosen) == 2:
        install.append(f"{run} build")
    script = scripts[chosen[-1]]
    port = deps.port_of(script) or next(
        (p for rule, p in DEFAULT_PORTS if rule.search(script)), 3000
    )
    found = deps.dependencies(files, folder)
    return {
        "source": f"from {path} scripts.{' + '.join(chosen)}",
        "start": f"{run} {chosen[-1]}",
        "port": port,
        "env": (("PORT", str(port)),),
        "workdir": folder,
        "install": (*found["install"], *install),
        "lock_files": found["lock_files"],
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
    lock = next(
        (name for name in deps.NODE_LOCKS if deps.in_folder(files, folder, name)),
        "package-lock.json",
    )
    runners = {"yarn.lock": "yarn", "pnpm-lock.yaml": "pnpm run", "bun.lock": "bun run"}
    return {**runners, "bun.lockb": "bun run"}.get(lock, "npm run")


def _django(files: Mapping[str, str]) -> dict | None:
    manage = sorted((p for p in files if posixpath.basename(p) == "manage.py"), key=_depth)
    if not manage:
        return None
    folder = posixpath.dirname(manage[0]) or "."
    found = deps.dependencies(files, folder)
    return {
        "source": f"from {manage[0]} (Django)",
        "start": "python manage.py runserver 127.0.0.1:8000 --noreload",
        "port": 8000,
        "seed": "python manage.py migrate --noinput",
        "workdir": folder,
        "services": _python_services(files, folder),
        **found,
    }


def _python_app(files: Mapping[str, str]) -> dict | None:
    declared = " ".join(
        files[p].lower()
        for p in files
        if posixpath.basename(p) in deps.PYTHON_DEPENDENCIES
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
            **deps.dependencies(files, "."),
        }
    return None


def _node_entry(files: Mapping[str, str]) -> dict | None:
    """A server file at the root that listens (an Express example without a start script)."""
    for name in NODE_ENTRIES:
        match = NODE_LISTEN.search(files.get(name) or "")
        if match is None:
            continue
        port = int(match.group(1)) if match.group(1) else 3000
        port = port if 1024 <= port <= 65535 else 3000
        return {
            "source": f"from {name} (.listen)",
            "start": f"node {name}",
            "port": port,
            "env": (("PORT", str(port)),),
            **deps.dependencies(files, "."),
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
