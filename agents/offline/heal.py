"""The offline provider's healing rules: honest ones only, each labelled with what it changed.

Two rules. A renamed button: a click on a button the page no longer shows, when it shows
exactly one button the test does not name, names that one (``_renamed_button``). And the
commonest wrong premise of rule-generated tests: a route the crawl took for
a JSON API answers an HTML page (a Flask view rendering a template in a module that also
jsonifies). When the test failed parsing JSON and the response it got was ``text/html``, the
test reaches the route as a page instead: ``page.goto`` for ``request.get`` (navigation) and
the body read from the page for the JSON parse (where it looks). Every expectation stays as
it was (the heal rule of ``agents.expectations``, checked again here); the page checks a page
test makes (a visible body, no uncaught page errors) are added. Anything else (a 5xx, a 404, a
missing heading) is a finding about the app, not about the test: it is left unchanged and
AMTP quarantines it with its reason.
"""

from __future__ import annotations

import json
import re

from agents import expectations, spec_blocks

from .common import PAGE_ERRORS_CHECK, PAGE_ERRORS_WATCH

_NOT_JSON = re.compile(r"is not valid JSON|Unexpected token|Unexpected end of JSON", re.I)
_GET = re.compile(r"""\bawait\s+request\.get\(\s*("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')\s*\)""")
_REQUEST = re.compile(r"\brequest\.\w+\(")
_FIXTURES = re.compile(r"\(\{\s*request\s*\}\)")
_JSON = re.compile(r"\bawait\s+\w+\.json\(\)")
_CLICKED = re.compile(
    r"""getByRole\(\s*(['"])button\1\s*,\s*\{\s*name:\s*(['"])([^'"\\\n]{1,100})\2\s*\}\s*\)\.click\("""
)
_BUTTON = re.compile(r"""^\s*- button "([^"\\\n]{1,100})"\s*(?:\[.*\])?\s*$""", re.M)
RENAMED_BUTTON = (
    "the button {old!r} the test clicks is gone and the page shows one button no step names, "
    "{new!r}: the click now names it; every expectation kept. Offline healing rule, no LLM."
)
HTML_AS_PAGE = (
    "GET {url} answers HTML ({content_type}), not JSON: reached as a page (page.goto) with its "
    "body read from the page instead of parsed as JSON; every expectation kept, a visible body "
    "and no uncaught page errors added. Offline healing rule, no LLM."
)


def heal_files(payload: dict) -> dict:
    """The heal output (``verification/heal_output``) for a heal input."""
    files, changes = [], []
    for entry in payload["files"]:
        source = entry["contents"]
        for failure in entry["failures"]:
            block = spec_blocks.find(source, title=failure["title"])
            healed = None
            if block is not None:
                healed = _html_as_page(block, failure) or _renamed_button(block, failure)
            if healed is None:
                continue
            text, change = healed
            data = source.encode("utf-8")
            source = (data[: block.start] + text.encode("utf-8") + data[block.end :]).decode()
            changes.append({"file": entry["path"], "title": failure["title"], "change": change})
        if source != entry["contents"]:
            files.append({"path": entry["path"], "contents": source})
    return {"run_id": payload["run_id"], "files": files, "changes": changes}


def _html_as_page(block: spec_blocks.TestBlock, failure: dict) -> tuple[str, str] | None:
    snapshot = failure["snapshot"]
    if not _NOT_JSON.search(failure["error"]):
        return None
    if snapshot["method"].upper() != "GET" or not snapshot["content_type"].startswith("text/html"):
        return None
    gets = _GET.findall(block.text)
    lines = block.text.splitlines()
    if len(gets) != 1 or len(_REQUEST.findall(block.text)) != 1 or len(lines) < 3:
        return None  # more than one request: the rule cannot tell which one to change
    if not _FIXTURES.search(lines[0]):
        return None  # the test uses fixtures besides `request`: not the shape this rule knows
    url = gets[0]
    shown = json.loads(url) if url.startswith('"') else url[1:-1]
    change = HTML_AS_PAGE.format(url=shown, content_type=snapshot["content_type"].split(";")[0])
    indent = re.match(r"\s*", lines[1]).group(0)
    comments = 1
    while comments < len(lines) - 1 and lines[comments].strip().startswith("//"):
        comments += 1
    body = [
        _GET.sub(lambda m: f"(await page.goto({m.group(1)}))!", line) for line in lines[comments:-1]
    ]
    body = [_JSON.sub("await page.locator('body').innerText()", line) for line in body]
    healed = [
        _FIXTURES.sub("({ page })", lines[0]),
        *lines[1:comments],
        f"{indent}// AMTP heal: {change}",
        *(indent + line for line in PAGE_ERRORS_WATCH),
        *body,
        f"{indent}await expect(page.locator('body')).toBeVisible();",
        indent + PAGE_ERRORS_CHECK,
        lines[-1],
    ]
    text = "\n".join(healed)
    if expectations.weakening(block.text, text):
        return None  # never: every expectation is kept; the rule's own check says so
    return text, change


def _renamed_button(block: spec_blocks.TestBlock, failure: dict) -> tuple[str, str] | None:
    """A click on a button whose name is gone from the page, when the page shows exactly one
    button the test does not name: the click names that one. Only clicks change, so an
    assertion on the old name still fails (a finding about the app, not a heal)."""
    clicked = {m.group(3) for m in _CLICKED.finditer(block.text)}
    shown = _BUTTON.findall(failure["snapshot"].get("page", ""))
    page = failure["snapshot"].get("page", "")
    gone = [name for name in clicked if f'"{name}"' not in page]
    fresh = [name for name in shown if name not in block.text]
    if not page or len(gone) != 1 or len(fresh) != 1 or len(set(shown)) != len(shown):
        return None
    old, new = gone[0], fresh[0]

    def rename(match: re.Match) -> str:
        text = match.group(0)
        return text if match.group(3) != old else text.replace(old, new)

    text = _CLICKED.sub(rename, block.text)
    if text == block.text or expectations.weakening(block.text, text):
        return None
    return text, RENAMED_BUTTON.format(old=old, new=new)
