"""Python web rules: dependency manifests, Django (`django_rules`), Flask and FastAPI.

Flask and FastAPI routes are found as the frameworks register them: decorators and
`add_url_rule` on an app, Blueprint or APIRouter, whose prefix is the chain of
`register_blueprint(..., url_prefix=...)` / `include_router(..., prefix=...)` calls above it
(Flask: a registration prefix replaces the blueprint's own, nested ones join with one slash;
FastAPI: include prefixes and the router's own prefix concatenate). A route decorated on an
imported Blueprint (`from app.auth import bp`) belongs to that Blueprint; a prefix may be a
constant set once elsewhere (`prefix=settings.API_V1_STR`)."""

from __future__ import annotations

import posixpath
import re

from .common import Findings, balanced, ident_before, join_route
from .django_rules import detect_django
from .py_source import imported_names, kwarg, view_methods

_MANIFESTS = ("requirements.txt", "pyproject.toml", "Pipfile", "setup.py", "setup.cfg")
_DEP_NAMES = {
    "django": "django",
    "djangorestframework": "django-rest-framework",
    "flask": "flask",
    "fastapi": "fastapi",
}
_PY_ASSIGN = re.compile(
    r"^\s*(\w+)\s*(?::\s*\w+\s*)?=\s*(Flask|FastAPI|Blueprint|APIRouter)\s*\(", re.M
)
_DECORATOR = re.compile(
    r"^\s*@\s*(\w+)\s*\.\s*(route|get|post|put|patch|delete|api_route)\s*\(", re.M
)


def _deps(files: dict[str, str]) -> set[str]:
    names: set[str] = set()
    for path, text in files.items():
        if posixpath.basename(path) in _MANIFESTS or re.search(r"requirements[\w.-]*\.txt$", path):
            for dep in _DEP_NAMES:
                if re.search(rf"(?im)^[\s\"'\[]*{dep}\b|[\"']{dep}[\"'=<>~! ]", text):
                    names.add(dep)
    return names


def detect_python(paths: list[str], files: dict[str, str], found: Findings) -> None:
    py_files = {p: t for p, t in files.items() if p.endswith(".py")}
    manifests = [
        p
        for p in paths
        if posixpath.basename(p) in _MANIFESTS + ("manage.py",)
        or re.search(r"(^|/)requirements[\w.-]*\.txt$", p)
    ]
    if not manifests and not any(p.endswith(".py") for p in paths):
        return
    found.runtime("python")
    found.language("python")
    for path in manifests:
        found.mark(path, "config")
    deps = _deps(files)
    imports = " ".join(py_files.values())
    for dep, name in _DEP_NAMES.items():
        module = "rest_framework" if dep == "djangorestframework" else dep
        imported = module in imports and re.search(
            rf"^\s*(from|import)\s+{module}\b", imports, re.M
        )
        if dep in deps or imported:
            found.framework(name)
    for path in paths:
        if re.search(r"(^|/)(settings|wsgi|asgi)\.py$", path) and "django" in found.frameworks:
            found.mark(path, "config")
    if "django" in found.frameworks:
        detect_django(py_files, "django-rest-framework" in found.frameworks, found)
    if {"flask", "fastapi"} & set(found.frameworks):
        _decorated(py_files, found)
    if found.base_url is None and found.routes:
        web = set(found.frameworks)
        flask_only = "flask" in web and not {"django", "fastapi"} & web
        found.base_url = "http://localhost:5000" if flask_only else "http://localhost:8000"


# --- Flask / FastAPI ----------------------------------------------------------------------

MAX_MOUNTS = 500  # real apps mount a handful; bounds hostile files
MAX_NESTING = 20

Node = tuple[str, str]  # (file, variable)


