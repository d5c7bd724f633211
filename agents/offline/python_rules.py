"""Python web rules: dependency manifests, Django urls.py (+ DRF routers), Flask, FastAPI."""

from __future__ import annotations

import posixpath
import re

from .common import Findings, balanced, join_route

_MANIFESTS = ("requirements.txt", "pyproject.toml", "Pipfile", "setup.py", "setup.cfg")
_DEP_NAMES = {
    "django": "django",
    "djangorestframework": "django-rest-framework",
    "flask": "flask",
    "fastapi": "fastapi",
}
_DJ_CALL = re.compile(r"\b(path|re_path|url)\s*\(\s*r?(['\"])(.*?)\2")
_DJ_INCLUDE = re.compile(r"include\(\s*\(?\s*['\"]([\w.]+)['\"]")
_DRF_INCLUDE = re.compile(r"include\(\s*(\w+)\.urls\s*\)")
_DRF_REGISTER = re.compile(r"\b(\w+)\.register\(\s*r?['\"]([^'\"]*)['\"]")
_PY_ASSIGN = re.compile(
    r"^\s*(\w+)\s*(?::\s*\w+\s*)?=\s*(Flask|FastAPI|Blueprint|APIRouter)\s*\(", re.M
)
_DECORATOR = re.compile(
    r"^\s*@\s*(\w+)\s*\.\s*(route|get|post|put|patch|delete|api_route)\s*\(", re.M
)
_MOUNT = re.compile(r"\.\s*(register_blueprint|include_router)\s*\(")
_FROM_IMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+([^\n(]+|\([^)]*\))", re.M)


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
        if dep in deps or re.search(rf"^\s*(from|import)\s+{module}\b", imports, re.M):
            found.framework(name)
    for path in paths:
        if re.search(r"(^|/)(settings|wsgi|asgi)\.py$", path) and "django" in found.frameworks:
            found.mark(path, "config")
    if "django" in found.frameworks:
        _django(paths, py_files, found)
    if {"flask", "fastapi"} & set(found.frameworks):
        _decorated(py_files, found)
    if found.base_url is None and found.routes:
        web = set(found.frameworks)
        flask_only = "flask" in web and not {"django", "fastapi"} & web
        found.base_url = "http://localhost:5000" if flask_only else "http://localhost:8000"


# --- Django -------------------------------------------------------------------------------


def _regex_route(pattern: str) -> str:
    """`^articles/(?P<year>[0-9]{4})/$` → `articles/{year}/` (leftover regex is rejected later)."""
    text = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern)
    return text.lstrip("^").rstrip("$")


def _module_file(module: str, paths: list[str] | dict[str, str]) -> str | None:
    """`blog.urls` → `blog/urls.py` (or `src/blog/urls.py` …) if it exists."""
    suffix = module.replace(".", "/") + ".py"
    matches = sorted((p for p in paths if p == suffix or p.endswith("/" + suffix)), key=len)
    return matches[0] if matches else None


def _django(paths: list[str], py_files: dict[str, str], found: Findings) -> None:
    urls = {p: t for p, t in py_files.items() if posixpath.basename(p) == "urls.py"}
    includes: dict[str, tuple[str, str]] = {}  # included file → (including file, prefix)
    for path, text in urls.items():
        for match in _DJ_CALL.finditer(text):
            args = balanced(text, text.index("(", match.start()))
            target = _DJ_INCLUDE.search(args)
            file = _module_file(target.group(1), urls) if target else None
            if file and file != path:
                includes.setdefault(file, (path, _django_prefix(match)))
    drf = "django-rest-framework" in found.frameworks
    for path, text in sorted(urls.items()):
        prefix, seen, cur = "", set(), path
        while cur in includes and cur not in seen:  # walk up the include chain
            seen.add(cur)
            cur, part = includes[cur]
            prefix = part + prefix
        _django_file(path, text, prefix, drf, found)


def _django_prefix(match: re.Match[str]) -> str:
    raw = match.group(3)
    return _regex_route(raw) if match.group(1) != "path" else raw


