"""Interaction trials: what the app did when ExploreApp acted on it as a user, outside forms.

The box (``box/interact.mjs``) types the run's value into a text field no ``<form>`` holds and
presses Enter; when the value then shows (an item was created) it toggles the item's checkbox,
clicks the page's filter links (another ``#/route`` or ``?query`` of the same page), edits the
item by double-click (Enter saves; Escape cancels) and deletes it by its own button. Each
action comes back with the snapshots before and after and the URL after. Everything is
untrusted: each record is checked here against the map's live pages and a closed list of
actions and roles, and reduced to what changed (named elements that appeared or went away,
where the created item stands, the URL after), with the run's tag replaced by ``{tag}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from verification.exploration.trials import PLACEHOLDER, _appeared, _lines
from verification.playwright import clean

# action → the roles its target may have (what the box acts on)
ROLES = {
    "enter": ("textbox", "searchbox", "combobox"),
    "toggle": ("checkbox",),
    "filter": ("link",),
    "edit": ("textbox",),
    "cancel_edit": ("textbox",),
    "delete": ("button",),
}
NAMED = ("enter", "filter")  # actions whose target is found by its name
MAX_INTERACTIONS = 30
# Roles whose text is what a user typed into, not what the page shows.
FIELD_ROLES = ("textbox", "searchbox", "combobox", "spinbutton", "option", "listbox")
_TAG = re.compile(r"[a-z0-9]{6,16}")


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
    before, after = _lines(raw.get("before")), _lines(raw.get("after"))
    url_after = _str(raw.get("url_after"))
    shown = [text for role, text in after if role not in FIELD_ROLES]
    value = f"AMTP {tag}"
    return {
        "path": path,
        "action": action,
        "target": {"role": role, "name": name},
        "url_after": url_after if not error and local(url_after) else "",
        "item": "" if error else _item(shown, value),
        "appeared": [] if error else _appeared(before, after, tag),
        "removed": [] if error else _appeared(after, before, tag),
        "error": error,
    }


def _item(shown: list[str], value: str) -> str:
    """Where the created item stands after the action: its edited text shows, its text shows,
    or neither (gone, or hidden by a filter)."""
    if any(f"{value} edited" in text for text in shown):
        return "edited"
    return "shown" if any(value in text for text in shown) else "gone"


def _str(value) -> str:
    return value if isinstance(value, str) else ""


__all__ = ["PLACEHOLDER", "box_config", "interaction", "interactions"]
