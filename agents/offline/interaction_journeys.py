"""Interaction journeys: the item lifecycle exploration acted out on a page without a form.

ExploreApp typed its value into a text field no ``<form>`` holds and pressed Enter, and when
the value then showed, typed a second item with spaces before it (where the list put it,
saved trimmed), edited that one with spaces around its text and emptied it (an empty edit removes an item), clicked a page-level
checkbox's label twice ("Mark all as complete"), then tried the item it had created: its
checkbox, the page's filter links
(``#/active``), a double-click to edit it (Enter saves, Escape cancels, leaving the field
saves), its delete button
(``interactions`` of the app map; ``verification/exploration/interactions.py``). The journey replays
those actions in the same order with the test's own unique text, and expects what each one
showed: create → see → change → filter → edit → delete, as far as the trials went. The second
item is replayed only when the empty edit removed it (the journey leaves nothing behind). It finds
the item by its own text, never by an id or a position. An action that failed, or whose
outcome the journey cannot check, ends the journey there (what follows depended on it).

The app map is model-facing data from a hostile app: the path goes through ``clean_route``,
names and addresses are bounded to one printable line and reach a test only JSON-quoted
(``journey_code.py``).
"""

from __future__ import annotations

import json
import re

from .candidates import NO_ERRORS, Candidate
from .common import clean_route, one_line, params, slug

FIELDS = ("textbox", "searchbox", "combobox")
_SUFFIX = re.compile(r"[#?][\w\-/#!?=&.%~]{0,120}")
# A count shown with its words (verification/exploration/interactions.py): the test frees the number.
_COUNT = re.compile(r"\d{1,6} [A-Za-z][A-Za-z ]{0,40}")
_CLASS = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}")
CLEAN_NOTE = "The journey deletes what it created, at its end or after a failure (best effort)"
SECOND = ("enter_second", "edit_second", "empty_edit")  # the second item's actions, in order
RUN_NOTE = (
    "Each run and retry types its own text (built from a run token, the worker and the"
    " retry), so parallel runs and reruns never collide"
)


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _name(value: object, empty: bool = False) -> str | None:
    """A name fit for a locator: one whole printable line with a letter or digit ("" only
    when ``empty`` allows an unnamed control)."""
    if not isinstance(value, str) or len(value) > 120:
        return None
    text = one_line(value, 120)
    if text != value.strip():
        return None
    if not text:
        return "" if empty else None
    return text if any(c.isalnum() or c in "×✕✖" for c in text) else None


def _records(app_map: dict) -> list[dict]:
    """The interaction records of the first page whose Enter created an item, in order."""
    raw = app_map.get("interactions") if isinstance(app_map.get("interactions"), list) else []
    items = [r for r in raw[:30] if isinstance(r, dict) and isinstance(r.get("target"), dict)]
    start = next(
        (
            n
            for n, r in enumerate(items)
            if r.get("action") == "enter" and r.get("item") == "shown" and not r.get("error")
        ),
        None,
    )
    if start is None:
        return []
    path = items[start].get("path")
    out = [items[start]]
    for record in items[start + 1 :]:
        if record.get("action") == "enter" or record.get("path") != path:
            break
        out.append(record)
    return out


def _suffix(url: object, path: str) -> str | None:
    """The #route or ?query a filter link led to on ``path`` ("/#/active" → "#/active")."""
    if not isinstance(url, str) or not url.startswith(path):
        return None
    rest = url[len(path) :]
    return rest if _SUFFIX.fullmatch(rest) else None


