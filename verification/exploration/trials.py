"""Form trials: what a few forms did when ExploreApp submitted them once with test data.

The box (``box/explore.mjs``) fills a form by its labels with values unique to the run (the
*tag*), clicks its button by role and name, and hands back the page's accessibility snapshot
before and after. Everything it wrote is untrusted: here each record is checked field by
field, and what *appeared* (named elements of the snapshot after that the one before did not
have) is worked out and bounded, with the run's tag replaced by ``{tag}`` so a test can put
its own unique value in its place.
"""

from __future__ import annotations

import json
import re
import secrets

from verification.playwright import clean

# Forms whose button, action or chosen select option ("Delete selected users") reads like this
# are never submitted: they destroy, spend, leave or end something. The box gets this list in
# its config (one place for both).
SKIP_WORDS = (
    r"\bdelete",
    r"\bremove",
    r"\bdestroy",
    r"\bcancel",
    r"\b(log|sign)[-_ ]?(out|off)",
    r"\bpay",
    r"\bbuy",
    r"\bpurchase",
    r"\bcheckout",
    r"\bunsubscribe",
)
_SKIP = re.compile("|".join(SKIP_WORDS), re.I)
PLACEHOLDER = "{tag}"
FILLED_TYPES = ("text", "search", "email", "number", "url", "tel", "select", "check")
APPEAR_ROLES = ("heading", "status", "alert", "listitem", "paragraph", "text", "cell", "link")
FIELD_ROLES = ("textbox", "searchbox", "combobox", "spinbutton", "option", "listbox")
MAX_APPEARED = 10
_TAG = re.compile(r"[a-z0-9]{6,16}")
_PATH = re.compile(r"^/([^/\\\s]\S{0,498})?$")
_LINE = re.compile(r'^\s*- (\w+)(?: ("(?:[^"\\]|\\.)*"))?((?: \[[^\]]*\])*)(?::\s*(.*))?$')


def new_tag() -> str:
    """A tag unique to one exploration: lower-case letters and digits."""
    return secrets.token_hex(5)


def risky(text: str) -> bool:
    """Whether a form's button, action or option reads as destructive or external (SKIP_WORDS)."""
    return bool(_SKIP.search(text or ""))


def box_config(limit: int, tag: str) -> dict:
    if not _TAG.fullmatch(tag):
        raise ValueError("the trial tag must be 6-16 lower-case letters and digits")
    return {"max": max(0, min(limit, 20)), "tag": tag, "skip_words": list(SKIP_WORDS)}


def trial(raw, tag: str, pages: dict[str, dict]) -> dict | None:
    """One trial as the box described it, checked and bounded; None when it names no page
    form of the map, or one that must never have been submitted."""
    raw = raw if isinstance(raw, dict) else {}
    path, index = raw.get("path"), raw.get("form")
    page = pages.get(path) if isinstance(path, str) else None
    if page is None or not isinstance(index, int) or not 0 <= index < len(page["forms"]):
        return None
    form = page["forms"][index]
    if risky(form["submit"]) or risky(form["action"]) or _has_secret_field(form):
        return None
    if _chose_risky(raw.get("filled")):
        return None
    error = clean(_str(raw.get("error")), 500)
    before, after = _lines(raw.get("before")), _lines(raw.get("after"))
    path_after = raw.get("path_after")
    status = raw.get("status")
    return {
        "path": path,
        "form": index,
        "submit": form["submit"],
        "filled": [] if error else _filled(raw.get("filled"), form),
        "path_after": path_after if isinstance(path_after, str) and _local(path_after) else "",
        "status": status if isinstance(status, int) and 0 <= status <= 599 else 0,
        "appeared": [] if error else _appeared(before, after, tag),
        "shows_value": not error and _shows(after, f"AMTP {tag}"),
        "error": error,
        "refused": clean(_str(raw.get("refused")), 300).replace(tag, PLACEHOLDER),
        "retried": clean(_str(raw.get("retried")), 300).replace(tag, PLACEHOLDER),
    }


def _has_secret_field(form: dict) -> bool:
    return any(field["type"] in ("password", "file") for field in form["fields"])


def _chose_risky(items) -> bool:
    """Whether the box says it chose a destructive option in a select."""
    items = items[:40] if isinstance(items, list) else []
    return any(isinstance(i, dict) and risky(_str(i.get("option"))) for i in items)


def _filled(items, form: dict) -> list[dict]:
    """The fields the box filled: each must be one of the form's labelled fields."""
    labels = {field["label"] for field in form["fields"] if field["label"]}
    out = []
    for item in items[:40] if isinstance(items, list) else []:
        item = item if isinstance(item, dict) else {}
        label, kind = item.get("label"), item.get("type")
        if label in labels and kind in FILLED_TYPES:
            option = clean(_str(item.get("option")), 200) if kind == "select" else ""
            # within_label: found inside a <label> that names no field (getByLabel finds
            # none); edits: the field held a value (an edit form of a record the app had).
            seen = {k: True for k in ("within_label", "edits") if item.get(k) is True}
            out.append({"label": label, "type": kind, "option": option} | seen)
    return out


def _lines(snapshot) -> list[tuple[str, str]]:
    """(role, text) of each line of an ariaSnapshot: its quoted name, else its text."""
    out = []
    for line in _str(snapshot)[:40_000].splitlines()[:2000]:
        match = _LINE.match(line)
        if not match:
            continue
        text = match.group(2) or (match.group(4) or "").strip()
        if text.startswith('"'):
            try:
                text = json.loads(text)
            except ValueError:
                continue
        if isinstance(text, str) and text.strip():
            out.append((match.group(1), " ".join(text.split())))
    return out


def _appeared(before: list, after: list, tag: str) -> list[dict]:
    seen, out = set(before), []
    for role, text in after:
        if role not in APPEAR_ROLES or (role, text) in seen or PLACEHOLDER in text:
            continue
        seen.add((role, text))
        text = clean(text, 200)
        if text and not text.endswith("…"):  # an outcome is kept whole or not at all
            out.append({"role": role, "text": text.replace(tag, PLACEHOLDER)})
        if len(out) == MAX_APPEARED:
            break
    return out


def _shows(after: list, value: str) -> bool:
    return any(value in text for role, text in after if role not in FIELD_ROLES)


def _local(path: str) -> bool:
    return bool(_PATH.match(path))


def _str(value) -> str:
    return value if isinstance(value, str) else ""
