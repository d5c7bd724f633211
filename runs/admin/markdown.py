"""Markdown → safe HTML for pull-request bodies shown in the admin.

A body holds model-written titles and reasons and whatever a repository's content put there:
hostile input. markdown-it-py (CommonMark, https://markdown-it-py.readthedocs.io/) parses it;
raw HTML is never passed through: every HTML token is escaped except the exact folding tags
AMTP's own bodies use (``<details>``, ``<summary>``, with no attribute), and markdown-it's
``validateLink`` already refuses ``javascript:``, ``vbscript:``, ``file:`` and ``data:`` links.
"""

from __future__ import annotations

import html
import re

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

MAX_CHARS = 65_536  # GitHub's own limit on a pull request body
KEPT_TAGS = {"<details>", "</details>", "<summary>", "</summary>"}
_TAG = re.compile(r"<[^<>]*>")


def _escaped_html(_renderer, tokens, idx, _options, _env) -> str:
    """An HTML token's text escaped, but for the exact folding tags (no attributes)."""
    text = tokens[idx].content
    out, last = [], 0
    for match in _TAG.finditer(text):
        out.append(html.escape(text[last : match.start()]))
        tag = match.group(0)
        out.append(tag if tag.lower() in KEPT_TAGS else html.escape(tag))
        last = match.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def _links_leave(renderer, tokens, idx, options, env) -> str:
    # A link in a body opens elsewhere and tells the target nothing of the admin.
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    tokens[idx].attrSet("target", "_blank")
    return renderer.renderToken(tokens, idx, options, env)


_md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_md.add_render_rule("html_block", _escaped_html)
_md.add_render_rule("html_inline", _escaped_html)
_md.add_render_rule("link_open", _links_leave)
# An image would be fetched by the operator's browser from wherever the body says: its alt text.
_md.add_render_rule("image", lambda _r, tokens, idx, *_: html.escape(tokens[idx].content))


def render(text: str) -> SafeString:
    """``text`` (Markdown) as HTML safe to put in a page; cut to ``MAX_CHARS`` first."""
    return mark_safe(_md.render(text[:MAX_CHARS]))  # noqa: S308 (every HTML token escaped above)
