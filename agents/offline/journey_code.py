"""Playwright lines for the steps a flow or journey takes on a page (the grammar of
``cases.py``): filling and sending forms, clicking a control of the created item, checking
what the user sees, and the clean-up a journey runs in ``finally``.

Values a test types are built from its ``tag``: a run token (the ``AMTP_RUN_TOKEN`` variable,
else the time and a random part, fixed when the spec file loads), the test's id, the parallel
worker's index and the retry, so two runs, two workers or two retries never type the same
name. Every label reaches TypeScript only as an ASCII-only JSON string literal.
"""

from __future__ import annotations

import json
import re

from .common import EMAIL_DOMAIN

_Q = r'("(?:[^"\\]|\\.)*")'


def _step(sentence: str) -> re.Pattern[str]:
    """A step of the grammar: the whole of it is the sentence, bar spaces around."""
    return re.compile(rf"^\s*{sentence}\s*$")


# The values a step types, as TypeScript expressions over the test's `tag`.
VALUES = {
    "a unique text": "'AMTP ' + tag",
    "a unique email": f"'amtp.' + tag + '@{EMAIL_DOMAIN}'",
    "a unique URL": f"'https://{EMAIL_DOMAIN}/' + tag",
    "a unique username": "'amtp_' + tag",
    "a unique password": "'Pw-' + tag + '-9x!'",
    "a wrong password": "'Wrong-' + tag + '-1x!'",
    "an edited unique text": "'AMTP ' + tag + ' edited'",
    "a discarded text": "'AMTP ' + tag + ' dropped'",
    "a re-edited unique text": "'AMTP ' + tag + ' edited again'",
    "the number 1": "'1'",
    "the phone number 5550100": "'5550100'",
}
CREATED, EDITED = VALUES["a unique text"], VALUES["an edited unique text"]
# The second item (holds no CREATED: each is found by its own text), its edited text, and that
# text as typed with spaces around it.
SECOND = "'AMTP2 ' + tag"
SECOND_TYPED = "'  AMTP2 ' + tag"
SECOND_ONLY = "new RegExp('^AMTP2 ' + tag + '$')"  # tag: letters and digits
SECOND_EDITED = "'AMTP2 ' + tag + ' edited'"
SECOND_PADDED = "'  AMTP2 ' + tag + ' edited  '"
SECOND_EXACT = "new RegExp('^AMTP2 ' + tag + ' edited$')"  # tag: letters and digits
DROPPED = VALUES["a discarded text"]
REEDITED = VALUES["a re-edited unique text"]
RUN_TOKEN = (
    "const RUN = process.env.AMTP_RUN_TOKEN"
    " ?? Date.now().toString(36) + Math.random().toString(36).slice(2, 6);"
)
TAG = (
    "    const tag = `${RUN}${test.info().testId.slice(-4)}"
    "p${test.info().parallelIndex}r${test.info().retry}`;"
)
_FILL = _step(rf"Fill {_Q} with ({'|'.join(map(re.escape, VALUES))})")
# A field inside a <label> that names no field, and an edit form's value kept to put back.
_FILL_IN = _step(rf"Fill the field in the label {_Q} with ({'|'.join(map(re.escape, VALUES))})")
_FIELD = rf"(?:the field in the label {_Q}|{_Q})"
_REMEMBER = _step(rf"Remember the value of {_FIELD}")
_FILL_WAS = _step(rf"Fill {_FIELD} with the value it had")
WAS = "was"  # the test's record of the values an edit form held
_SELECT = _step(rf"Select {_Q} in {_Q}")
_CHECK = _step(rf"Check {_Q}")
_CLICK = _step(rf"Click the button {_Q}(, accepting its confirmation)?")
_ITEM = _step(
    rf"Click the (link|button)(?: {_Q})? of the created item(, accepting its confirmation)?"
)
# Acting outside forms (interaction trials: agents/offline/interaction_journeys.py).
_TYPE = _step(rf"Type a unique text into the (textbox|searchbox|combobox) {_Q} and press Enter")
_ITEM_CHECK = _step(rf"Check the checkbox(?: {_Q})? of the created item")
_ITEM_UNCHECK = _step(rf"Uncheck the checkbox(?: {_Q})? of the created item")
_LINK = _step(rf"Click the link {_Q}")
# Signed out: the control that signs in again ("Log In": the log-in form's button) is shown.
_SIGNED_OFF = _step(rf"Expect the user to be signed out, offered {_Q}")
_EMPTY = _step(rf"Expect the (textbox|searchbox|combobox) {_Q} to be empty")
_COUNTED = _step(rf"Expect a count reading {_Q} to be visible")
_COUNT = re.compile(r"(\d{1,6}) ([A-Za-z][A-Za-z ]{0,40})")
_BUTTON = _step(rf"Expect the button {_Q} to be (visible|gone)")
GO_BACK = "Go back"
RELOAD = "Reload the page"
_CLASSED = _step(rf"Expect the link {_Q} to have the class {_Q}")
_CLASS = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")  # safe inside a regex literal
_ADDRESS = _step(rf"Expect the address to end with {_Q}")
_SUFFIX = re.compile(r"^[#?][\w\-/#!?=&.%~]{0,120}$")
# "and leave it": the field loses the focus (blur), which saves in most list apps.
# "see its text hidden": the item's text hides while its edit field is open.
_EDIT = _step(
    r"Double-click the created item(, see its text hidden)?, type"
    r" (an edited unique text|a discarded text|a re-edited unique text)"
    rf"(?: into the textbox {_Q})? and (?:press (Enter|Escape)|leave it)"
)
_EDITS = {
    "an edited unique text": EDITED,
    "a discarded text": DROPPED,
    "a re-edited unique text": REEDITED,
}
POINT = "Point at the created item"
_TYPE_SECOND = _step(
    r"Type a second unique text, spaces before it, into the (textbox|searchbox|combobox)"
    rf" {_Q} and press Enter"
)
_ORDER = _step(r"Expect the second text to be shown (after|before) the created text")
EDIT_SECOND = (
    "Double-click the second item, type its edited text with spaces around it and press Enter"
)
EMPTY_SECOND = "Double-click the second item, empty its text and press Enter"
_SECOND_EDITED = _step(r"Expect the second item's edited text to be shown( trimmed)?")
SECOND_TRIMMED = "Expect the second text to be shown trimmed"
_LABEL = _step(rf"Click the label {_Q}")
_LABELLED = _step(rf"Expect the checkbox labelled {_Q} to be checked")
FOCUSED = "input:focus, textarea:focus, [contenteditable]:focus"
EXPECTS = {
    "Expect the created text to be visible": "created",
    "Expect the edited text to be visible": "edited",
    "Expect the re-edited text to be visible": "reedited",
    "Expect the created text to be gone": "gone",
    "Expect the created text to be hidden": "hidden",
    "Expect the discarded text to be gone": "dropped",
    "Expect the checkbox of the created item to be checked": "checked",
    "Expect the checkbox of the created item to be unchecked": "unchecked",
    "Expect the user to be signed in": "signed_in",
    "Expect the second text to be gone": "second_gone",
}
OPEN_ITEM = "Click the link of the created item"
# Before opening a page that logs out: the test's own context only, so the session the
# rest of the suite shares (its stored state, a server-side session) stays valid.
SIGN_OUT = "Clear the browser's cookies"
_SIGNED_OUT = "/log ?out|sign ?out/i"
_SIGNED_IN = "/log ?in|sign ?in/i"
CLEAN_PREFIX = "Clean up: "
CLEAN_TIMEOUT_MS = 5000


