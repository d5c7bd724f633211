"""Journeys: multi-step user flows chained from the app map's forms, trials and snapshots.

A journey is planned only from what the explored app showed:

- **account**: a sign-up form (a password field; its button or page reads register, sign up,
  create account or join) and a log-in form (a password field; log in or sign in). The
  journey signs up a user of its own (a unique username, email and password per run and
  retry) and logs in with it, then expects the user to be signed in (a log-out control or the
  username is visible). Password forms are never tried during exploration, so these steps
  rest on the forms' labels and buttons alone.
- **data**: the app's main create form, a trial that showed the submitted text (``flows``),
  then the page it landed on opened again (the item is *listed*, not only echoed). When a
  page of the map offers an edit form sharing the create form's text labels and the listing
  shows an edit link or button, the journey edits the item by that control *of the created
  item* (the innermost element holding both its text and the control), saves, and expects
  the edited text listed. When a delete form or button sits in the listing or on the edit
  page, it deletes the item the same way, accepting a confirmation, and expects it gone.
  With a search form (one text or search field; its button searches, finds or filters) the
  journey finds the item and, when the trial showed it as a link, opens it. The account
  steps come first when the app has both account forms, so each journey acts as its own
  user. Optional fields other than text (a "Remember me" box) are left as they are.

A journey that creates something also cleans it up: its ``Clean up:`` steps run in a
``finally`` block, best effort, only while the created item is still listed, so a failure
of the journey is never masked by one of its clean-up. Every control is addressed through
the created item, never an unscoped "Delete" of a page. Labels and names are one printable
line of at most 120 characters (longer ones are not shortened: a shortened label would not
match), and reach a test only JSON-quoted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .candidates import NO_ERRORS, Candidate
from .common import clean_route, one_line, params, slug
from .flows import CREATES, PLACEHOLDER, trial_outcome, trial_steps
from .journey_code import CLEAN_PREFIX, SIGN_OUT
from .live import named_elements

SIGN_UP = re.compile(r"\b(register|sign[ -]?up|create (an )?account|join)\b", re.I)
LOG_IN = re.compile(r"\b(log[ -]?in|sign[ -]?in)\b", re.I)
# What creates an item to list: its button, else its page (flaskr's "/create" says "Save").
NEW = re.compile(r"^\s*(add|create|new|post|publish|submit)\b", re.I)
NEW_PAGE = re.compile(r"/(new|create|add)(/|$)", re.I)
EDIT = re.compile(r"^\s*(save|update|edit)\b", re.I)
SEARCH = re.compile(r"\b(search|find|filter)\b", re.I)
DELETE = re.compile(r"^\s*(delete|remove)\b", re.I)
# A control that belongs to one item of a list is named by its action alone ("Edit").
# A record's own segment in a path: a number, a long hex id or a UUID.
_RECORD = re.compile(r"/(\d+|[0-9a-f]{12,}|[0-9a-f]{8}-[0-9a-f-]{27})(?=/|$)", re.I)
ITEM_CONTROL = re.compile(r"^\s*(edit|update|change|delete|remove)\s*$", re.I)
ACCOUNT_VALUES = {"text": "a unique username", "email": "a unique email"}
EMAIL = re.compile(r"\be-?mail\b", re.I)
# Fields a journey may type into; any other (a "Remember me" box) counts only when required.
TYPED = ("text", "email", "password", "search", "textarea")
MAX_PAGES, MAX_FORMS = 500, 10
RUN_NOTE = (
    "Each run and retry uses its own data (a user and item names built from a run token,"
    " the worker and the retry), so parallel runs and reruns never collide"
)
CLEAN_NOTE = "The journey deletes what it created, at its end or after a failure (best effort)"


@dataclass(frozen=True)
class Form:
    path: str
    submit: str
    fields: tuple[tuple[str, str], ...]  # (label, type) of each labelled field


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _name(text: object) -> str | None:
    """A label or button name fit for a locator: one line, whole, real words."""
    if not isinstance(text, str) or len(text) > 120:
        return None
    value = one_line(text, 120)
    return value if value == text.strip() and any(c.isalnum() for c in value) else None


def _live_pages(app_map: dict) -> list[dict]:
    pages = app_map.get("pages") if isinstance(app_map.get("pages"), list) else []
    out = []
    for page in pages[:MAX_PAGES]:
        if not isinstance(page, dict) or not isinstance(page.get("path"), str):
            continue
        status = page.get("status")
        path = clean_route(page["path"]) if "?" not in page["path"] else None
        ok = isinstance(status, int) and 200 <= status < 300 and not page.get("redirected_to")
        if ok and path == page["path"] and not params(path):
            out.append(page)
    return out


def _forms(page: dict) -> list[Form]:
    out = []
    forms = page.get("forms") if isinstance(page.get("forms"), list) else []
    for raw in forms[:MAX_FORMS]:
        raw = raw if isinstance(raw, dict) else {}
        submit = _name(raw.get("submit"))
        fields = raw.get("fields") if isinstance(raw.get("fields"), list) else []
        named = [
            (_name(f.get("label")), _kind(f))
            for f in fields[:40]
            if isinstance(f, dict) and (f.get("required") is True or _kind(f) in TYPED)
        ]
        if submit and all(label for label, _ in named):
            out.append(Form(page["path"], submit, tuple(named)))  # type: ignore[arg-type]
    return out


def _kind(field: dict) -> str:
    """A field's type; a text field labelled as an email is an email ("Email", type text)."""
    kind = str(field.get("type"))
    return "email" if kind == "text" and EMAIL.search(str(field.get("label"))) else kind