def _objects(py_files: dict[str, str]) -> dict[Node, tuple[str, str]]:
    """(file, variable) → (Flask|FastAPI|Blueprint|APIRouter, own prefix)."""
    out = {}
    for path, text in py_files.items():
        kinds = ("Flask", "FastAPI", "Blueprint", "APIRouter")
        for match in _PY_ASSIGN.finditer(text) if any(k in text for k in kinds) else ():
            args = balanced(text, match.end() - 1)
            own = _given_prefix(args, py_files) or ""
            out[(path, match.group(1))] = (match.group(2), own)
    return out


_PREFIX_NAME = re.compile(r"\b(?:url_prefix|prefix)\s*=\s*([A-Za-z_][\w.]*)\s*[,)]?")


def _given_prefix(args: str, py_files: dict[str, str]) -> str | None:
    """`url_prefix=`/`prefix=` of a call: a literal, or a constant named there
    (`prefix=settings.API_V1_STR` → `API_V1_STR: str = "/api/v1"` wherever it is set once)."""
    literal = kwarg(args, "url_prefix") or kwarg(args, "prefix")
    if literal is not None:
        return literal
    named = _PREFIX_NAME.search(args)
    if named is None:
        return None
    name = named.group(1).rpartition(".")[2]
    pattern = re.compile(
        rf"^\s*{re.escape(name)}\s*(?::\s*[\w\[\]|. ]+)?=\s*(['\"])(/[^'\"]*)\1", re.M
    )
    values = {m.group(2) for t in py_files.values() if name in t for m in pattern.finditer(t)}
    return values.pop() if len(values) == 1 else None  # set twice: ambiguous, not guessed


def _mount_target(expr: str, path: str, imported: dict, objects: dict) -> Node | None:
    """The (file, variable) that `register_blueprint(expr)`/`include_router(expr)` mounts."""
    module, _, attr = expr.rpartition(".")
    if not module:  # a bare name: a local object or `from x.y import bp as name`
        if (path, expr) in objects:
            return path, expr
        if expr not in imported:
            return None
        module, attr = imported[expr]
    # `items.router` after `from app.routers import items`: the module is items.py itself.
    stem = module.split(".")[-1]
    for file, name in sorted(objects):
        base = posixpath.basename(file)
        if name == attr and (base == stem + ".py" or file.endswith(f"{stem}/__init__.py")):
            return file, name
    return None


_MOUNT_CALL = re.compile(r"\.\s*(register_blueprint|include_router)\s*\(")


def _mounts(py_files: dict[str, str], objects: dict) -> dict[Node, tuple[Node, str | None]]:
    """Mounted Blueprint/APIRouter → (what it is mounted on, the prefix given there)."""
    parents: dict[Node, tuple[Node, str | None]] = {}
    for path, text in sorted(py_files.items()):
        imported = imported_names(text)
        if "register_blueprint" not in text and "include_router" not in text:
            continue
        for n, match in enumerate(_MOUNT_CALL.finditer(text)):
            if n >= MAX_MOUNTS:
                break
            args = balanced(text, match.end() - 1)
            expr = re.match(r"\s*([\w.]+)", args)
            target = _mount_target(expr.group(1), path, imported, objects) if expr else None
            parent = (path, ident_before(text, match.start() + 1) or "")
            if target and target != parent:
                given = _given_prefix(args, py_files)
                parents.setdefault(target, (parent, given))
    return parents


def _prefix(node: Node, objects: dict, parents: dict, depth: int = 0) -> str:
    """Effective prefix of an app/Blueprint/APIRouter, following its registrations."""
    kind, own = objects.get(node, ("Flask", ""))
    if node not in parents or depth >= MAX_NESTING:  # unmounted, or a cycle: own prefix
        return own
    parent, given = parents[node]
    above = _prefix(parent, objects, parents, depth + 1)
    if kind == "Blueprint":  # a prefix given at registration replaces the blueprint's own
        mine = given if given is not None else own
        return join_route(above, mine) if above and mine else above or mine
    return above + (given or "") + own  # FastAPI concatenates literally


# What FastAPI() serves unless told otherwise (fastapi/applications.py: openapi_url,
# docs_url, redoc_url); None turns one off.
_FASTAPI_DOCS = (("openapi_url", "/openapi.json", True), ("docs_url", "/docs", False))
_FASTAPI_DOCS += (("redoc_url", "/redoc", False),)


