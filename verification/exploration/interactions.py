"""Interaction trials: what the app did when ExploreApp acted on it as a user, outside forms.

The box (``box/interact.mjs``) types the run's value into a text field no ``<form>`` holds and
presses Enter; when the value then shows (an item was created) it types a second item with
spaces before it (where the list puts it, saved trimmed?), edits that one with spaces around the text (saved trimmed?) and empties it
(an empty edit removes it?), clicks a page-level checkbox by its label ("Mark all as
complete") twice, toggles the item's checkbox, opens the page again in another tab (is the
item kept?),
clicks the page's filter links (another ``#/route`` or ``?query`` of the same page), edits the
item by double-click (Enter saves; Escape cancels; leaving the field saves) and deletes it by its own button. Each
action comes back with the snapshots before and after and the URL after. Everything is
untrusted: each record is checked here against the map's live pages and a closed list of
actions and roles, and reduced to what changed (named elements that appeared or went away,
where the created item stands, the URL after), with the run's tag replaced by ``{tag}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from verification.exploration.trials import MAX_APPEARED, PLACEHOLDER, _appeared, _lines
from verification.playwright import clean

# action → the roles its target may have (what the box acts on)
ROLES = {
    "enter": ("textbox", "searchbox", "combobox"),
    "toggle": ("checkbox",),
    "filter": ("link",),
    "edit": ("textbox",),
    "cancel_edit": ("textbox",),
    "delete": ("button",),
    "untoggle": ("checkbox",),
    "back": ("page",),  # the browser's back button
    "clear": ("button",),  # a page-level button marking the item brought ("Clear completed")
    "blur_edit": ("textbox",),  # an edit saved by leaving the field
    "enter_second": ("textbox", "searchbox", "combobox"),  # a second item, typed as the first
    "edit_second": ("textbox",),  # the second item edited, spaces around its new text
    "empty_edit": ("textbox",),  # the second item's text emptied, then Enter
    "toggle_all": ("checkbox",),  # a page-level checkbox, clicked by its label
    "untoggle_all": ("checkbox",),  # the same, clicked again
    "reload": ("page",),  # the same address opened again in another tab: is the item kept?
}
# actions whose target is found by its name
NAMED = ("enter", "filter", "clear", "enter_second", "toggle_all", "untoggle_all")
SECOND = ("enter_second", "edit_second", "empty_edit")  # actions on the second item
MAX_INTERACTIONS = 30
# Roles whose text is what a user typed into, not what the page shows.
FIELD_ROLES = ("textbox", "searchbox", "combobox", "spinbutton", "option", "listbox")
_TAG = re.compile(r"[a-z0-9]{6,16}")
_ROW = re.compile(
    r'^(?P<indent>\s*)- (?P<role>\w+)(?: "(?P<name>(?:[^"\\]|\\.)*)")?(?: \[[^\]]*\])*(?::\s*(?P<value>.*))?$'
)
# A count shown with its words: "1 item left", "3 todos" (a journey asserts it as a pattern,
# the number free: a test's data differs).
_COUNT = re.compile(r"\d{1,6} [A-Za-z][A-Za-z ]{0,40}")
_CLASS = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}")  # a CSS class name, safe in a regex literal


def box_config(limit: int, tag: str, step_timeout_s: float) -> dict:
    if not _TAG.fullmatch(tag):
        raise ValueError("the trial tag must be 6-16 lower-case letters and digits")
    return {
        "max": max(0, min(limit, MAX_INTERACTIONS)),
        "max_pages": 3,
        "tag": tag,
        "step_timeout_ms": int(step_timeout_s * 1000),
    }


def interactions(items, tag: str, live: set[str], local: Callable[[str], bool]) -> list[dict]:
    """The box's interaction records, each checked (``interaction``), in the order acted;
    at most MAX_INTERACTIONS."""
    items = items if isinstance(items, list) else []
    found = (interaction(raw, tag, live, local) for raw in items[:MAX_INTERACTIONS])
    return [record for record in found if record]


def interaction(raw, tag: str, live: set[str], local: Callable[[str], bool]) -> dict | None:
    """One record, checked and bounded; None when it names no live page of the map, an
    action or role outside the closed lists, or a found-by-name target without a name."""
    raw = raw if isinstance(raw, dict) else {}
    path, action = raw.get("path"), _str(raw.get("action"))
    target = raw.get("target") if isinstance(raw.get("target"), dict) else {}
    role, name = target.get("role"), _str(target.get("name"))
    if not isinstance(path, str) or path not in live or action not in ROLES:
        return None
    if role not in ROLES[action]:
        return None
    name = clean(name, 200)
    if len(name) > 120 or (action in NAMED and not name) or tag in name:
        return None
    error = clean(_str(raw.get("error")), 500)
    after = _lines(raw.get("after"))
    url_after = _str(raw.get("url_after"))
    shown = [text for role, text in after if role not in FIELD_ROLES]
    value = f"AMTP {tag}"
    return {
        "path": path,
        "action": action,
        "target": {"role": role, "name": name},
        "url_after": url_after if not error and local(url_after) else "",
        "item": "" if error else _item(shown, value),
        "appeared": [] if error else _changed(raw, "before", "after", tag),
        "removed": [] if error else _changed(raw, "after", "before", tag),
        "error": error,
    } | _seen(raw, action, error, shown, tag)


def _seen(raw: dict, action: str, error: str, shown: list[str], tag: str) -> dict:
    """What the box saw besides the snapshots: whether the field emptied after Enter, whether
    the item's text hid while its edit field was open, the class a filter link's click gave
    it (one CSS class name, else nothing); for the second item, where it stood (``second``),
    where the list put it (``order``) and whether its edit was saved trimmed; whether the
    item's box was checked after a page-level click, and the page-level box after the item's
    (each a boolean, else nothing)."""
    if error:
        return {}
    out: dict = {}
    if action == "filter":
        added = raw.get("class_added")
        return {"class_added": added} if isinstance(added, str) and _CLASS.fullmatch(added) else {}
    if action in SECOND:
        second = _item(shown, f"AMTP2 {tag}")  # never typed twice: "re-edited" is "edited"
        out["second"] = "edited" if second == "re-edited" else second
        if action == "enter_second" and raw.get("order") in ("after", "before"):
            out["order"] = raw["order"]
    checks = {"toggle_all": "checked", "untoggle_all": "checked", "reload": "checked"}
    checks |= {"enter_second": "trimmed", "edit_second": "trimmed"}
    for key in (checks.get(action), "all_checked" if action in ("toggle", "untoggle") else None):
        if key and isinstance(raw.get(key), bool):
            out[key] = raw[key]
    key = {"enter": "cleared", "edit": "hides"}.get(action)
    return out | ({key: raw.get(key) is True} if key else {})


def _changed(raw: dict, first: str, then: str, tag: str) -> list[dict]:
    """What the snapshot ``then`` has and ``first`` has not: named elements (``_appeared``),
    then the page's own buttons and counts (``_controls``), at most MAX_APPEARED in all."""
    out = _appeared(_lines(raw.get(first)), _lines(raw.get(then)), tag)
    had = set(_controls(raw.get(first), tag))
    for role, text in _controls(raw.get(then), tag):
        if (role, text) not in had and len(out) < MAX_APPEARED:
            had.add((role, text))
            out.append({"role": role, "text": clean(text, 200)})
    return out