def _ts(text: object) -> str:
    return json.dumps(str(text), ensure_ascii=True)


def _quoted(text: str) -> str | None:
    try:
        value = json.loads(text, strict=False)
    except ValueError:  # a malformed quote is no label, not a crash
        return None
    if not isinstance(value, str) or len(value) > 120 or not value.strip():
        return None
    return " ".join("".join(c if c.isprintable() else " " for c in value).split()) or None


def form_action(step: str) -> tuple[str, str, str | None, str] | None:
    """A step on the page: (kind, label or role, TS value or name, step); None otherwise."""
    if m := _FILL.match(step):
        label = _quoted(m.group(1))
        return ("fill", label, VALUES[m.group(2)], step) if label else None
    if m := _FILL_IN.match(step):
        label = _quoted(m.group(1))
        return ("fill_in", label, VALUES[m.group(2)], step) if label else None
    for kind, pattern in (("remember", _REMEMBER), ("fill_was", _FILL_WAS)):
        if m := pattern.match(step):
            within, label = m.group(1) is not None, _quoted(m.group(1) or m.group(2))
            return (kind, label, "in" if within else "", step) if label else None
    if m := _SELECT.match(step):
        option, label = _quoted(m.group(1)), _quoted(m.group(2))
        return ("select", label, _ts(option), step) if option and label else None
    if (m := _CHECK.match(step)) and (label := _quoted(m.group(1))):
        return ("check", label, None, step)
    if (m := _CLICK.match(step)) and (label := _quoted(m.group(1))):
        return ("confirm" if m.group(2) else "click", label, None, step)
    if step.strip() == OPEN_ITEM:  # its link, by its text (before an unnamed item control)
        return ("open_item", "link", None, step)
    if (m := _ITEM.match(step)) and (name := _quoted(m.group(2)) if m.group(2) else ""):
        return ("item_confirm" if m.group(3) else "item", m.group(1), name, step)
    if (m := _ITEM.match(step)) and m.group(2) is None:  # an unnamed control of the item
        return ("item_confirm" if m.group(3) else "item", m.group(1), "", step)
    if acted := _interaction(step):
        return acted
    if step.strip() == SIGN_OUT:
        return ("sign_out", "", None, step)
    if (m := _SIGNED_OFF.match(step)) and (name := _quoted(m.group(1))):
        return ("signed_out", "", name, step)
    if (expect := EXPECTS.get(step.strip())) is not None:
        return ("expect", expect, None, step)
    return None


