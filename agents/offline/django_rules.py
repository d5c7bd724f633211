"""Django URLconfs: `path()`/`re_path()`/`url()` across `include()` chains, as Django resolves
them: an include's route prefixes every pattern of the URLconf it names, whether that is a
module (`"blog.urls"`, an imported `urls` module, a `(module, app_name)` tuple, namespaced or
not) or a list of patterns (inline or a variable). DRF routers add their viewset routes; a
class-based view (`View.as_view()`) answers the methods its class defines."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from .common import Findings, balanced, ident_before, join_route
from .py_source import imported_names, module_file, view_methods

# URLconfs of apps installed from PyPI, never in the repository: the routes a user meets.
# Django: https://github.com/django/django/blob/main/django/contrib/auth/urls.py (LogoutView
# answers POST only since Django 5.0); allauth: https://docs.allauth.org/en/latest/account/views.html
_INSTALLED_URLCONFS = {
    "django.contrib.auth.urls": (
        ("GET", "login/"),
        ("POST", "login/"),
        ("POST", "logout/"),
        ("GET", "password_change/"),
        ("POST", "password_change/"),
        ("GET", "password_reset/"),
        ("POST", "password_reset/"),
    ),
    "allauth.urls": (
        ("GET", "login/"),
        ("POST", "login/"),
        ("GET", "signup/"),
        ("POST", "signup/"),
        ("GET", "logout/"),
        ("POST", "logout/"),
        ("GET", "password/reset/"),
        ("POST", "password/reset/"),
    ),
}
MAX_CALLS = 3000  # patterns read per URLconf; real ones hold dozens
MAX_REGIONS = 200  # included pattern lists per URLconf
MAX_LIST_CHARS = 200_000


@dataclass
class _Call:
    start: int
    kind: str
    raw: str
    args: str
    include_at: int | None  # offset of `include(` inside the call, if it includes


@dataclass
class _Region:
    """Patterns included as a list: those inside [start, end) get `part` after the prefix
    in force where the including call is (`anchor`)."""

    start: int
    end: int
    part: str
    anchor: int


def _regex_route(pattern: str) -> str:
    """`^articles/(?P<year>[0-9]{4})/$` → `articles/{year}/` (leftover regex is rejected later)."""
    text = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern)
    return text.lstrip("^").rstrip("$")


_CALL = re.compile(r"\b(path|re_path|url)\s*\(\s*r?(['\"])(.*?)\2")
_INCLUDE = re.compile(r"\binclude\s*\(")


def _calls(text: str) -> list[_Call]:
    out = []
    for n, match in enumerate(_CALL.finditer(text)):
        if n >= MAX_CALLS:
            break
        open_idx = text.index("(", match.start())
        args = balanced(text, open_idx)
        raw = match.group(3) if match.group(1) == "path" else _regex_route(match.group(3))
        inc = _INCLUDE.search(args)
        out.append(_Call(match.start(), match.group(1), raw, args, inc.end() if inc else None))
    return out


_NAME = re.compile(r"[A-Za-z_][\w.]*")


def _included(call: _Call) -> str:
    """What an include names: `'mod'` (a string), `[` (a list) or an identifier."""
    inner = balanced(call.args, call.include_at - 1).lstrip().lstrip("(").lstrip()
    if inner[:1] in ("'", '"'):
        return inner[: inner.find(inner[0], 1) + 1]
    if inner[:1] == "[":
        return "["
    name = _NAME.match(inner)
    return name.group() if name else ""


class _Conf:
    """One URLconf file: its calls and the pattern lists it includes."""

    def __init__(self, path: str, text: str, py_files: dict[str, str]) -> None:
        self.path, self.text, self.py_files = path, text, py_files
        self.calls = _calls(text)
        self.regions: list[_Region] = []
        self.imports = imported_names(text)
        for call in self.calls:
            if call.include_at is not None and len(self.regions) < MAX_REGIONS:
                self._region(call)
        self._memo: dict[int, str | None] = {}

    def _region(self, call: _Call) -> None:
        target = _included(call)
        start = None
        if target == "[":
            args_at = self.text.index("(", call.start) + 1
            start = self.text.index("[", args_at + call.include_at)
        elif target.isidentifier():
            assign = re.search(rf"^\s*{re.escape(target)}\s*(?::[^=\n]*)?=\s*\[", self.text, re.M)
            start = assign.end() - 1 if assign else None
        if start is not None:
            end = start + len(balanced(self.text, start, MAX_LIST_CHARS)) + 2
            self.regions.append(_Region(start, end, call.raw, call.start))

    def prefix_at(self, pos: int, depth: int = 0) -> str | None:
        """Route prefix in force at `pos` (None inside an include cycle)."""
        inner = [r for r in self.regions if r.start <= pos < r.end]
        if not inner:
            return ""
        region = max(inner, key=lambda r: r.start)
        if depth > 20 or region.start <= region.anchor < region.end:
            return None  # a list that includes itself
        key = region.start
        if key not in self._memo:
            outer = self.prefix_at(region.anchor, depth + 1)
            self._memo[key] = None if outer is None else outer + region.part
        return self._memo[key]

    def module_of(self, call: _Call, urls: dict[str, str]) -> str | None:
        """The URLconf file an include names, if it is a module among those read."""
        target = _included(call)
        if target[:1] in ("'", '"'):
            return module_file(target[1:-1], urls)
        if target in self.imports:
            module, name = self.imports[target]
            dotted = module + name if module.endswith(".") else f"{module}.{name}"
            return module_file(dotted, urls, self.path)
        if "." in target:  # `import shop.urls` … `include(shop.urls)`
            return module_file(target, urls, self.path)
        return None


def detect_django(py_files: dict[str, str], drf: bool, found: Findings) -> None:
    urls = {p: t for p, t in py_files.items() if posixpath.basename(p) == "urls.py"}
    confs = {p: _Conf(p, t, py_files) for p, t in sorted(urls.items())}
    includes: dict[str, tuple[str, str]] = {}  # included file → (including file, prefix)
    for path, conf in confs.items():
        for call in conf.calls:
            if call.include_at is None:
                continue
            file = conf.module_of(call, urls)
            at = conf.prefix_at(call.start)
            if file and file != path and at is not None:
                includes.setdefault(file, (path, at + call.raw))
    for path, conf in confs.items():
        prefix, seen, cur = "", set(), path
        while cur in includes and cur not in seen:  # walk up the include chain
            seen.add(cur)
            cur, part = includes[cur]
            prefix = part + prefix
        _conf_routes(conf, prefix, drf, found)


_DRF_INCLUDE = re.compile(r"include\(\s*(\w+)\.urls\s*\)")
_DRF_REGISTER = re.compile(r"\.register\(\s*r?['\"]([^'\"]*)['\"]")
_AS_VIEW = re.compile(r",\s*([\w.]+)\.as_view\s*\(")


def _conf_routes(conf: _Conf, prefix: str, drf: bool, found: Findings) -> None:
    router_prefix: dict[str, str] = {}
    path = conf.path
    for call in conf.calls:
        at = conf.prefix_at(call.start)
        if at is None:
            continue
        route = prefix + at + call.raw
        if router := _DRF_INCLUDE.search(call.args):
            router_prefix[router.group(1)] = route
            continue
        if call.include_at is not None and "admin.site.urls" not in call.args:
            for method, sub in _INSTALLED_URLCONFS.get(_included(call).strip("'\""), ()):
                found.route(method, route + sub, path, json=False)
            continue
        is_api = drf and ("api" in route.split("/")[0] or "api" in path.split("/"))
        if "admin.site.urls" in call.args:
            found.route("GET", route, path, json=False)
            continue
        view = _AS_VIEW.search(call.args)
        methods = view_methods(conf.py_files, view.group(1).split(".")[-1]) if view else ["GET"]
        for method in methods:
            found.route(method, route, path, json=True if is_api else None)
    for name in re.findall(r"urlpatterns\s*\+=\s*(\w+)\.urls", conf.text):
        router_prefix.setdefault(name, prefix)
    for match in _DRF_REGISTER.finditer(conf.text) if ".register(" in conf.text else ():
        router = ident_before(conf.text, match.start() + 1) or ""
        base = join_route(router_prefix.get(router, prefix), match.group(1))
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
