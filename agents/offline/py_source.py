"""Python source helpers shared by the Django and Flask/FastAPI rules: imports, modules,
keyword arguments and the HTTP methods a class-based view answers."""

from __future__ import annotations

import posixpath
import re

_FROM_IMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+([^\n(]+|\([^)]*\))", re.M)
_CLASS = r"^([ \t]*)class\s+{name}\s*(?:\(([^)]*)\))?\s*:"
_METHOD_DEF = re.compile(r"^[ \t]+(?:async\s+)?def\s+(get|post|put|patch|delete)\s*\(", re.M)
# Generic views that answer a form's POST besides GET (Django and Flask-style names).
_POST_BASES = frozenset(
    {
        "FormView",
        "CreateView",
        "UpdateView",
        "DeleteView",
        "BaseFormView",
        "ProcessFormView",
        "LoginView",
        "PasswordChangeView",
        "PasswordResetView",
        "PasswordResetConfirmView",
    }
)
_BARE_BASES = frozenset({"View", "MethodView", "APIView", "object", "Generic"})
MAX_CLASS_CHARS = 20_000  # a view class body worth reading; bounds hostile files


def kwarg(args: str, name: str) -> str | None:
    match = re.search(rf"\b{name}\s*=\s*['\"]([^'\"]*)['\"]", args)
    return match.group(1) if match else None


def imported_names(text: str) -> dict[str, tuple[str, str]]:
    """Local name → (module, original name) for every `from x.y import a as b` in a file."""
    out = {}
    for source, names in _FROM_IMPORT.findall(text):
        for part in names.strip("()").split(","):
            original, _, alias = part.strip().partition(" as ")
            if original.strip():
                out[alias.strip() or original.strip()] = (source, original.strip())
    return out


def module_file(module: str, paths, from_path: str = "") -> str | None:
    """`blog.urls` → `blog/urls.py` (or `src/blog/urls.py` …); `.urls` is relative to
    `from_path`'s package. A package resolves to its `__init__.py`."""
    if module.startswith("."):
        dots = len(module) - len(module.lstrip("."))
        base = posixpath.dirname(from_path)
        for _ in range(dots - 1):
            base = posixpath.dirname(base)
        rest = module[dots:].replace(".", "/")
        stem = posixpath.join(base, rest) if rest else base
        for candidate in (stem + ".py", stem + "/__init__.py"):
            if candidate.lstrip("/") in paths:
                return candidate.lstrip("/")
        return None
    for suffix in (module.replace(".", "/") + ".py", module.replace(".", "/") + "/__init__.py"):
        matches = sorted((p for p in paths if p == suffix or p.endswith("/" + suffix)), key=len)
        if matches:
            return matches[0]
    return None


def _class(py_files: dict[str, str], name: str) -> tuple[str, list[str]] | None:
    """(body, base names) of `class name(...)` in the files read, if defined there."""
    pattern = re.compile(_CLASS.format(name=re.escape(name)), re.M)
    for _path, text in sorted(py_files.items()):
        match = pattern.search(text)
        if not match:
            continue
        indent = len(match.group(1))
        end = min(len(text), match.end() + MAX_CLASS_CHARS)
        stop = re.compile(rf"^[ \t]{{0,{indent}}}\S", re.M).search(text, match.end() + 1, end)
        body = text[match.end() : stop.start() if stop else end]
        bases = [b.strip().split(".")[-1] for b in (match.group(2) or "").split(",")]
        return body, [b for b in bases if b.isidentifier()]
    return None


def view_methods(py_files: dict[str, str], name: str) -> list[str]:
    """HTTP methods a class-based view answers: its own `get`/`post`… methods plus those of
    its bases (GET + POST for form views); GET when nothing tells otherwise."""
    methods = _methods(py_files, name, 0) or {"GET"}
    return [m for m in ("GET", "POST", "PUT", "PATCH", "DELETE") if m in methods]


def _methods(py_files: dict[str, str], name: str, depth: int) -> set[str]:
    if name in _POST_BASES:
        return {"GET", "POST"}
    if name in _BARE_BASES or name.endswith("Mixin"):
        return set()  # `View`/`MethodView` answer only the methods a subclass defines
    found = _class(py_files, name) if depth < 5 else None
    if found is None:
        return {"GET"}  # a generic display view (TemplateView, ListView …) or unknown
    body, bases = found
    own = {m.upper() for m in _METHOD_DEF.findall(body)}
    return own.union(*(_methods(py_files, base, depth + 1) for base in bases))