def _controls(snapshot, tag: str) -> list[tuple[str, str]]:
    """("button", name) of the named buttons outside the created item (its own show only
    under the pointer), and ("count", text) of a number shown with its words ("1 item left":
    a number line and the text line after it, or one line): what an action may change."""
    rows = []
    for line in _str(snapshot)[:40_000].splitlines()[:2000]:
        match = _ROW.match(line)
        if match:
            rows.append((len(match["indent"]), match["role"], _text(match)))
    # The created item: the element holding the line with its text.
    item = next((n for n, row in enumerate(rows) if tag in row[2]), None)
    inside = set()
    if item is not None:
        depth = rows[item][0]
        start = next((n for n in range(item, -1, -1) if rows[n][0] < depth), item)
        end = next(
            (n for n in range(start + 1, len(rows)) if rows[n][0] <= rows[start][0]), len(rows)
        )
        inside = set(range(start, end))
    out = []
    for n, (indent, role, text) in enumerate(rows):
        if tag in text or n in inside or len(text) > 120:
            continue
        if role == "button" and sum(c.isalpha() for c in text) >= 2:
            out.append(("button", text))
        elif _COUNT.fullmatch(text):
            out.append(("count", text))
        elif text.isdigit() and n + 1 < len(rows) and rows[n + 1][:2] == (indent, "text"):
            joined = f"{text} {rows[n + 1][2]}"
            if _COUNT.fullmatch(joined):
                out.append(("count", joined))
    return out


def _text(match: re.Match) -> str:
    text = match["name"] or (match["value"] or "").strip()
    if text.startswith('"'):
        try:
            text = json.loads(text)
        except ValueError:
            return ""
    return " ".join(text.split()) if isinstance(text, str) else ""


def _item(shown: list[str], value: str) -> str:
    """Where the created item stands after the action: its text edited twice shows, edited
    once, its text as created, or neither (gone, or hidden by a filter)."""
    if any(f"{value} edited again" in text for text in shown):
        return "re-edited"
    if any(f"{value} edited" in text for text in shown):
        return "edited"
    return "shown" if any(value in text for text in shown) else "gone"


def _str(value) -> str:
    return value if isinstance(value, str) else ""


__all__ = ["PLACEHOLDER", "box_config", "interaction", "interactions"]