def _account_form(forms: list[Form], pattern: re.Pattern, other: re.Pattern) -> Form | None:
    for form in forms:
        kinds = {kind for _, kind in form.fields}
        fillable = kinds <= {"text", "email", "password"}
        if "password" in kinds and fillable and kinds & {"text", "email"}:
            named = pattern.search(form.submit) or pattern.search(form.path)
            if named and not other.search(form.submit):
                return form
    return None


def _fill_account(form: Form) -> list[str]:
    steps = [f"Open {form.path}"]
    for label, kind in form.fields:
        value = "a unique password" if kind == "password" else ACCOUNT_VALUES[kind]
        steps.append(f"Fill {_q(label)} with {value}")
    return [*steps, f"Click the button {_q(form.submit)}"]


def account_steps(forms: list[Form]) -> list[str]:
    """Sign up, then log in, as the journey's own user ([] without both forms), from a
    session of its own: signed out first, as a new user is (an app may send a signed-in
    browser away from its sign-up page)."""
    sign_up = _account_form(forms, SIGN_UP, LOG_IN)
    log_in = _account_form(forms, LOG_IN, SIGN_UP)
    if not sign_up or not log_in or sign_up == log_in:
        return []
    steps = [*_fill_account(sign_up), *_fill_account(log_in), "Expect the user to be signed in"]
    return [SIGN_OUT, *steps]


def _signup_forms(app_map: dict) -> list[Form]:
    """The sign-up and log-in forms the exploration signed up and in with (``signup``): a
    signed-in exploration may have seen their pages only as redirects."""
    signup = app_map.get("signup") if isinstance(app_map.get("signup"), dict) else {}
    out = []
    for path, form in (
        (signup.get("path"), signup.get("form")),
        (signup.get("login_path"), signup.get("login_form")),
    ):
        route = clean_route(path) if isinstance(path, str) and "?" not in path else None
        if route and route == path and not params(route) and isinstance(form, dict):
            out += _forms({"path": route, "forms": [form]})
    return out


LOG_OUT = re.compile(r"^\s*(log|sign)[ -]?(out|off)\s*$", re.I)


def _log_out_step(pages: list[dict]) -> list[str]:
    """Open the first page showing a control that logs out ("Log Out" in the nav), then
    click it ([] when no page the signed-in exploration saw shows one)."""
    for page in sorted(pages, key=lambda p: p["path"] != "/"):
        snapshot = page.get("snapshot") if isinstance(page.get("snapshot"), str) else ""
        for role, name, _ in named_elements(snapshot[:20_000]):
            if role in ("link", "button") and LOG_OUT.match(name):
                return [f"Open {page['path']}", f"Click the {role} {_q(name)}"]
    return []


def sign_out_journey(app_map: dict, forms: list[Form], running: str) -> Candidate | None:
    """Sign up and log in as the journey's own user, log out by the app's own control, and
    see the control that signs in again (named as the log-in form's button, else any)."""
    account, log_in = account_steps(forms), _account_form(forms, LOG_IN, SIGN_UP)
    leave = _log_out_step(_live_pages(app_map))
    if not account or not leave or log_in is None:
        return None
    steps = [*account, *leave, f"Expect the user to be signed out, offered {_q(log_in.submit)}"]
    title = "Journey: sign up, log in, log out and see the way to log in again"
    expected = f"the new user is signed in, then signed out; {NO_ERRORS}"
    pre = [running, RUN_NOTE]
    return Candidate("journey_sign_out", title, steps, expected, "critical", "journey", pre)