def _django_file(path: str, text: str, prefix: str, drf: bool, found: Findings) -> None:
    router_prefix: dict[str, str] = {}
    for match in _DJ_CALL.finditer(text):
        args = balanced(text, text.index("(", match.start()))
        route = prefix + _django_prefix(match)
        if _DJ_INCLUDE.search(args):
            continue
        if router := _DRF_INCLUDE.search(args):
            router_prefix[router.group(1)] = route
            continue
        is_api = drf and ("api" in route.split("/")[0] or "api" in path.split("/"))
        if "admin.site.urls" in args:
            found.route("GET", route, path, json=False)
        else:
            found.route("GET", route, path, json=True if is_api else None)
    for name in re.findall(r"urlpatterns\s*\+=\s*(\w+)\.urls", text):
        router_prefix.setdefault(name, prefix)
    for match in _DRF_REGISTER.finditer(text):
        base = join_route(router_prefix.get(match.group(1), prefix), match.group(2))
        collection = base.rstrip("/") + "/"
        detail = collection + "{id}/"
        for method, route in (
            ("GET", collection),
            ("POST", collection),
            ("GET", detail),
            ("PUT", detail),
            ("DELETE", detail),
        ):
            found.route(method, route, path, json=True)


# --- Flask / FastAPI ----------------------------------------------------------------------


def _kwarg(args: str, name: str) -> str | None:
    match = re.search(rf"\b{name}\s*=\s*['\"]([^'\"]*)['\"]", args)
    return match.group(1) if match else None


def _objects(py_files: dict[str, str]) -> dict[tuple[str, str], tuple[str, str]]:
    """(file, variable) → (Flask|FastAPI|Blueprint|APIRouter, own prefix)."""
    out = {}
    for path, text in py_files.items():
        for match in _PY_ASSIGN.finditer(text):
            args = balanced(text, match.end() - 1)
            own = _kwarg(args, "url_prefix") or _kwarg(args, "prefix") or ""
            out[(path, match.group(1))] = (match.group(2), own)
    return out


def _imported_names(text: str) -> dict[str, tuple[str, str]]:
    """Local name → (module, original name) for every `from x.y import a as b` in a file."""
    out = {}
    for source, names in _FROM_IMPORT.findall(text):
        for part in names.strip("()").split(","):
            original, _, alias = part.strip().partition(" as ")
            if original.strip():
                out[alias.strip() or original.strip()] = (source, original.strip())
    return out


def _mount_target(expr: str, path: str, imported: dict, objects: dict) -> tuple[str, str] | None:
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


def _mounts(py_files: dict[str, str], objects: dict) -> dict[tuple[str, str], str]:
    """(file, variable) of each mounted Blueprint/APIRouter → its effective prefix."""
    mounted: dict[tuple[str, str], str] = {}
    for path, text in py_files.items():
        imported = _imported_names(text)
        for n, match in enumerate(_MOUNT.finditer(text)):
            if n >= 500:  # real apps mount a handful; bounds hostile files
                break
            args = balanced(text, match.end() - 1)
            expr = re.match(r"\s*([\w.]+)", args)
            target = _mount_target(expr.group(1), path, imported, objects) if expr else None
            if target:
                given = _kwarg(args, "url_prefix") or _kwarg(args, "prefix")
                kind, own = objects[target]
                if kind == "Blueprint":  # Flask: a prefix at registration replaces the own one
                    mounted[target] = given if given is not None else own
                else:  # FastAPI: include prefix + router prefix
                    mounted[target] = (given or "") + own
    return mounted


def _decorated(py_files: dict[str, str], found: Findings) -> None:
    objects = _objects(py_files)
    mounted = _mounts(py_files, objects)
    for path, text in sorted(py_files.items()):
        fastapi_file = "fastapi" in text and "flask" not in text.lower()
        # Flask views return JSON or HTML; the file's helpers tell which (computed once).
        flask_json = True if "jsonify" in text else (False if "render_template" in text else None)
        for match in _DECORATOR.finditer(text):
            var, verb = match.group(1), match.group(2)
            kind, own = objects.get((path, var), ("FastAPI" if fastapi_file else "Flask", ""))
            prefix = mounted.get((path, var), own)
            args = balanced(text, match.end() - 1)
            literal = re.match(r"\s*(?:path\s*=\s*)?(['\"])([^'\"]*)\1", args)
            if not literal:
                continue
            if verb in ("route", "api_route"):
                listed = re.search(r"methods\s*=\s*[\[(]([^\])]*)", args)
                methods = re.findall(r"['\"](\w+)['\"]", listed.group(1)) if listed else ["GET"]
            else:
                methods = [verb]
            if kind in ("FastAPI", "APIRouter"):  # FastAPI concatenates prefixes literally
                route, json = prefix + literal.group(2), True
            else:
                route = join_route(prefix, literal.group(2))
                json = True if route.startswith("/api") else flask_json
            for method in methods:
                found.route(method, route, path, json=json)