def _fastapi_docs(py_files: dict[str, str], found: Findings) -> None:
    """The schema and documentation pages each ``FastAPI()`` app mounts by itself."""
    for path, text in sorted(py_files.items()):
        for match in _PY_ASSIGN.finditer(text) if "FastAPI" in text else ():
            if match.group(2) != "FastAPI":
                continue
            args = balanced(text, match.end() - 1)
            schema_off = re.search(r"\bopenapi_url\s*=\s*None\b", args)
            for name, default, json in _FASTAPI_DOCS:
                if re.search(rf"\b{name}\s*=\s*None\b", args) or (schema_off and not json):
                    continue  # turned off (without the schema, no docs page either)
                given = kwarg(args, name)
                url = given if given is not None else default
                if url.startswith("/") and (given is not None or f"{name}=" not in args):
                    found.route("GET", url, path, json=json)


def _decorated(py_files: dict[str, str], found: Findings) -> None:
    _fastapi_docs(py_files, found)
    objects = _objects(py_files)
    parents = _mounts(py_files, objects)
    for path, text in sorted(py_files.items()):
        imported = imported_names(text) if "import" in text else {}
        default = "FastAPI" if "fastapi" in text and "flask" not in text.lower() else "Flask"
        # Flask views return JSON or HTML; the file's helpers tell which (computed once).
        flask_json = True if "jsonify" in text else (False if "render_template" in text else None)
        for var, rule, methods in _registrations(text, py_files):
            # `from app.auth import bp` then `@bp.route(...)`: the Blueprint of app/auth/__init__.py
            node = _mount_target(var, path, imported, objects) or (path, var)
            kind = objects.get(node, (default, ""))[0]
            prefix = _prefix(node, objects, parents)
            if kind in ("FastAPI", "APIRouter"):
                route, json = prefix + rule, True
            else:
                route = join_route(prefix, rule)
                json = True if route.startswith("/api") else flask_json
            for method in methods:
                found.route(method, route, path, json=json)


_ADD_URL_RULE = re.compile(r"\.\s*add_url_rule\s*\(")
_VIEW_CLASS = re.compile(
    r"view_func\s*=\s*([\w.]+)\.as_view\s*\(|^[^,]*,[^,]*,\s*([\w.]+)\.as_view"
)


def _registrations(text: str, py_files: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    """(receiver, rule, methods) of each decorator route and `add_url_rule` in a file."""
    out = []
    for match in _DECORATOR.finditer(text) if "@" in text else ():
        args = balanced(text, match.end() - 1)
        literal = re.match(r"\s*(?:path\s*=\s*)?(['\"])([^'\"]*)\1", args)
        if literal:
            verb = match.group(2)
            generic = verb in ("route", "api_route")
            methods = (_listed(args) if generic else [verb]) or ["GET"]
            out.append((match.group(1), literal.group(2), methods))
    for match in _ADD_URL_RULE.finditer(text) if "add_url_rule" in text else ():
        receiver = ident_before(text, match.start() + 1)
        args = balanced(text, match.end() - 1)
        literal = re.match(r"\s*(?:rule\s*=\s*)?(['\"])([^'\"]*)\1", args)
        if literal:
            view = _VIEW_CLASS.search(args)
            methods = _listed(args)
            if view and not methods:  # a MethodView answers what its class defines
                methods = view_methods(py_files, (view.group(1) or view.group(2)).split(".")[-1])
            if receiver:
                out.append((receiver, literal.group(2), methods or ["GET"]))
    return out


_METHODS = re.compile(r"methods\s*=\s*[\[({]([^\])}]*)")


def _listed(args: str) -> list[str]:
    """The `methods=[...]` of a route registration, if given."""
    listed = _METHODS.search(args)
    return [m.upper() for m in re.findall(r"['\"](\w+)['\"]", listed.group(1))] if listed else []
