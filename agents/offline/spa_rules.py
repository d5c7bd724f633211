"""Client-side route tables: React Router and Vue Router.

React Router: `createBrowserRouter([...])` / `useRoutes` route objects and `<Route path>`
elements; Vue Router: `createRouter({ routes: [...] })` route records. In both, a child's
relative path joins its parent's, an absolute one stands alone, and a pathless (layout) route
passes its parent's path on. A route's page file is the component it names, when imported.
"""

from __future__ import annotations

import re

from .common import Findings, ui_text
from .node_rules import JS_EXT, imports_of, resolve_module

_ROUTER_IMPORT = re.compile(r"react-router|vue-router")
_TAG_CHARS = re.compile(r"[{}'\"`>]")
_OBJECT_TOKENS = re.compile(r"\{|\}|\bpath\s*:\s*(['\"`])([^'\"`\n]*)\1|['\"`]")
_STRING_END = {q: re.compile(rf"(?:[^{q}\\]|\\.)*{q}", re.S) for q in "'\"`"}
# The component a route object names: `element: <X />`, `component: X` or a lazy import.
_ELEMENT = re.compile(
    r"[^{}]*?(?:element\s*:\s*<\s*([A-Z]\w*)|component\s*:\s*(?:([A-Z]\w*)|"
    r"\(\s*\)\s*=>\s*import\(\s*['\"]([^'\"\n]+)['\"]))"
)
_H1 = re.compile(r"<h1\b[^>]*>\s*([^<{]+?)\s*</h1>", re.I)
_ROUTE_TAG = re.compile(r"<Route\b|</Route\s*>")
_PATH_ATTR = re.compile(r"\bpath\s*=\s*(?:\{\s*)?(['\"])([^'\"]*)\1")
_COMPONENT_ATTR = re.compile(r"(?:element\s*=\s*\{\s*<\s*|component\s*=\s*\{\s*)([A-Z][\w]*)")


def _tag_end(text: str, pos: int) -> tuple[int, bool]:
    """Index of the `>` closing a JSX opening tag, and whether the tag self-closes."""
    depth, quote = 0, ""
    end = min(len(text), pos + 2000)  # bounded: an unclosed tag is no route
    for match in _TAG_CHARS.finditer(text, pos, end):  # only the characters that matter
        c, i = match.group(), match.start()
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"`":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0:  # c == ">"
            return i, text[i - 1] == "/"
    return end, True


def _jsx_routes(text: str) -> list[tuple[str, str | None]]:
    out, stack = [], []
    for n, match in enumerate(_ROUTE_TAG.finditer(text)):
        if n >= 2000:  # far more than any real route table; bounds hostile files
            break
        if match.group().startswith("</"):
            if stack:
                stack.pop()
            continue
        end, self_closing = _tag_end(text, match.end())
        attrs = text[match.end() : end]
        path = _PATH_ATTR.search(attrs)
        comp = _COMPONENT_ATTR.search(attrs)
        parent = stack[-1] if stack else ""
        full = _child(parent, path.group(2)) if path else parent
        if path:
            out.append((full, comp.group(1) if comp else None))
        if not self_closing:
            stack.append(full)
    return out


def _child(parent: str, path: str) -> str:
    """A child route's full path: absolute as given, else relative to its parent's."""
    if not path:
        return parent or "/"
    if path.startswith("/") or not parent:
        return path if path.startswith("/") else "/" + path
    return parent.rstrip("/") + "/" + path


def _object_routes(text: str) -> list[tuple[str, str | None]]:
    """`{ path: 'x', element: <X/>, children: [...] }` route objects, nested by braces."""
    out: list[tuple[str, str | None]] = []
    stack: list[str] = []  # per open brace: the route path in force inside it
    pos = 0
    while len(out) < 2000 and (match := _OBJECT_TOKENS.search(text, pos)):
        token, pos = match.group(), match.end()
        if token == "{":
            stack.append(stack[-1] if stack else "")
        elif token == "}":
            if stack:
                stack.pop()
        elif match.group(2) is not None:  # `path: '...'` inside an object
            if stack:
                full = _child(stack[-2] if len(stack) > 1 else "", match.group(2))
                stack[-1] = full
                comp = _ELEMENT.match(text, pos, pos + 200)
                named = comp and (comp.group(1) or comp.group(2) or comp.group(3))
                out.append((full, named or None))
        else:  # a quote: skip the whole string literal
            end = _STRING_END[token].match(text, pos)
            pos = end.end() if end else len(text)
    return out


def detect_spa(paths: list[str], files: dict[str, str], found: Findings) -> None:
    """Pages of React Router and Vue Router route tables in the files read."""
    for path, text in sorted(files.items()):
        if not path.endswith(JS_EXT) or not _ROUTER_IMPORT.search(text):
            continue
        imports = imports_of(text)
        for route, comp in _jsx_routes(text) + _object_routes(text):
            target = path
            spec = imports.get(comp) if comp else None
            if comp and "/" in comp:  # a lazy `() => import('../views/About.vue')`
                spec = comp
            if spec:
                target = resolve_module(path, spec, paths) or path
            found.page(route, target, _heading(files.get(target)))
            found.mark(path, "ui_component")


def _heading(text: str | None) -> str | None:
    match = _H1.search(text) if text else None
    return ui_text(match.group(1)) if match else None
