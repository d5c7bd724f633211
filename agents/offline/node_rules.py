"""Node web rules: package.json, Express-style routers, Next.js file routes, React Router."""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable

from .common import Findings, balanced, ident_before
from .express_boot import detect_boot

JS_EXT = (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs")
_JS_RESOLVE = (".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx")


def package_manifests(files: dict[str, str]) -> dict[str, set[str]]:
    """Directory of each readable package.json → its dependency names."""
    out: dict[str, set[str]] = {}
    for path, text in files.items():
        if posixpath.basename(path) != "package.json":
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        deps: set[str] = set()
        for key in ("dependencies", "devDependencies", "peerDependencies"):
            if isinstance(data.get(key), dict):
                deps.update(str(name) for name in data[key])
        out[posixpath.dirname(path)] = deps
    return out


_NEXT_CONFIG = re.compile(r"(^|/)next\.config\.\w+$")
_BUNDLER_CONFIG = re.compile(r"(^|/)(next|vite|webpack)\.config\.\w+$")


def detect_node(paths: list[str], files: dict[str, str], found: Findings) -> None:
    manifests = package_manifests(files)
    pkg_paths = [p for p in paths if posixpath.basename(p) == "package.json"]
    if not pkg_paths and not any(p.endswith(JS_EXT) for p in paths):
        return
    found.runtime("node")
    for path in pkg_paths:
        found.mark(path, "config")
    deps = set().union(*manifests.values()) if manifests else set()
    if any(p.endswith((".ts", ".tsx")) for p in paths):
        found.language("typescript")
    found.language("javascript")
    next_roots = sorted(
        {d for d, names in manifests.items() if "next" in names}
        | {posixpath.dirname(p) for p in paths if _NEXT_CONFIG.search(p)}
    )
    for name, dep in (("express", "express"), ("fastify", "fastify"), ("next", "next")):
        if dep in deps or (name == "next" and next_roots):
            found.framework(name)
    if "react" in deps:
        found.framework("react")
    if {"react-router", "react-router-dom"} & deps:
        found.framework("react-router")
    if "vue" in deps:
        found.framework("vue")
    if "vue-router" in deps:
        found.framework("vue-router")
    if "vite" in deps:
        found.framework("vite")
    for path in paths:
        if _BUNDLER_CONFIG.search(path):
            found.mark(path, "config")
    _express(files, found)
    for root in next_roots:
        _next_routes(paths, files, root, found)
    detect_boot(files, found)
    if found.base_url is None and found.frameworks:
        found.base_url = "http://localhost:3000"
        if "vite" in found.frameworks and not {"express", "next"} & set(found.frameworks):
            found.base_url = "http://localhost:5173"


# --- Express / Fastify / Hono -------------------------------------------------------------


_IMPORT_DEFAULT = re.compile(r"import\s+([A-Za-z_$][\w$]*)\s+from\s+['\"]([^'\"]+)['\"]")
_IMPORT_NAMED = re.compile(r"import\s*\{([^}]*)\}\s*from\s*['\"]([^'\"]+)['\"]")
_REQUIRE = re.compile(
    r"(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*require\(\s*['\"]([^'\"]+)['\"]\s*\)"
)


def imports_of(text: str) -> dict[str, str]:
    """Local identifier → module specifier, for default, named and require imports."""
    out = {name: spec for name, spec in _IMPORT_DEFAULT.findall(text)}
    out.update({name: spec for name, spec in _REQUIRE.findall(text)})
    for names, spec in _IMPORT_NAMED.findall(text):
        for part in names.split(","):
            local = part.split(" as ")[-1].strip()
            if local:
                out[local] = spec
    return out


def resolve_module(from_file: str, spec: str, files: dict[str, str] | list[str]) -> str | None:
    """A relative import specifier → the file it names, if that file is known."""
    if not spec.startswith("."):
        return None
    base = posixpath.normpath(posixpath.join(posixpath.dirname(from_file), spec))
    candidates = [base] + [base + ext for ext in _JS_RESOLVE]
    candidates += [base + "/index" + ext for ext in _JS_RESOLVE]
    return next((c for c in candidates if c in files), None)


_METHOD_CALL = re.compile(r"\.\s*(get|post|put|patch|delete|all)\s*\(")


def _chained_methods(text: str, pos: int) -> list[str]:
    """Methods chained after `.route('/x')`: `.get(...).post(...)` at bracket depth 0."""
    methods: list[str] = []
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        match = _METHOD_CALL.match(text, pos)
        if not match:
            break
        methods.append(match.group(1))
        open_idx = match.end() - 1
        pos = open_idx + len(balanced(text, open_idx, 8000)) + 2
    return methods


Mount = tuple[str, str, str]  # (mounting file, mounting router variable, path)


# Variables assigned from a router factory are the only receivers whose `.get(` calls count,
# so `axios.get('/api/users')` in client code is never mistaken for a route.
_ROUTER_ASSIGN = re.compile(
    r"(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::\s*[\w.<>]+\s*)?=\s*(?:new\s+)?"
    r"(?:express(?:\s*\.\s*Router)?|Router|fastify|Fastify|Hono)\s*\("
)
_ROUTER_HINT = re.compile(r"express|fastify|hono|koa-router|@koa/router|\bRouter\s*\(")
_USE = re.compile(r"\.\s*use\s*\(\s*(['\"`])(/[^'\"`\n]*)\1\s*,")
_REQUIRED = re.compile(r"require\(\s*['\"]([^'\"]+)['\"]")
_TRAILING_IDENT = re.compile(r"([A-Za-z_$][\w$]*)\s*$")


def _express(files: dict[str, str], found: Findings) -> None:
    mounts: dict[str, Mount] = {}  # router module → where it is mounted
    local: dict[tuple[str, str], Mount] = {}  # (file, router variable) → where it is mounted
    per_file: dict[str, set[str]] = {}
    for path, text in sorted(files.items()):
        if not path.endswith(JS_EXT) or not _ROUTER_HINT.search(text):
            continue
        names = set(_ROUTER_ASSIGN.findall(text)[:50]) | {"app", "router"}
        per_file[path] = names
        imports = imports_of(text)
        for n, match in enumerate(_USE.finditer(text)):
            if n >= 500:  # real apps mount a handful; bounds hostile files
                break
            args = balanced(text, text.index("(", match.start()))
            rest = args.split(",", 1)[1] if "," in args else ""
            required = _REQUIRED.search(rest)
            ident = _TRAILING_IDENT.search(rest.strip())
            receiver = ident_before(text, match.start() + 1) or ""
            mount = (path, receiver, match.group(2))
            if required:
                target = resolve_module(path, required.group(1), files)
            elif ident and ident.group(1) in imports:
                target = resolve_module(path, imports[ident.group(1)], files)
            else:
                target = None
                if ident and ident.group(1) in names and ident.group(1) != receiver:
                    local.setdefault((path, ident.group(1)), mount)
            if target and target != path:
                mounts.setdefault(target, mount)
    for path, names in per_file.items():
        _express_file(
            path, files[path], names, lambda v, p=path: _mounted(p, v, mounts, local), found
        )


def _mounted(path: str, var: str, mounts: dict, local: dict, depth: int = 0) -> str:
    """Full mount prefix of a router variable: its own mounts, then its module's, up to the
    app (a cycle or absurd nesting stops the walk)."""
    mount = local.get((path, var)) or mounts.get(path)
    if mount is None or depth >= 20:
        return ""
    parent_file, parent_var, part = mount
    return _join(_mounted(parent_file, parent_var, mounts, local, depth + 1), part)


_LITERAL = re.compile(r"\s*(['\"`])([^'\"`\n]*)\1")
_JSON_CALL = re.compile(r"\.json\s*\(")


def _express_file(
    path: str, text: str, names: set[str], prefix_for: Callable[[str], str], found: Findings
) -> None:
    alternatives = "|".join(re.escape(n) for n in sorted(names))
    receiver = rf"(?<![\w$.])({alternatives})\s*"
    uses_json = bool(_JSON_CALL.search(text))
    for match in re.finditer(receiver + r"\.\s*(get|post|put|patch|delete|all)\s*\(", text):
        literal = _LITERAL.match(text, match.end())
        if literal:
            prefix = prefix_for(match.group(1))
            method = "GET" if match.group(2) == "all" else match.group(2)
            found.route(method, _join(prefix, literal.group(2)), path, json=uses_json or None)
    for match in re.finditer(receiver + r"\.\s*route\s*\(\s*(['\"`])([^'\"`\n]*)\2\s*\)", text):
        prefix = prefix_for(match.group(1))
        for method in _chained_methods(text, match.end()):
            method = "GET" if method == "all" else method
            found.route(method, _join(prefix, match.group(3)), path, json=uses_json or None)


def _join(prefix: str, route: str) -> str:
    if not prefix:
        return route
    if route in ("", "/"):
        return prefix
    return prefix.rstrip("/") + "/" + route.lstrip("/")


# --- Next.js ------------------------------------------------------------------------------


def _next_routes(paths: list[str], files: dict[str, str], root: str, found: Findings) -> None:
    root_prefix = root + "/" if root else ""
    for path in paths:
        if not path.startswith(root_prefix):
            continue
        rel = path[len(root_prefix) :]
        for base in ("app/", "src/app/"):
            if rel.startswith(base):
                _next_app_file(path, rel[len(base) :], files.get(path), found)
        for base in ("pages/", "src/pages/"):
            if rel.startswith(base):
                _next_pages_file(path, rel[len(base) :], files.get(path), found)


def _app_segments(dirs: list[str]) -> list[str] | None:
    out = []
    for seg in dirs:
        if seg.startswith(("(.)", "(..)", "(...)", "_")):
            return None  # intercepting routes and private folders are not URLs
        if (seg.startswith("(") and seg.endswith(")")) or seg.startswith("@"):
            continue  # route groups and parallel slots do not appear in the URL
        out.append(seg)
    return out


_H1 = re.compile(r"<h1\b[^>]*>\s*([^<{]+?)\s*</h1>", re.I)
_NEXT_METHODS = re.compile(
    r"export\s+(?:async\s+)?(?:function|const)\s+(GET|POST|PUT|PATCH|DELETE)\b"
)


def _next_app_file(path: str, sub: str, text: str | None, found: Findings) -> None:
    *dirs, name = sub.split("/")
    segments = _app_segments(dirs)
    if segments is None:
        return
    route = "/" + "/".join(segments)
    if re.fullmatch(r"page\.(tsx|jsx|ts|js|mdx)", name):
        heading = _H1.search(text).group(1) if text and _H1.search(text) else None
        found.page(route, path, heading)
    elif re.fullmatch(r"route\.(ts|js)", name):
        methods = sorted(set(_NEXT_METHODS.findall(text))) if text else []
        for method in methods or ["GET"]:
            found.route(method, route, path, json=True)
    elif re.fullmatch(r"layout\.(tsx|jsx|ts|js)", name):
        found.mark(path, "ui_component")


_PAGES_API_METHODS = re.compile(r"['\"](GET|POST|PUT|PATCH|DELETE)['\"]")


def _next_pages_file(path: str, sub: str, text: str | None, found: Findings) -> None:
    if not sub.endswith((".tsx", ".jsx", ".ts", ".js", ".mdx")) or ".test." in sub:
        return
    if ".spec." in sub or sub.endswith(".d.ts"):
        return
    segments = sub.rsplit(".", 1)[0].split("/")
    if any(seg.startswith("_") for seg in segments) or segments[-1] in ("404", "500"):
        return
    if segments[-1] == "index":
        segments = segments[:-1]
    route = "/" + "/".join(segments)
    if segments and segments[0] == "api":
        methods = sorted(set(_PAGES_API_METHODS.findall(text))) if text else []
        for method in methods or ["GET"]:
            found.route(method, route, path, json=True)
    else:
        heading = _H1.search(text).group(1) if text and _H1.search(text) else None
        found.page(route, path, heading)
