"""The offline provider's healing rules: honest ones only, each labelled with what it changed.

One rule so far, the commonest wrong premise of rule-generated tests: a route the crawl took for
a JSON API answers an HTML page (a Flask view rendering a template in a module that also
jsonifies). When the test failed parsing JSON and the response it got was ``text/html``, the
test becomes a page test: the page answers 2xx, renders a visible body and throws no uncaught
page errors. Anything else (a 5xx, a 404, a missing heading) is a finding about the app, not
about the test: it is left unchanged and AMTP quarantines it with its reason.
"""

from __future__ import annotations

import json
import re

from agents import spec_blocks

_NOT_JSON = re.compile(r"is not valid JSON|Unexpected token|Unexpected end of JSON", re.I)
_GET = re.compile(r"""\brequest\.get\(\s*("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')\s*\)""")
_REQUEST = re.compile(r"\brequest\.\w+\(")
HTML_AS_PAGE = (
    "GET {url} answers HTML ({content_type}), not JSON: tested as a page (2xx, visible body, "
    "no uncaught page errors) instead of as a JSON API. Offline healing rule, no LLM."
)


def heal_files(payload: dict) -> dict:
    """The heal output (``verification/heal_output``) for a heal input."""
    files, changes = [], []
    for entry in payload["files"]:
        source = entry["contents"]
        for failure in entry["failures"]:
            block = spec_blocks.find(source, title=failure["title"])
            healed = _html_as_page(block, failure) if block is not None else None
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
    if len(gets) != 1 or len(_REQUEST.findall(block.text)) != 1:
        return None  # more than one request: the rule cannot tell which one to change
    url = gets[0]
    lines = block.text.splitlines()
    indent = re.match(r"\s*", lines[1]).group(0) if len(lines) > 1 else "  "
    outer = indent[:-2] if len(indent) >= 2 else ""
    comments = [line for line in lines[1:] if line.strip().startswith("//")]
    shown = json.loads(url) if url.startswith('"') else url[1:-1]
    change = HTML_AS_PAGE.format(url=shown, content_type=snapshot["content_type"].split(";")[0])
    body = [
        f"test({json.dumps(block.title, ensure_ascii=True)}, async ({{ page }}) => {{",
        *comments,
        f"{indent}// AMTP heal: {change}",
        f"{indent}const errors: string[] = [];",
        f"{indent}page.on('pageerror', (error) => errors.push(error.message));",
        f"{indent}const navigation = await page.goto({url});",
        f"{indent}expect(navigation?.ok()).toBeTruthy();",
        f"{indent}await expect(page.locator('body')).toBeVisible();",
        f"{indent}expect(errors, 'uncaught page errors').toEqual([]);",
        f"{outer}}});",
    ]
    return "\n".join(body), change