def _interaction(step: str) -> tuple[str, str, str | None, str] | None:
    """A step acting outside forms: (kind, role or label, name or value, step), else None."""
    if (m := _TYPE.match(step)) and (name := _quoted(m.group(2))):
        return ("type_enter", m.group(1), name, step)
    if m := _ITEM_CHECK.match(step):
        name = _quoted(m.group(1)) if m.group(1) else ""
        return ("item_check", "checkbox", name, step) if name is not None else None
    if m := _ITEM_UNCHECK.match(step):
        name = _quoted(m.group(1)) if m.group(1) else ""
        return ("item_uncheck", "checkbox", name, step) if name is not None else None
    if step.strip() == GO_BACK:
        return ("back", "", None, step)
    if step.strip() == RELOAD:
        return ("reload", "", None, step)
    if (m := _EMPTY.match(step)) and (name := _quoted(m.group(2))):
        return ("empty", m.group(1), name, step)
    if (m := _COUNTED.match(step)) and (text := _quoted(m.group(1))) and _COUNT.fullmatch(text):
        return ("count", text, None, step)
    if (m := _BUTTON.match(step)) and (name := _quoted(m.group(1))):
        return ("button_" + m.group(2), "button", name, step)
    if (m := _LINK.match(step)) and (name := _quoted(m.group(1))):
        return ("link", "link", name, step)
    if (m := _CLASSED.match(step)) and (name := _quoted(m.group(1))):
        cls = _quoted(m.group(2))
        return ("link_class", cls, name, step) if cls and _CLASS.match(cls) else None
    if (m := _ADDRESS.match(step)) and (end := _quoted(m.group(1))) and _SUFFIX.match(end):
        return ("address", end, None, step)
    if (m := _EDIT.match(step)) and (field := _quoted(m.group(3)) if m.group(3) else ""):
        kind = "edit_hides" if m.group(1) else "edit_key"
        return (kind, f"{m.group(4) or ''}\n{field}", _EDITS.get(m.group(2), EDITED), step)
    if (m := _EDIT.match(step)) and m.group(3) is None:
        kind = "edit_hides" if m.group(1) else "edit_key"
        return (kind, m.group(4) or "", _EDITS.get(m.group(2), EDITED), step)

    if step.strip() == POINT:
        return ("point", "", None, step)
    return _second_item(step)


