"""Flows: user journeys through the forms the app map's trials submitted.

ExploreApp submitted a few forms once with test data (``trials`` of the app map): filled by
label, sent by the button's role and name, and recorded what appeared after. A trial that
showed an outcome the user sees (a status message, a new heading, the submitted text listed)
and no error becomes a flow case: open the page, fill the same fields by the same labels with
values unique to each run and retry, click the same button, expect the same outcome. The app
map is model-facing data from a hostile app: every path goes through ``clean_route``, every
label and outcome is bounded to one printable line and reaches a test only JSON-quoted.

Priority: ``critical`` for the app's main create form (the first whose button creates, adds,
saves or posts something and whose submitted text is then shown: the created item appears),
``high`` for the rest. Ids come from the page and the button (``tc_flow_contact_send_message``).
"""

from __future__ import annotations

import json
import re

from .candidates import NO_ERRORS, Candidate
from .common import ACCOUNT, area_of, clean_route, one_line, params, slug
from .journey_code import CLEAN_PREFIX

PLACEHOLDER = "{tag}"
MAX_FLOWS = 10
DATA_NOTE = (
    "The app accepts test data: the flow submits its form with values unique to each run and"
    " retry (AMTP <tag>, amtp.<tag>@example.com)"
)
TRIED_NOTE = "Tried when the app was explored: after {} it showed what this flow expects"
RESTORE_NOTE = (
    "The flow puts back the values it changed, at its end or after a failure (best effort)"
)
# What a form that failed says: such a trial shows no outcome worth expecting.
_ERROR = re.compile(
    r"\b(error|invalid|required|wrong|fail(ed|s)?|must|not allowed|try again|incorrect|"
    r"missing|unable|cannot|can't|denied|forbidden|problem|please (enter|fill))\b",
    re.I,
)
CREATES = re.compile(r"^\s*(add|create|new|save|post|publish|submit|send)\b", re.I)
# Outcome roles, most telling first; a text with digits (a count, a date, an id) changes
# from run to run unless it is the run's own data.
_RANK = ("status", "alert", "heading", "paragraph", "text", "listitem", "cell", "link")
FILL = {
    "text": "a unique text",
    "search": "a unique text",
    "email": "a unique email",
    "url": "a unique URL",
    "number": "the number 1",
    "tel": "the phone number 5550100",
}


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _label(text: object) -> str | None:
    value = one_line(text, 120) if isinstance(text, str) else ""
    return value if any(c.isalnum() for c in value) else None


def _outcome(text: object) -> str | None:
    """An outcome text fit to expect: one line, real words, no template-looking characters
    besides the placeholder, nothing that changes from run to run."""
    if not isinstance(text, str) or len(text) > 200:
        return None
    value = one_line(text, 200)
    rest = value.replace(PLACEHOLDER, "")
    if any(c in rest for c in "{}<>`$\\") or not re.search(r"[A-Za-z]{2}", rest):
        return None
    if re.search(r"\d", rest) or value.strip() == PLACEHOLDER:
        return None
    return value


def trial_steps(trial: dict, path: str, submit: str) -> list[str] | None:
    """The flow's steps: the fields as the trial filled them (one inside a label that names
    no field is found through that label), then the button; a field that held a value (an
    edit form) is remembered first and put back in clean-up steps."""
    steps = [f"Open {path}"]
    back: list[str] = []
    filled = trial.get("filled") if isinstance(trial.get("filled"), list) else []
    for item in filled[:40]:
        item = item if isinstance(item, dict) else {}
        label, kind = _label(item.get("label")), item.get("type")
        if label is None:
            return None
        within = item.get("within_label") is True
        if (within or item.get("edits") is True) and kind not in FILL:
            return None  # only text fields are found inside labels and put back
        field = f"the field in the label {_q(label)}" if within else _q(label)
        if item.get("edits") is True:
            steps.append(f"Remember the value of {field}")
            back.append(f"Fill {field} with the value it had")
        if kind in FILL:
            steps.append(f"Fill {field} with {FILL[kind]}")
        elif kind == "check":
            steps.append(f"Check {_q(label)}")
        elif kind == "select" and (option := _label(item.get("option"))):
            steps.append(f"Select {_q(option)} in {_q(label)}")
        else:
            return None
    click = f"Click the button {_q(submit)}"
    if back:
        back = [f"Open {path}", *back, click]
    return [*steps, click, *(f"{CLEAN_PREFIX}{step}" for step in back)]


def trial_outcome(trial: dict) -> tuple[list[str], str | None] | None:
    """The outcome checks of a trial and the label whose text it showed (None: no outcome)."""
    appeared = trial.get("appeared") if isinstance(trial.get("appeared"), list) else []
    items = [a for a in appeared[:10] if isinstance(a, dict) and a.get("role") in _RANK]
    if any(_ERROR.search(str(a.get("text"))) for a in items if a["role"] in ("status", "alert")):
        return None  # the form said it failed
    texts = [(_RANK.index(a["role"]), _outcome(a.get("text"))) for a in items]
    texts = sorted((rank, t) for rank, t in texts if t and not _ERROR.search(t))
    checks = [f"the text {_q(texts[0][1])} is visible"] if texts else []
    shown = None
    if trial.get("shows_value") is True:
        filled = trial.get("filled") if isinstance(trial.get("filled"), list) else []
        shown = next(
            (
                _label(f.get("label"))
                for f in filled
                if isinstance(f, dict) and f.get("type") in ("text", "search")
            ),
            None,
        )
        if shown:
            checks.insert(0, f"the submitted {_q(shown)} is visible")
    return (checks, shown) if checks else None