def _controls(page: dict | None) -> list[tuple[str, str]]:
    """(role, name) of the per-item edit and delete controls the page's snapshot shows."""
    snapshot = page.get("snapshot") if page and isinstance(page.get("snapshot"), str) else ""
    found = [(role, name) for role, name, _ in named_elements(snapshot[:20_000])]
    items = [(r, n) for r, n in found if r in ("link", "button") and ITEM_CONTROL.match(n)]
    return list(dict.fromkeys(items))


def _main_trial(app_map: dict) -> tuple[dict, list[str], str] | None:
    """The create trial a data journey starts from: its steps and the page listing it."""
    trials = app_map.get("trials") if isinstance(app_map.get("trials"), list) else []
    found = []
    for trial in trials[:20]:
        if (
            not isinstance(trial, dict)
            or trial.get("error")
            or trial.get("shows_value") is not True
        ):
            continue
        path = clean_route(trial["path"]) if isinstance(trial.get("path"), str) else None
        submit = _name(trial.get("submit"))
        if not path or path != trial["path"] or params(path) or not submit:
            continue
        steps, outcome = trial_steps(trial, path, submit), trial_outcome(trial)
        if steps and any(step.startswith(CLEAN_PREFIX) for step in steps):
            continue  # it changed a record the app had: an edit, not a create
        if steps and outcome and outcome[1]:
            after = trial.get("path_after") if isinstance(trial.get("path_after"), str) else ""
            listing = _listing(path, after, {p["path"] for p in _live_pages(app_map)})
            if not (NEW.match(submit) or NEW_PAGE.search(path)):
                continue  # a settings form saves, it creates nothing to list
            item_page = any(c.isdigit() for c in path)  # a record's own page edits it
            found.append(((item_page, not CREATES.match(submit)), trial, steps, listing))
    found.sort(key=lambda item: item[0])  # a collection's form whose button creates, first
    return (found[0][1], found[0][2], found[0][3]) if found else None


def _listing(path: str, after: str, live: set[str]) -> str | None:
    """Where the journey sees its created item: the page the form led to, unless that is a
    record's own page (``/books/3``: the id exploration's item happened to get; the test's
    item gets another), then the collection above it when the map shows it live; None: only
    the page the form leads to, right after submitting, shows the item."""
    listed = clean_route(after) if after and "?" not in after else None
    if listed != after or not listed or params(listed):
        return path
    record = _RECORD.search(listed)
    if record is None:
        return listed
    parent = listed[: record.start()] or "/"
    return parent if parent in live else None


def _edit_steps(forms: list[Form], trial: dict, listing: str, control: tuple) -> list[str]:
    texts = {
        f.get("label")
        for f in trial.get("filled") or []
        if isinstance(f, dict) and f.get("type") == "text"
    }
    for form in forms:
        if form.path in (trial["path"], listing) or not EDIT.match(form.submit):
            continue
        shared = [
            label for label, kind in form.fields if kind in ("text", "textarea") and label in texts
        ]
        if shared:
            role, name = control
            steps = [f"Open {listing}", f"Click the {role} {_q(name)} of the created item"]
            steps += [f"Fill {_q(label)} with an edited unique text" for label in shared]
            steps += [f"Click the button {_q(form.submit)}", f"Open {listing}"]
            return [*steps, "Expect the edited text to be visible"]
    return []


def _delete_steps(
    forms: list[Form], listing: str, page: dict | None, edit: tuple | None
) -> list[str]:
    """Deleting the created item: its own delete control in the listing, else the delete
    form of the page its edit control opens ([] when the map shows neither)."""
    for role, name in _controls(page):
        if DELETE.match(name):
            return [f"Click the {role} {_q(name)} of the created item, accepting its confirmation"]
    deletes = [f for f in forms if DELETE.match(f.submit) and f.path != listing]
    edits = {f.path for f in forms if EDIT.match(f.submit)}
    form = next((f for f in deletes if f.path in edits), None)
    if edit and form:
        role, name = edit
        return [
            f"Click the {role} {_q(name)} of the created item",
            f"Click the button {_q(form.submit)}, accepting its confirmation",
        ]
    return []