def _second(records: list[dict], field: str) -> list[str]:
    """The steps of the second item (typed into ``field``, the create step's "role "name""):
    where the list put it, its edit saved trimmed, the empty edit that removed it; none unless
    that edit removed it (else the journey would leave it behind) and every action worked."""
    by = {r.get("action"): r for r in records if r.get("action") in SECOND}
    typed, edited, emptied = (by.get(a) for a in SECOND)
    if not typed or not emptied or emptied.get("second") != "gone":
        return []
    if any(r.get("error") for r in by.values()) or typed.get("second") != "shown":
        return []
    if any(r["target"].get("name") for r in (edited, emptied) if r):
        return []  # the focused field is the one the steps type into
    steps = [f"Type a second unique text, spaces before it, into the {field} and press Enter"]
    if typed.get("order") in ("after", "before"):
        steps.append(f"Expect the second text to be shown {typed['order']} the created text")
    if typed.get("trimmed") is True:
        steps.append("Expect the second text to be shown trimmed")
    if edited and edited.get("second") == "edited":
        steps.append(
            "Double-click the second item, type its edited text with spaces around it and press Enter"
        )
        trimmed = " trimmed" if edited.get("trimmed") is True else ""
        steps.append(f"Expect the second item's edited text to be shown{trimmed}")
    return [
        *steps,
        "Double-click the second item, empty its text and press Enter",
        "Expect the second text to be gone",
    ]


def _step(record: dict, path: str, every: str = "") -> tuple[str, list[str]] | None:
    """(what the title says, the steps and checks) of one action after the item was created;
    None when the journey cannot follow it. ``every``: the label of the page-level checkbox
    (``toggle_all``) whose state the item's own box changes."""
    action, item = record.get("action"), record.get("item")
    name = _name(record["target"].get("name"), empty=True)
    if record.get("error") or name is None:
        return None
    named = f" {_q(name)}" if name else ""
    if (
        action in ("toggle_all", "untoggle_all")
        and name
        and isinstance(record.get("checked"), bool)
    ):
        state = "checked" if record["checked"] else "unchecked"
        word = "mark all" if record["checked"] else "unmark all"
        return word, [
            f"Click the label {_q(name)}",
            f"Expect the checkbox of the created item to be {state}",
            *_watched(record),
        ]
    # The page-level box following the item's: asserted where it did (checked).
    follows = (
        [f"Expect the checkbox labelled {_q(every)} to be checked"]
        if every and record.get("all_checked") is True
        else []
    )
    if action == "toggle" and item in ("shown", "edited"):
        return "mark it", [
            f"Check the checkbox{named} of the created item",
            "Expect the checkbox of the created item to be checked",
            *follows,
            *_watched(record),
        ]
    if action == "untoggle" and item in ("shown", "edited"):
        return "unmark it", [
            f"Uncheck the checkbox{named} of the created item",
            "Expect the checkbox of the created item to be unchecked",
            *_watched(record),
        ]
    if action == "reload" and item == "shown":
        kept = ["Expect the checkbox of the created item to be checked"] * (
            record.get("checked") is True
        )
        return "reload", ["Reload the page", "Expect the created text to be visible", *kept]
    if action == "back" and item in ("shown", "gone"):
        steps = ["Go back"]
        if end := _suffix(record.get("url_after"), path):
            steps.append(f"Expect the address to end with {_q(end)}")
        seen = "visible" if item == "shown" else "hidden"
        return "go back", [*steps, f"Expect the created text to be {seen}"]
    if action == "clear" and item == "gone" and name:
        return "delete", [
            f"Click the button {_q(name)}, accepting its confirmation",
            "Expect the created text to be gone",
            *_watched(record),
        ]
    if action == "filter" and name and item in ("shown", "gone"):
        steps = [f"Click the link {_q(name)}"]
        if end := _suffix(record.get("url_after"), path):
            steps.append(f"Expect the address to end with {_q(end)}")
        seen = "visible" if item == "shown" else "hidden"
        steps.append(f"Expect the created text to be {seen}")
        if isinstance(cls := record.get("class_added"), str) and _CLASS.fullmatch(cls):
            steps.append(f"Expect the link {_q(name)} to have the class {_q(cls)}")
        return "filter", steps
    into = f" into the textbox {_q(name)}" if name else ""
    if action == "edit" and item == "edited":
        # Its text hid while the edit field was open: the test checks that in between.
        hidden = ", see its text hidden" if record.get("hides") is True else ""
        return "edit", [
            f"Double-click the created item{hidden}, type an edited unique text{into} and press Enter",
            "Expect the edited text to be visible",
        ]
    if action == "cancel_edit" and item == "edited":
        return "cancel an edit", [
            f"Double-click the created item, type a discarded text{into} and press Escape",
            "Expect the edited text to be visible",
            "Expect the discarded text to be gone",
        ]
    if action == "blur_edit" and item == "re-edited":
        return "edit", [
            f"Double-click the created item, type a re-edited unique text{into} and leave it",
            "Expect the re-edited text to be visible",
        ]
    if action == "delete" and item == "gone":
        control = f"Click the button{f' {_q(name)}' if name else ''} of the created item"
        return "delete", [
            "Point at the created item",
            f"{control}, accepting its confirmation",
            "Expect the created text to be gone",
        ]
    return None