def refusal_text(trial: dict) -> str | None:
    """The message a form answered when it refused the trial's values (``refused``), when the
    page showed it as an element of its own (the browser's own validation shows none): a
    test fills the same kinds of values and expects that text, whole."""
    said = trial.get("refused")
    appeared = trial.get("appeared") if isinstance(trial.get("appeared"), list) else []
    if not isinstance(said, str) or not said.strip() or len(said) > 120:
        return None
    said = " ".join(said.split())
    shown = any(
        isinstance(a, dict) and a.get("role") in _RANK and a.get("text") == said
        for a in appeared[:10]
    )
    rest = said.replace(PLACEHOLDER, "")
    if not shown or any(c in rest for c in "{}<>`$\\") or not re.search(r"[A-Za-z]{2}", rest):
        return None
    return said


def _renames_account(app_map: dict, trial: dict) -> bool:
    """Whether the trial filled a field that held the signed-in account's own name (a
    profile form: ``- textbox "Username": {account}``): sent in the session the tests share,
    it would rename their account under every other test."""
    pages = app_map.get("pages") if isinstance(app_map.get("pages"), list) else []
    page = next((p for p in pages if isinstance(p, dict) and p.get("path") == trial["path"]), {})
    snapshot = page.get("snapshot") if isinstance(page.get("snapshot"), str) else ""
    filled = trial.get("filled") if isinstance(trial.get("filled"), list) else []
    return any(
        f"- textbox {json.dumps(f.get('label'))}: {ACCOUNT}" in snapshot
        for f in filled[:40]
        if isinstance(f, dict) and isinstance(f.get("label"), str)
    )


def flow_candidates(
    app_map: object, running: str, skip: str | None = None, account: list[str] | None = None
) -> list[Candidate]:
    """Flow cases from the app map's trials (at most MAX_FLOWS), the main create form first;
    ``skip`` ("path\nbutton") is a trial a journey already starts from. A trial that renamed
    the signed-in account runs as a user of its own (``account``: the steps that sign one
    up and in), or not at all."""
    trials = app_map.get("trials") if isinstance(app_map, dict) else None
    out: list[Candidate] = []
    for trial in trials if isinstance(trials, list) else []:
        if (
            not isinstance(trial, dict)
            or trial.get("error")
            or not isinstance(trial.get("path"), str)
        ):
            continue
        status = trial.get("status")
        path = clean_route(trial["path"])
        path = path if path == trial["path"] else None  # "//host" and the like lead elsewhere
        submit = _label(trial.get("submit"))
        if not path or params(path) or not submit or (isinstance(status, int) and status >= 400):
            continue
        steps, outcome = trial_steps(trial, path, submit), trial_outcome(trial)
        if steps is not None and _renames_account(app_map, trial):
            steps = [*account, *steps] if account else None
        refused = refusal_text(trial)
        if steps is not None and refused is not None:
            out.append(_refused_case(path, submit, steps, refused, running))
            continue
        if steps is None or outcome is None or f"{path}\n{submit}" == skip:
            continue
        checks, shown = outcome
        creates = bool(shown and CREATES.match(submit))
        key = f"flow_{slug(path) or 'home'}_{slug(submit, 24) or 'submit'}"
        title = f"Flow {path}: fill the form and click {_q(submit)}; the user sees the outcome"
        pre = [running, DATA_NOTE, TRIED_NOTE.format(f"clicking {_q(submit)}")]
        if any(step.startswith(CLEAN_PREFIX) for step in steps):
            pre.append(RESTORE_NOTE)
        expected = "; ".join([*checks, NO_ERRORS])
        prio = "critical" if creates else "high"
        out.append(Candidate(key, title, steps, expected, prio, "flow_" + area_of(path), pre))
    first = next((c for c in out if c.priority == "critical"), None)
    for cand in out:
        cand.priority = "critical" if cand is first else "high"
    return out[:MAX_FLOWS]


REFUSED_NOTE = "Tried when the app was explored: the form refused these kinds of values so"


def _refused_case(path: str, submit: str, steps: list[str], said: str, running: str) -> Candidate:
    """A form that refused the trial's values: the same kinds of values, the same button, and
    the message it answered, matched whole."""
    key = f"flow_{slug(path) or 'home'}_{slug(submit, 24) or 'submit'}_refused"
    title = f"Flow {path}: fill the form and click {_q(submit)}; it answers {_q(said)}"
    expected = f"the exact text {_q(said)} is visible; {NO_ERRORS}"
    pre = [running, DATA_NOTE, REFUSED_NOTE]
    return Candidate(key, title, steps, expected, "high", "flow_" + area_of(path), pre)