def _second_item(step: str) -> tuple[str, str, str | None, str] | None:
    """A step on the second item or the page-level checkbox, else None."""
    if (m := _TYPE_SECOND.match(step)) and (name := _quoted(m.group(2))):
        return ("type_second", m.group(1), name, step)
    if m := _ORDER.match(step):
        return ("order", m.group(1), None, step)
    if step.strip() in (EDIT_SECOND, EMPTY_SECOND):
        return ("edit_second" if step.strip() == EDIT_SECOND else "empty_second", "", None, step)
    if step.strip() == SECOND_TRIMMED:
        return ("second_trimmed", "", None, step)
    if m := _SECOND_EDITED.match(step):
        return ("second_edited", "trimmed" if m.group(1) else "", None, step)
    if (m := _LABEL.match(step)) and (name := _quoted(m.group(1))):
        return ("label", name, None, step)
    if (m := _LABELLED.match(step)) and (name := _quoted(m.group(1))):
        return ("labelled_checked", name, None, step)
    return None


def _control(role: str, name: str) -> str:
    """A control by role and exact name; by role alone when it has no name (a "×" drawn by CSS
    has one, a bare checkbox has none)."""
    named = f", {{ name: {_ts(name)}, exact: true }}" if name else ""
    return f"page.getByRole({_ts(role)}{named})"


def _holder(role: str, name: str = "") -> str:
    """The created item: the innermost element holding both its text and a control of that
    role and name (an outer one holds other items' controls too)."""
    control = _control(role, name)
    return f"page.locator('body *').filter({{ hasText: {CREATED} }}).filter({{ has: {control} }}).last()"


def _item(role: str, name: str) -> str:
    """The created item's own control."""
    return f"{_holder(role, name)}{_control(role, name)[4:]}.first()"


# The steps acting outside forms in one statement, from the step's role (its label) and the
# name it gives: on the created item's checkbox, the field, or the link or button it names.
_STATEMENTS = {
    "item_check": lambda role, name: f"await {_item('checkbox', name)}.check();",
    "item_uncheck": lambda role, name: f"await {_item('checkbox', name)}.uncheck();",
    "link": lambda role, name: f"await {_control('link', name)}.first().click();",
    "back": lambda role, name: "await page.goBack();",
    "reload": lambda role, name: "await page.reload();",
    "empty": lambda role, name: f"await expect({_control(role, name)}).toHaveValue('');",
    "button_visible": lambda role, name: f"await expect({_control('button', name)}).toBeVisible();",
    "button_gone": lambda role, name: f"await expect({_control('button', name)}).toHaveCount(0);",
}


def interaction_lines(
    kind: str, label: str, value: str | None, options: str = ""
) -> list[str] | None:
    """The statements of a step acting outside forms; None for another kind."""
    if kind == "type_enter":
        field = _control(label, value or "")
        return [f"await {field}.fill({CREATED});", f"await {field}.press('Enter');"]
    if statement := _STATEMENTS.get(kind):
        return [statement(label, value or "")]
    if kind == "count":  # the number free: another test's items may count too
        words = _COUNT.fullmatch(label).group(2)  # letters and spaces only: a safe literal
        return [f"await expect(page.getByText(/^\\d+ {words}$/).first()).toBeVisible();"]
    if kind == "link_class":  # label: a class name (letters, digits, - and _ only)
        link = f"{_control('link', value or '')}.first()"
        return [f"await expect({link}).toHaveClass(/(^|\\s){label}(\\s|$)/);"]
    if kind == "address":
        return [f"await expect.poll(() => page.url().endsWith({_ts(label)})).toBe(true);"]
    if kind in ("edit_key", "edit_hides"):  # label: the key ("" leaves the field), then the
        # opened field's name when it has one
        key, _, name = label.partition("\n")
        # The field the double-click focused (fill waits for it: an app may focus it after
        # its next render; not "*:focus", which a shadow root's host matches too), else the
        # named field that opened.
        field = _control("textbox", name) if name else f"page.locator({_ts(FOCUSED)}).last()"
        leave = f"await {field}.press({_ts(key)});" if key else f"await {field}.blur();"
        hidden = f"await expect(page.getByText({CREATED}).first()).toBeHidden();"
        return [
            f"await page.getByText({CREATED}).first().dblclick();",
            *[hidden] * (kind == "edit_hides"),
            f"await {field}.fill({value});",
            leave,
        ]
    if kind == "point":  # controls shown only while the pointer is over the item
        return [f"await {_holder('button')}.hover({options});"]
    return _second_lines(kind, label, value)


