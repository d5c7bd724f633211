"""Test Case Generator brains: detected routes, pages and screens → prioritised test cases.

Depth rule (what `generate_cases` keeps for each `depth_level`):

    depth     priorities kept                  cap
    smoke     critical                           5
    core      critical, high                    15
    standard  critical, high, medium            40
    deep      critical, high, medium, low      100

Priorities:
  web     critical  the home page ("/"), and per top-level area (first static path segment,
                    `api`/`vN` skipped) its entry: the shortest static page, and for APIs the
                    shortest static GET endpoint — so critical cases are one per area
          high      other static pages and GET endpoints (a GET whose JSON answer the app
                    map recorded expects its status and shape, else only its status, and its
                    title says which); every POST/PUT/PATCH on a
                    collection, sent an empty JSON body, must not cause a 5xx
          medium    dynamic pages/endpoints with sample parameters; mutating requests on a
                    record that does not exist
          low       404 for a missing record / an unknown page; non-empty document titles
  journeys critical the app's journey (`journeys.py`): sign up and log in when the app has
                    both forms, then its main create form, the item listed, edited and
                    deleted as far as the app map shows the controls; always taken first
  flows   critical  the app's main create form (its submitted text then shown), from the app
                    map's trials (`flows.py`), when no journey starts from it
          high      every other form whose trial showed an outcome and no error
  mobile  critical  app launch (first screen, no crash dialog), and each tab screen
          high      other screens reachable by deep link or with a known title
          medium    remaining screens (dynamic routes, or reached by a guessed label)
          low       each screen scrolls without a crash

Within a priority, cases are taken round-robin across areas so a cap spreads coverage, and
the cap cuts the lowest priority first; a page test that can only check the render (its title
ends "renders (smoke)") and an API test that can only check the status ("(status only, shape
not checked)") are listed last of their priority. Ids are derived from route/page/screen names over the
full candidate list before selection (deduplicated with `_2`, `_3` …), so a case keeps its id
at every depth and each depth's cases are a subset of the next one's.

Steps use a small grammar that `code.py` turns into Playwright/Maestro commands:
`Open <path>`, `Send <METHOD> <path>[ with an empty JSON body]`, `Launch the app with a clean
state`, `Wait for animations to end`, `Open deep link <url>`, `Tap "<label>"`, `Scroll down`,
`Take a screenshot named <name>`, and for flows `Fill "<label>" with a unique text|a unique
email|a unique URL|the number 1|the phone number 5550100`, `Select "<option>" in "<label>"`,
`Check "<label>"`, `Click the button "<name>"`; for journeys also `Fill "<label>" with a
unique username|a unique password|an edited unique text`, `Click the button "<name>",
accepting its confirmation`, `Click the link|button "<name>" of the created item[, accepting
its confirmation]`, `Expect the user to be signed in`, `Expect the created|edited text to be
visible`, `Expect the created text to be gone`, and `Clean up: <step>` (run in `finally`); and
`Clear the browser's cookies` (the test's own context) before opening a page that logs out.
Expectations name statuses ("2xx", "status below 500", "status 404", "status 200"), "JSON body",
the body's shape where the app map recorded one (``api_shape.describe``: `a JSON list; its
first item, when there is one, is a JSON object with the keys "id" (number)`),
`heading "<text>"`, "document title", `"<text>" is visible` and "crash dialog", and for flows
`the text "<text>" is visible` (`{tag}` in it: the test's unique value) and `the submitted
"<label>" is visible`. Quoted texts are JSON strings, so any character survives the round
trip.
"""

from __future__ import annotations

from agents.case_generator import DEPTH_RULES

from .candidates import (
    SMOKE,
    STATUS_ONLY,
    Candidate,
    mobile_candidates,
    running_note,
    web_candidates,
)
from .common import HEADER, one_line, slug
from .flows import flow_candidates
from .interaction_journeys import interaction_candidates
from .journeys import journey_candidates, journey_trial, own_account_steps

# The rule is the Test Case Generator's contract; the offline rules follow it, not a copy.
DEPTHS = DEPTH_RULES
PRIORITIES = ("critical", "high", "medium", "low")


# --- selection ----------------------------------------------------------------------------


def _assign_ids(cands: list[Candidate]) -> list[str]:
    seen: set[str] = set()
    ids = []
    for cand in cands:
        base = "tc_" + (slug(cand.key, 56) or "case")
        cid, n = base, 2
        while cid in seen:
            cid, n = f"{base}_{n}", n + 1
        seen.add(cid)
        ids.append(cid)
    return ids


def _area_order(cands: list[tuple[str, Candidate]]) -> dict[str, tuple[int, int]]:
    """Areas interleaved across families (pages, APIs, screens) so a cap keeps a mix."""
    families: dict[str, list[str]] = {}
    for _, cand in cands:
        family = families.setdefault(cand.area.split("_")[0], [])
        if cand.area not in family:
            family.append(cand.area)
    order = {}
    for f_index, (family, areas) in enumerate(families.items()):
        for a_index, area in enumerate(areas):
            # Journeys create and verify data: they lead, whatever the cap.
            order[area] = (-1, 0) if family == "journey" else (a_index, f_index)
    return order