def _search_steps(forms: list[Form], trial: dict) -> list[str]:
    """Finding the created item with the app's search form, then opening it when the
    trial showed it as a link ([] without a search form)."""
    for form in forms:
        texts = [label for label, kind in form.fields if kind in ("text", "search")]
        searches = SEARCH.search(form.submit) or any(kind == "search" for _, kind in form.fields)
        if len(form.fields) == len(texts) == 1 and searches:
            steps = [f"Open {form.path}", f"Fill {_q(texts[0])} with a unique text"]
            steps += [
                f"Click the button {_q(form.submit)}",
                "Expect the created text to be visible",
            ]
            appeared = trial.get("appeared") if isinstance(trial.get("appeared"), list) else []
            link = {"role": "link", "text": f"AMTP {PLACEHOLDER}"}
            if link in appeared:  # the item is shown as a link to its own page
                steps += [
                    "Click the link of the created item",
                    "Expect the created text to be visible",
                ]
            return steps
    return []


def _chain(steps: list[str]) -> list[str]:
    """``steps`` without an ``Open`` of the page already open (only checks since)."""
    out: list[str] = []
    for step in steps:
        opened = next((s for s in reversed(out) if not s.startswith("Expect ")), None)
        if not (step.startswith("Open ") and step == opened):
            out.append(step)
    return out


def own_account_steps(app_map: object) -> list[str]:
    """Signing up and in as a user of the test's own ([] when the map shows no way)."""
    if not isinstance(app_map, dict):
        return []
    forms = [form for page in _live_pages(app_map) for form in _forms(page)]
    return account_steps(forms + _signup_forms(app_map))


def journey_candidates(app_map: object, running: str) -> list[Candidate]:
    """The app's journeys: the data journey (account steps first when the app has them),
    else the account journey alone. Ranked first: ``critical``, area ``journey``."""
    if not isinstance(app_map, dict):
        return []
    pages = _live_pages(app_map)
    forms = [form for page in pages for form in _forms(page)]
    account = account_steps(forms + _signup_forms(app_map))
    main = _main_trial(app_map)
    pre = [running, RUN_NOTE]
    leaving = sign_out_journey(app_map, forms + _signup_forms(app_map), running)
    extra = [leaving] if leaving else []
    if main is None:
        if not account or leaving:
            return extra
        title = "Journey: sign up, log in and see the user signed in"
        expected = f"the new user is signed in; {NO_ERRORS}"
        return [Candidate("journey_account", title, account, expected, "critical", "journey", pre)]
    trial, create, listing = main
    page = next((p for p in pages if p["path"] == listing), None) if listing else None
    edit = next(((r, n) for r, n in _controls(page) if not DELETE.match(n)), None)
    removal = _delete_steps(forms, listing, page, edit)
    parts = [  # (what the title says, its steps, what the user then sees)
        ("sign up, log in", account, "the new user is signed in"),
        ("create", create, ""),
        (
            ("see it listed", [f"Open {listing}", "Expect the created text to be visible"])
            if listing
            else ("see it", ["Expect the created text to be visible"])
        )
        + (
            f"the created text is listed at {listing}"
            if listing
            else "the page the form leads to shows the created text",
        ),
        ("search it", _search_steps(forms, trial), "a search finds it"),
        (
            "edit",
            _edit_steps(forms, trial, listing, edit) if edit and listing else [],
            "the edit is listed",
        ),
    ]
    if removal and listing:
        gone = [
            f"Open {listing}",
            *removal,
            f"Open {listing}",
            "Expect the created text to be gone",
        ]
        parts.append(("delete", gone, "the deleted item is gone from the list"))
        parts.append(("", [f"Clean up: Open {listing}", *(f"Clean up: {s}" for s in removal)], ""))
        pre.append(CLEAN_NOTE)
    parts = [part for part in parts if part[1]]
    steps = _chain([step for _, part, _ in parts for step in part])
    title = f"Journey {listing or trial['path']}: " + ", ".join(w for w, _, _ in parts if w)
    if any(s == "Click the link of the created item" for s in steps):
        title = title.replace("search it", "search it, open it")
    key = f"journey_{slug(trial['path']) or 'home'}_{slug(trial['submit'], 24) or 'submit'}"
    expected = "; ".join([*(e for _, _, e in parts if e), NO_ERRORS])
    return [Candidate(key, title, steps, expected, "critical", "journey", pre), *extra]


def journey_trial(app_map: object) -> str | None:
    """The path and button of the trial the data journey starts from (its single-step flow
    is then left out), as ``flows`` keys it."""
    if not isinstance(app_map, dict) or (main := _main_trial(app_map)) is None:
        return None
    return f"{main[0]['path']}\n{main[0]['submit']}"