def _labelled(label: str) -> str:
    """The checkbox a label names: the one in the innermost element holding both the label's
    text and a checkbox (a label whose "for" names no element, wired by a script, names no
    box for getByLabel)."""
    text = f"page.getByText({_ts(label)}, {{ exact: true }})"
    holder = f"page.locator('body *').filter({{ has: {text} }}).filter({{ has: page.getByRole('checkbox') }}).last()"
    return f"{holder}.getByRole('checkbox').first()"


def _second_lines(kind: str, label: str, value: str | None) -> list[str] | None:
    """The statements of a step on the second item or the page-level checkbox, else None."""
    focused = f"page.locator({_ts(FOCUSED)}).last()"
    if kind == "type_second":
        field = _control(label, value or "")
        return [f"await {field}.fill({SECOND_TYPED});", f"await {field}.press('Enter');"]
    if kind == "second_trimmed":  # the text itself, not as whitespace-normalised
        text = f"page.getByText({SECOND}, {{ exact: true }}).first()"
        return [f"await expect({text}).toHaveText({SECOND_ONLY});"]
    if kind == "order":  # both texts, in the order the page shows them
        both = f"page.getByText({CREATED}, {{ exact: true }}).or(page.getByText({SECOND}, {{ exact: true }}))"
        shown = [CREATED, SECOND] if label == "after" else [SECOND, CREATED]
        return [f"await expect({both}).toHaveText([{', '.join(shown)}]);"]
    if kind in ("edit_second", "empty_second"):
        typed = SECOND_PADDED if kind == "edit_second" else "''"
        return [
            f"await page.getByText({SECOND}).first().dblclick();",
            f"await {focused}.fill({typed});",
            f"await {focused}.press('Enter');",
        ]
    if kind == "second_edited":  # trimmed: the text itself, not as whitespace-normalised
        text = f"page.getByText({SECOND_EDITED}, {{ exact: true }}).first()"
        check = f"toHaveText({SECOND_EXACT})" if label == "trimmed" else "toBeVisible()"
        return [f"await expect({text}).{check};"]
    if kind == "label":
        return [f"await page.getByText({_ts(label)}, {{ exact: true }}).click();"]
    if kind == "labelled_checked":
        return [f"await expect({_labelled(label)}).toBeChecked();"]
    return None


def field_in(label: str) -> str:
    """The field inside the <label> showing ``label`` (one that names no field)."""
    return f"page.locator('label').filter({{ hasText: {_ts(label)} }}).locator('input, textarea, select')"


