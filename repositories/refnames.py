"""Git ref names typed by people (launch form, repository settings), checked without git.

The rules are ``git check-ref-format --branch``'s, applied in Python so a web request never
spawns a process for them. A full commit SHA satisfies them too, so a ``ref`` may be either.
"""

from __future__ import annotations

import re

MAX_REF_LENGTH = 255

REF_EMPTY = "a ref name cannot be empty"
REF_TOO_LONG = "a ref name has at most {limit} characters"
REF_BAD_CHARACTER = "{name!r} is not a valid git ref name: it contains {what}"
REF_BAD_SHAPE = "{name!r} is not a valid git ref name: {why}"

# Control characters, space and the characters git reserves for revision syntax.
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def ref_problem(name: str) -> str | None:
    """Why ``name`` is not a valid branch/tag name or SHA, or None when it is."""
    if not name:
        return REF_EMPTY
    if len(name) > MAX_REF_LENGTH:
        return REF_TOO_LONG.format(limit=MAX_REF_LENGTH)
    bad = _FORBIDDEN.search(name)
    if bad:
        what = "a space" if bad.group() == " " else f"the character {bad.group()!r}"
        if bad.group() < " " or bad.group() == "\x7f":
            what = "a control character"
        return REF_BAD_CHARACTER.format(name=name, what=what)
    why = None
    if name.startswith("-"):
        why = "it starts with '-'"
    elif name == "@":
        why = "'@' alone is not a name"
    elif "@{" in name:
        why = "it contains '@{'"
    elif ".." in name:
        why = "it contains '..'"
    elif name.startswith("/") or name.endswith("/") or "//" in name:
        why = "empty path component"
    elif name.endswith("."):
        why = "it ends with '.'"
    elif any(part.startswith(".") or part.endswith(".lock") for part in name.split("/")):
        why = "a component starts with '.' or ends with '.lock'"
    return REF_BAD_SHAPE.format(name=name, why=why) if why else None
