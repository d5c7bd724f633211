"""What an LLM call sees of an agent's validated input: a rendering within a token budget.

An agent's first message is its canonical validated input. The crawl of a 100,000-file
repository has a ``file_tree`` of about 9 MB, which no model takes. So the handoff envelope is
sent verbatim (byte for byte) only while it fits ``Budgets.context_tokens``.
Above that, its large parts are rendered within the budget, and everything else is verbatim:

- ``file_tree``: the number of files, then paths ranked by relevance (candidate entry points,
  routes, pages and screens, then manifests, then existing tests, then the rest, shallow
  first; :func:`repositories.overview.ranked`), grouped by folder as ``[folder, [names]]``
  pairs, without shas or sizes; how many were left out, per top-level folder;
- ``entry_points``: grouped by kind (``api_route``, ``ui_component``, ``config``,
  ``test_fixture``) and folder, within their share;
- ``detected_stack``: verbatim when it fits its share, else each list cut in proportion to
  its size (long values clipped);
- ``app_map`` (beside the payload: the app as ExploreApp saw it): pages in order, each with its
  status, title, forms and first links, and its accessibility snapshot clipped at a line to
  an equal share (fewer pages rather than snapshots too short to name anything); the paths
  of the pages left out are listed while they fit; the JSON shapes and the interaction
  trials (their changes first, then the last actions) within shares of their own.

``rendering.omitted`` says what was left out. The stored artifacts keep the full contracts:
the rendering exists only in the LLM request.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from amtp_site.canonical import canonical_text
from repositories.overview import grouped, ranked, take_within

CHARS_PER_TOKEN = 4  # conservative estimate for code and JSON; no tokenizer download needed
RENDERING = "bounded-v1"
NOTE = (
    "The payload was too large to send whole: this is a bounded rendering of it. file_tree "
    "lists the most relevant paths grouped by folder (no shas or sizes); 'omitted' counts what "
    "was left out. The full payload is stored as the upstream artifact."
)
ENTRY_KINDS = ("api_route", "ui_component", "config", "test_fixture")
STACK_SHARE, ENTRY_SHARE = 0.35, 0.15  # of the room left after the verbatim keys
APP_SHARE = 0.4  # of that room, for the app map, when the repository's parts share it
MIN_SNAPSHOT = 400  # characters of a page's snapshot: below this, fewer pages are shown
PAGE_LINKS = 10  # links shown per page of a rendered app map
BIG_KEYS = ("file_tree", "entry_points", "detected_stack")
MAX_VALUE_CHARS = 2_000  # one non-list value of detected_stack, as rendered
ESCAPING = 1.25  # a JSON text inside a JSON message: every quote costs a backslash more


def text_tokens(text: str) -> int:
    """The runner's estimate for a text sent as a message: its JSON string form, 4 chars a
    token (quotes and backslashes count twice, as they do on the wire)."""
    return len(json.dumps(text)) // CHARS_PER_TOKEN + 1


def _size(value: Any) -> int:
    return len(canonical_text(value))


def render_envelope(envelope: dict[str, Any], *, budget_tokens: int) -> str:
    """The first user message for ``envelope``: canonical and verbatim when it fits, else the
    bounded rendering, as close under the budget as a few passes get it."""
    text = canonical_text(envelope)
    if text_tokens(text) <= budget_tokens:
        return text
    payload = envelope["payload"]
    order = (
        _ranked_paths(payload["file_tree"]) if isinstance(payload.get("file_tree"), list) else []
    )
    chars = int(budget_tokens * CHARS_PER_TOKEN / ESCAPING)
    best = None
    for _ in range(5):  # the sizes are estimates: scale towards the budget, keep what fits
        rendered = canonical_text(_rendered(envelope, order, chars))
        tokens = text_tokens(rendered)
        if tokens <= budget_tokens and (best is None or tokens > best[0]):
            best = (tokens, rendered)
        if budget_tokens * 0.95 <= tokens <= budget_tokens:
            break
        chars = int(chars * budget_tokens * 0.97 / tokens)
    return best[1] if best else rendered


def _rendered(envelope: dict[str, Any], order: list[str], chars: int) -> dict[str, Any]:
    payload = envelope["payload"]
    view = {k: v for k, v in payload.items() if k not in BIG_KEYS}
    omitted: dict[str, int] = {}
    room = max(chars - _size(view) - len(NOTE) - 400, 0)
    app = None
    if isinstance(envelope.get("app_map"), dict):
        shared = any(k in payload for k in BIG_KEYS)
        app = _app_map(envelope["app_map"], int(room * APP_SHARE) if shared else room, omitted)
        room = max(room - _size(app), 0)
    if isinstance(payload.get("detected_stack"), dict):
        view["detected_stack"] = _stack(payload["detected_stack"], int(room * STACK_SHARE), omitted)
    if isinstance(payload.get("entry_points"), list):
        view["entry_points"] = _entry_points(
            payload["entry_points"], int(room * ENTRY_SHARE), omitted
        )
    if isinstance(payload.get("file_tree"), list):
        left = max(chars - _size(view) - _size(app) - len(NOTE) - 400, 0)
        view["file_tree"] = _file_tree(order, left, omitted)
    rendered = {"run_id": envelope["run_id"], "upstream": envelope["upstream"], "payload": view}
    if app is not None:
        rendered["app_map"] = app
    rendered["rendering"] = {"version": RENDERING, "note": NOTE, "omitted": omitted}
    return rendered


def _ranked_paths(entries: list[dict]) -> list[str]:
    """Every path, most relevant first: candidates, manifests, tests, then the rest."""
    paths = [e["path"] for e in entries]
    kinds = ranked(paths)
    relevant = {p for group in kinds.values() for p in group}
    rest = sorted((p for p in paths if p not in relevant), key=lambda p: (p.count("/"), p))
    return kinds["candidate"] + kinds["manifest"] + kinds["test"] + rest


def _file_tree(order: list[str], chars: int, omitted: dict[str, int]) -> dict[str, Any]:
    shown, left = take_within(order, chars)
    by_top = Counter(p.split("/", 1)[0] if "/" in p else "." for p in order[len(shown) :])
    if left:
        omitted["file_tree"] = left
    return {
        "files": len(order),
        "shown": len(shown),
        "by_folder": [[folder, names] for folder, names in grouped(shown).items()],
        "not_shown_by_top_folder": dict(by_top.most_common(30)),
    }


def _entry_points(items: list[dict], chars: int, omitted: dict[str, int]) -> list[list]:
    rank = {kind: i for i, kind in enumerate(ENTRY_KINDS)}
    ordered = sorted(
        (e for e in items if isinstance(e, dict) and isinstance(e.get("path"), str)),
        key=lambda e: (rank.get(e.get("kind"), len(rank)), e["path"].count("/"), e["path"]),
    )
    shown, left = take_within([e["path"] for e in ordered], chars)
    if left:
        omitted["entry_points"] = left
    by_kind: dict[str, list[str]] = {}
    for entry in ordered[: len(shown)]:
        by_kind.setdefault(str(entry.get("kind")), []).append(entry["path"])
    return [
        [kind, [[folder, names] for folder, names in grouped(paths).items()]]
        for kind, paths in by_kind.items()
    ]


def _clip(value: Any) -> Any:
    text = canonical_text(value)
    return value if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "…(clipped)"


def _stack(stack: dict[str, Any], chars: int, omitted: dict[str, int]) -> dict[str, Any]:
    if _size(stack) <= chars:
        return stack
    out = {k: _clip(v) for k, v in stack.items() if not isinstance(v, list)}
    lists = {k: v for k, v in stack.items() if isinstance(v, list)}
    room = max(chars - _size(out), 0)
    total = sum(_size(v) for v in lists.values()) or 1
    for key, items in lists.items():
        share, used, kept = room * _size(items) / total, 0, []
        for item in items:
            item = _clip(item)
            used += _size(item) + 1
            if used > share:
                break
            kept.append(item)
        out[key] = kept
        if len(kept) < len(items):
            omitted[f"detected_stack.{key}"] = len(items) - len(kept)
    return out


def _app_map(app: dict[str, Any], chars: int, omitted: dict[str, int]) -> dict[str, Any]:
    if _size(app) <= chars:
        return app
    app = _apis_within(app, chars // 4, omitted)
    app = _interactions_within(app, chars // 8, omitted)
    pages = [p for p in app.get("pages") or [] if isinstance(p, dict)]
    base = {k: v for k, v in app.items() if k != "pages"}
    room = max(chars - _size(base) - 40, 0)
    room -= min(room // 10, _size([p.get("path") for p in pages]))  # for the paths left out
    bare = [
        {**page, "snapshot": "", "links": list(page.get("links") or [])[:PAGE_LINKS]}
        for page in pages
    ]
    costs, used = [], 0
    for page in bare:
        used += _size(page) + 1
        if used > room:
            break
        costs.append(used)
    shown = len(costs)
    while shown > 1 and (room - costs[shown - 1]) / shown < MIN_SNAPSHOT:
        shown -= max(1, shown // 10)
    share = (room - costs[shown - 1]) // shown if shown else 0
    kept = bare[:shown]
    clipped = 0
    for page, full in zip(kept, pages, strict=False):
        snapshot = full.get("snapshot") if isinstance(full.get("snapshot"), str) else ""
        page["snapshot"] = _clip_lines(snapshot, share)
        clipped += page["snapshot"] != snapshot
    if clipped:
        omitted["app_map.snapshots_clipped"] = clipped
    rest = [str(p.get("path")) for p in pages[shown:]]
    if rest:
        listed, left = take_within(rest, max(chars - _size({**base, "pages": kept}) - 40, 0))
        omitted["app_map.pages"] = len(rest)
        base = {**base, "pages_not_shown": listed, "pages_not_listed": left}
    return {**base, "pages": kept}


def _apis_within(app: dict[str, Any], chars: int, omitted: dict[str, int]) -> dict[str, Any]:
    """``app`` with its JSON shapes (``apis``) cut, in order, to ``chars``: the pages keep
    the larger share."""
    apis = app.get("apis") if isinstance(app.get("apis"), list) else []
    if _size(apis) <= chars:
        return app
    used, kept = 0, []
    for record in apis:
        used += _size(record) + 1
        if used > chars:
            break
        kept.append(record)
    omitted["app_map.apis"] = len(apis) - len(kept)
    return {**app, "apis": kept}


def _interactions_within(app: dict[str, Any], chars: int, omitted: dict[str, int]) -> dict:
    """``app`` with its interaction trials within ``chars``: what each made appear or go
    away is dropped first (the action, its target and where the item stood are the journey),
    then the last actions (what follows an action depended on it)."""
    acted = app.get("interactions") if isinstance(app.get("interactions"), list) else []
    if _size(acted) <= chars:
        return app
    bare = [{**r, "appeared": [], "removed": []} if isinstance(r, dict) else r for r in acted]
    omitted["app_map.interaction_changes"] = len(bare)
    while bare and _size(bare) > chars:
        bare.pop()
    if len(bare) < len(acted):
        omitted["app_map.interactions"] = len(acted) - len(bare)
    return {**app, "interactions": bare}


def _clip_lines(text: str, limit: int) -> str:
    """``text`` cut at a line boundary within ``limit`` characters, marked when cut."""
    if len(text) <= limit:
        return text
    mark = "\n…(clipped)"
    cut = text.rfind("\n", 0, max(limit - len(mark), 0))
    return (text[:cut] + mark) if cut > 0 else ""