def _select(cands: list[tuple[str, Candidate]], depth: str) -> list[tuple[str, Candidate]]:
    allowed, cap = DEPTHS[depth]
    order = _area_order(cands)
    chosen: list[tuple[str, Candidate]] = []
    for prio in allowed:
        groups: dict[str, list[tuple[str, Candidate]]] = {}
        for item in sorted(cands, key=lambda item: order[item[1].area]):
            if item[1].priority == prio:
                groups.setdefault(item[1].area, []).append(item)
        queues = list(groups.values())
        while queues and len(chosen) < cap:
            for queue in queues:
                if queue and len(chosen) < cap:
                    chosen.append(queue.pop(0))
            queues = [q for q in queues if q]
    return chosen


def generate_cases(crawler_output: dict, depth_level: str) -> dict:
    """A `test_case_generator/output` object for the crawler output at `depth_level`."""
    if depth_level not in DEPTHS:
        raise ValueError(f"unknown depth_level: {depth_level!r}")
    stack = crawler_output.get("detected_stack")
    stack = stack if isinstance(stack, dict) else {}
    mobile = stack.get("platform") == "mobile" or stack.get("suggested_framework") == "maestro"
    app_map = crawler_output.get("app_map")
    cands = mobile_candidates(stack) if mobile else web_candidates(stack, app_map)
    if not mobile:  # after the pages and routes, so their ids stay what they were
        running = running_note(stack)
        cands += journey_candidates(app_map, running)
        cands += interaction_candidates(app_map, running)
        own = own_account_steps(app_map)
        cands += flow_candidates(app_map, running, skip=journey_trial(app_map), account=own)
    pairs = list(zip(_assign_ids(cands), cands, strict=True))
    chosen = _select(pairs, depth_level)
    # Within a priority, a test that checks nothing but the render or the status ranks last.
    chosen.sort(key=lambda item: (PRIORITIES.index(item[1].priority), _weak(item[1].title)))
    test_cases = [
        {
            "id": cid,
            "title": one_line(c.title, 200) or cid,
            "preconditions": [one_line(p, 300) for p in c.preconditions if one_line(p, 300)],
            "steps": [s for s in c.steps if s],
            "expected": c.expected,
            "priority": c.priority,
        }
        for cid, c in chosen
    ]
    return {
        "run_id": crawler_output.get("run_id"),
        "test_cases": test_cases,
        "coverage_notes": _notes(stack, mobile, depth_level, [c for _, c in chosen], len(pairs)),
    }


def _notes(stack: dict, mobile: bool, depth: str, chosen: list[Candidate], total: int) -> str:
    kept = len(chosen)
    allowed, cap = DEPTHS[depth]
    frameworks = ", ".join(
        one_line(f, 40) for f in stack.get("frameworks") or [] if isinstance(f, str)
    )
    counts = {
        k: len(stack.get(k)) if isinstance(stack.get(k), list) else 0
        for k in ("routes", "pages", "screens")
    }
    runtime = one_line(stack.get("runtime") or "unknown", 40)
    parts = [
        f"{HEADER}. These cases were derived by deterministic rules (no LLM) from the detected"
        " stack.",
        f"Depth {depth}: {kept} of {total} candidate cases kept"
        f" (priorities {', '.join(allowed)}; cap {cap}).",
        f"Detected: runtime {runtime}; frameworks {frameworks or 'none'};"
        f" {counts['routes']} routes, {counts['pages']} pages, {counts['screens']} screens.",
    ]
    if mobile:
        parts.append(
            "Mobile screens are reached by deep link where one is known, otherwise by tapping"
            " a label taken from the screen's title or name."
        )
        if counts["routes"]:
            parts.append("HTTP routes were detected too but are not covered by Maestro flows.")
    else:
        parts.append(
            "Path parameters use sample values (1 / example, or 999999999 for records that must"
            " not exist); adjust them to your fixtures."
        )
    if total <= 1:
        parts.append(
            "No routes, pages or screens were recognised, so only an app-start smoke case was"
            " generated."
        )
    journeys = [c for c in chosen if c.key.startswith("journey_")]
    for journey in journeys:
        parts.append(
            f"{journey.title.split(': ', 1)[-1].capitalize()}: one journey with data unique to"
            " each run, worker and retry"
            + (", deleted again" if "delete" in journey.title else "")
            + "."
        )
    if flows := sum(c.key.startswith("flow_") for c in chosen):
        parts.append(
            f"{flows} flow(s) submit a form the app map's trials showed working, with data"
            " unique to each run and retry."
        )
    elif not mobile and not journeys:
        parts.append("No flow: the app map holds no form trial that showed an outcome.")
    signs_up = any("sign up" in j.title for j in journeys)
    parts.append(
        f"Not covered: {'' if signs_up else 'authentication, '}business rules and visual checks."
    )
    return " ".join(parts)


def _weak(title: str) -> bool:
    """A test that checks nothing but the render or the status, and says so in its title."""
    return title.endswith(SMOKE) or title.endswith(f"({STATUS_ONLY})")