def _watched(record: dict) -> list[str]:
    """Checks of what else the action changed on the page: a count it updated ("1 item
    left", asserted with the number free), a button it brought or took away (at most two
    of each)."""
    counts = [a["text"] for a in record.get("appeared") or [] if a.get("role") == "count"]
    shown = [a["text"] for a in record.get("appeared") or [] if a.get("role") == "button"]
    gone = [a["text"] for a in record.get("removed") or [] if a.get("role") == "button"]
    steps = [
        f"Expect a count reading {_q(t)} to be visible" for t in counts[:2] if _COUNT.fullmatch(t)
    ]
    steps += [f"Expect the button {_q(n)} to be visible" for n in shown[:2] if _name(n)]
    steps += [f"Expect the button {_q(n)} to be gone" for n in gone[:2] if _name(n)]
    return steps


def interaction_candidates(app_map: object, running: str) -> list[Candidate]:
    """The journey the app map's interaction trials showed (none without a created item)."""
    records = _records(app_map) if isinstance(app_map, dict) else []
    if not records:
        return []
    first = records[0]
    path = clean_route(first.get("path")) if isinstance(first.get("path"), str) else None
    role, name = first["target"].get("role"), _name(first["target"].get("name"))
    if not path or path != first["path"] or params(path) or role not in FIELDS or not name:
        return []
    steps = [
        f"Open {path}",
        f"Type a unique text into the {role} {_q(name)} and press Enter",
        "Expect the created text to be visible",
    ]
    if first.get("cleared") is True:
        steps.append(f"Expect the {role} {_q(name)} to be empty")
    steps += _watched(first)
    words = ["create", "see it"]
    if second := _second(records, f"{role} {_q(name)}"):
        steps += second
        words.append("add a second and empty it")
    every = next(
        (_name(r["target"].get("name")) or "" for r in records if r.get("action") == "toggle_all"),
        "",
    )
    removal: list[str] = []
    for record in records[1:]:
        if record.get("action") in SECOND:
            continue  # replayed above, as a whole or not at all
        if record.get("action") == "reload" and record.get("item") != "shown":
            continue  # the app keeps nothing over a reload: no step asserts a loss
        found = _step(record, path, every)
        if found is None:
            break  # what follows depended on this action's outcome
        word, more = found
        steps += more
        if word not in words:
            words.append(word)
        if word == "delete":
            removal = [m for m in more if not m.startswith("Expect")]
    pre = [running, RUN_NOTE]
    if removal:
        steps += [f"Clean up: Open {path}", *(f"Clean up: {s}" for s in removal)]
        pre.append(CLEAN_NOTE)
    key = f"journey_{slug(path) or 'home'}_{slug(name, 24) or 'enter'}"
    title = f"Journey {path}: " + ", ".join(words)
    expected = f"each action shows what it showed when the app was explored; {NO_ERRORS}"
    return [Candidate(key, title, steps, expected, "critical", "journey", pre)]