def action_lines(kind: str, label: str, value: str | None, options: str = "") -> list[str]:
    """The TypeScript statements of one form action; ``options`` is an extra argument
    (``{ timeout: 5000 }``) for clean-up steps."""
    field = f"page.getByLabel({_ts(label)}, {{ exact: true }})"
    if kind == "fill_in":
        return [f"await {field_in(label)}.fill({value}{', ' + options if options else ''});"]
    if kind in ("remember", "fill_was"):  # value: "in" for a field inside its label
        field = field_in(label) if value == "in" else field
        key = f"{WAS}[{_ts(label)}]"
        if kind == "remember":
            return [f"{key} = await {field}.inputValue();"]
        # Nothing remembered (it failed before): nothing to put back, never an empty value.
        return [
            f"if ({key} === undefined) return;",
            f"await {field}.fill({key}{', ' + options if options else ''});",
        ]
    accept = "page.once('dialog', (dialog) => dialog.accept().catch(() => {}));"
    click = f".click({options})"
    if kind == "fill":
        return [f"await {field}.fill({value}{', ' + options if options else ''});"]
    if kind == "select":
        return [f"await {field}.selectOption({{ label: {value} }});"]
    if kind == "check":
        return [f"await {field}.check();"]
    if kind == "sign_out":
        return ["await page.context().clearCookies();"]
    if kind == "signed_out":  # no control signs out; one signs in: by that name, or any
        named = f"{{ name: {_ts(value)}, exact: true }}"
        again = (
            f"page.getByRole('link', {named}).or(page.getByRole('button', {named}))"
            f".or(page.getByRole('link', {{ name: {_SIGNED_IN} }}))"
        )
        leave = (
            f"page.getByRole('link', {{ name: {_SIGNED_OUT} }})"
            f".or(page.getByRole('button', {{ name: {_SIGNED_OUT} }}))"
        )
        return [
            f"await expect({again}.first()).toBeVisible();",
            f"await expect({leave}).toHaveCount(0);",
        ]
    if (acted := interaction_lines(kind, label, value, options)) is not None:
        return acted
    if kind in ("click", "confirm"):
        button = f"page.getByRole('button', {{ name: {_ts(label)}, exact: true }})"
        return [accept] * (kind == "confirm") + [f"await {button}{click};"]
    if kind == "open_item":
        return [f"await page.getByRole('link', {{ name: {CREATED} }}).first(){click};"]
    if kind in ("item", "item_confirm"):
        return [accept] * (kind == "item_confirm") + [f"await {_item(label, value or '')}{click};"]
    return expect_lines(label)


_GONE = "await expect({}).toHaveCount(0);"
# What an ``EXPECTS`` step checks, by its name there.
_EXPECTED = {
    "created": f"await expect(page.getByText({CREATED}).first()).toBeVisible();",
    "edited": f"await expect(page.getByText({EDITED}).first()).toBeVisible();",
    "reedited": f"await expect(page.getByText({REEDITED}).first()).toBeVisible();",
    "gone": _GONE.format(f"page.getByText({CREATED})"),
    # a filter may hide it, or take it out of the page
    "hidden": _GONE.format(f"page.getByText({CREATED}).filter({{ visible: true }})"),
    "second_gone": _GONE.format(f"page.getByText({SECOND})"),
    "dropped": _GONE.format(f"page.getByText({DROPPED})"),
    "checked": f"await expect({_item('checkbox', '')}).toBeChecked();",
    "unchecked": f"await expect({_item('checkbox', '')}).not.toBeChecked();",
    "signed_in": (
        f"await expect(page.getByRole('link', {{ name: {_SIGNED_OUT} }})"
        f".or(page.getByRole('button', {{ name: {_SIGNED_OUT} }}))"
        f".or(page.getByText({VALUES['a unique username']})).first()).toBeVisible();"
    ),
}


def expect_lines(what: str) -> list[str]:
    """The check an ``EXPECTS`` step makes (an unknown one: that the user is signed in)."""
    return [_EXPECTED.get(what, _EXPECTED["signed_in"])]


def clean_up_block(steps: list[str]) -> list[str]:
    """The ``finally`` of a journey: while the created item is still listed, take its
    clean-up steps with short timeouts; any error there is dropped, so the journey's own
    result (pass, or its first failure) is what the report shows."""
    timeout = f"{{ timeout: {CLEAN_TIMEOUT_MS} }}"
    body: list[str] = []
    # Putting an edit form's values back happens whether or not the test's text shows.
    restores = any(_FILL_WAS.match(step) for step in steps)
    for step in steps:
        if m := re.match(r"^\s*Open (/\S*)\s*$", step):
            body.append(f"await page.goto({_ts(m.group(1))}, {timeout});")
            if len(body) == 1 and not restores:  # nothing left to delete: done
                body.append(f"if ((await page.getByText({CREATED}).count()) === 0) return;")
        elif (action := form_action(step)) and action[0] != "expect":
            body += action_lines(*action[:3], options=timeout)
    lines = ["} finally {", "  // Clean up (best effort): the journey's own result stands."]
    lines += [
        "  await (async () => {",
        *("    " + line for line in body),
        "  })().catch(() => {});",
    ]
    return [*lines, "}"]


def uses_tag(actions: list[tuple], expected: str) -> bool:
    values = "".join(str(a[2]) for a in actions)
    return "tag" in values or "{tag}" in expected or any(a[0] == "expect" for a in actions)
