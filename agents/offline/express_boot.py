"""Express routes generated at run time by a boot module (Express's own `examples/mvc`).

A boot file reads a controllers folder (`fs.readdirSync(dir)`), requires each controller and
maps its exports to routes in a `switch` on the export name, e.g.

    case 'show': method = 'get'; url = '/' + name + '/:' + name + '_id'; break;
    ...
    url = prefix + url;
    app[method](url, handler);

The mapping is read from the boot file itself, not assumed: the variables the
`app[method](url …)` call uses, each `case`'s assignments to them, the variables filled from
the controller (`var name = obj.name || name`) and the rewrite after the switch. Each
controller's `exports.<key>` then yields the routes of the keys the switch maps.
"""

from __future__ import annotations

import posixpath
import re

from .common import Findings, balanced

MAX_CASES = 50
MAX_CONTROLLERS = 200


def _dir_of(boot: str, text: str, arg: str) -> str | None:
    """The folder `readdirSync(arg)` reads: `path.join(__dirname, '..', 'controllers')`."""
    expr = arg
    if re.fullmatch(r"\w+", arg):
        assign = re.search(rf"\b{arg}\s*=\s*([^;\n]+)", text)
        expr = assign.group(1) if assign else ""
    parts = re.findall(r"__dirname|(['\"])([^'\"\n]*)\1", expr)
    if not parts:
        return None
    base = posixpath.dirname(boot) if "__dirname" in expr else ""
    joined = posixpath.normpath(posixpath.join(base or ".", *(p[1] for p in parts if p[1])))
    if joined.startswith(("..", "/")):
        return None  # outside the repository
    return "" if joined == "." else joined


_STRING = re.compile(r"^(['\"])([^'\"\n]*)\1$")


def _evaluate(expr: str, values: dict[str, str]) -> str | None:
    """`'/' + name + '/:' + name + '_id'` with known variables, or None."""
    out = []
    for term in expr.split("+"):
        term = term.strip()
        literal = _STRING.match(term)
        if literal:
            out.append(literal.group(2))
        elif term in values:
            out.append(values[term])
        else:
            return None
    return "".join(out)


_CALLBACK_PARAM = re.compile(r"forEach\s*\(\s*(?:function\s*\w*\s*\(|\(?)\s*(\w+)")
_DYNAMIC_CALL = re.compile(r"\w+\s*\[\s*(\w+)\s*\]\s*\(\s*(\w+)\s*,")
_SWITCH = re.compile(r"switch\s*\(\s*\w+\s*\)\s*\{")
_CASE = re.compile(r"\bcase\s+(['\"])(\w+)\1\s*:|\bdefault\s*:")


def _mapping(text: str) -> tuple[dict[str, tuple[str, str]], str, str, str] | None:
    """(export key → (method, url expression), url variable, rewrite after the switch,
    controller-name parameter) read from a boot file, or None if it is not one."""
    call, switch = _DYNAMIC_CALL.search(text), _SWITCH.search(text)
    if not call or not switch:
        return None
    method_var, url_var = call.group(1), call.group(2)
    body = balanced(text, switch.end() - 1, 20_000)
    cases: dict[str, tuple[str, str]] = {}
    marks = list(_CASE.finditer(body))[:MAX_CASES]
    for mark, nxt in zip(marks, marks[1:] + [None], strict=False):
        if mark.group(2) is None:
            continue
        segment = body[mark.end() : nxt.start() if nxt else len(body)]
        method = re.search(rf"\b{method_var}\s*=\s*['\"](\w+)['\"]", segment)
        url = re.search(rf"\b{url_var}\s*=\s*([^;\n]+)", segment)
        if method and url:
            cases[mark.group(2)] = (method.group(1).lower(), url.group(1))
    after = text[switch.end() + len(body) : call.start()]
    rewrite = re.search(rf"\b{url_var}\s*=\s*([^;\n]*\b{url_var}\b[^;\n]*)", after)
    param = _CALLBACK_PARAM.search(text)
    return cases, url_var, rewrite.group(1) if rewrite else url_var, param.group(1) if param else ""


def _controllers(folder: str, files: dict[str, str]) -> list[tuple[str, str]]:
    """(name, file) of each controller folder's index module that was read."""
    prefix = folder + "/" if folder else ""
    out = []
    for path in sorted(files):
        rest = path[len(prefix) :] if path.startswith(prefix) else None
        match = re.fullmatch(r"([\w.-]+)/index\.(js|ts|mjs|cjs)", rest or "")
        if match:
            out.append((match.group(1), path))
    return out[:MAX_CONTROLLERS]


_READDIR = re.compile(r"readdirSync\s*\(\s*([\w$.]+)\s*\)")
_FROM_EXPORT = re.compile(
    r"(?:var|let|const)?\s*(\w+)\s*=\s*\w+\.(\w+)\s*\|\|\s*(\w+|'[^'\n]*'|\"[^\"\n]*\")"
)
_EXPORT = re.compile(r"^\s*(?:module\.)?exports\.(\w+)\s*=\s*(?:(['\"])([^'\"\n]*)\2)?", re.M)


def detect_boot(files: dict[str, str], found: Findings) -> None:
    for boot, text in sorted(files.items()):
        readdir = _READDIR.search(text) if "readdirSync" in text else None
        folder = _dir_of(boot, text, readdir.group(1)) if readdir else None
        mapping = _mapping(text) if folder is not None else None
        if mapping is None:
            continue
        cases, url_var, rewrite, param = mapping
        derived = [m.groups() for m in _FROM_EXPORT.finditer(text)][:20]
        for name, path in _controllers(folder, files):
            source = files[path]
            exports = {m.group(1): m.group(3) for m in _EXPORT.finditer(source)}
            values = {param: name} if param else {}
            for var, key, fallback in derived:  # `var name = obj.name || name`
                literal = _STRING.match(fallback)
                default = literal.group(2) if literal else values.get(fallback, name)
                values[var] = exports.get(key) or default
                if key in exports and exports[key] is None:
                    del values[var]  # exported, but not as a plain string: unknown
            uses_json = ".json(" in source or None
            for key in exports:
                if key not in cases:
                    continue
                method, expr = cases[key]
                url = _evaluate(expr, values)
                full = _evaluate(rewrite, {**values, url_var: url}) if url is not None else None
                if full is not None:
                    found.route("GET" if method == "all" else method, full, path, json=uses_json)
            found.mark(boot, "api_route")
