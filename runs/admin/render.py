"""Artifact JSON and generated files as highlighted HTML, bounded for multi-megabyte artifacts.

An artifact can be several megabytes; pretty-printing all of it (``json.dumps(indent=...)``
runs the pure-Python encoder) and highlighting the result would take seconds and produce a
page no browser wants. The pretty-printer here is a generator, so the work done is
proportional to the preview that is shown, not to the artifact; the rest is one click away as
a download. Everything goes through Pygments' HTML formatter, which escapes the text, so
hostile content (a ``<script>`` in a model's output) is shown, never run.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import JavascriptLexer, JsonLexer, TextLexer, TypeScriptLexer, YamlLexer

CSS_SCOPE = ".amtp-code"
PYGMENTS_STYLE = "friendly"
PREVIEW_CHARS = 100_000  # of pretty JSON per artifact content (about 400 KB of HTML at most)
META_PREVIEW_CHARS = 20_000
MAX_STRING_CHARS = 2_000  # one JSON string longer than this is cut in the JSON preview
MAX_DEPTH = 64
FILE_PREVIEW_CHARS = 60_000  # per generated file
FILES_PREVIEW_CHARS = 200_000  # all generated files of one artifact together
MAX_SECTIONS = 100  # top-level keys (or generated files) listed one by one; the rest counted

LEXERS = {
    ".ts": TypeScriptLexer,
    ".tsx": TypeScriptLexer,
    ".js": JavascriptLexer,
    ".mjs": JavascriptLexer,
    ".yaml": YamlLexer,
    ".yml": YamlLexer,
    ".json": JsonLexer,
}
LANGUAGES = {
    TypeScriptLexer: "TypeScript",
    JavascriptLexer: "JavaScript",
    YamlLexer: "YAML",
    JsonLexer: "JSON",
    TextLexer: "text",
}

# Whitespace and punctuation tokens are uncoloured in our style; dropping their spans keeps
# the page about a third smaller. The text inside is already escaped by Pygments.
_PLAIN_SPANS = re.compile(r'<span class="(?:w|p)">([^<]*)</span>')


@dataclass(frozen=True)
class Section:
    """One top-level key of a JSON object: its size and (budget allowing) its preview."""

    key: str
    size: int  # bytes of compact JSON
    html: SafeString | None  # None: not previewed, the budget was spent on earlier keys
    truncated: bool


@dataclass(frozen=True)
class Preview:
    sections: list[Section]
    size: int
    truncated: bool
    hidden_keys: int = 0  # top-level keys past MAX_SECTIONS, not listed at all


@dataclass(frozen=True)
class CodeFile:
    path: str
    language: str
    lines: int
    size: int
    html: SafeString | None
    truncated: bool


@cache
def pygments_css() -> str:
    return HtmlFormatter(style=PYGMENTS_STYLE).get_style_defs(CSS_SCOPE)


def highlighted(text: str, lexer_class: type = JsonLexer) -> SafeString:
    html = highlight(text, lexer_class(), HtmlFormatter(nowrap=True))
    return mark_safe(_PLAIN_SPANS.sub(r"\1", html))  # Pygments escaped the text


def compact_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _pretty(value: Any, level: int) -> Iterator[str]:
    """Pretty JSON (2-space indent) in small chunks, so a consumer can stop at any point."""
    pad, inner = "  " * level, "  " * (level + 1)
    if level >= MAX_DEPTH and isinstance(value, dict | list) and value:
        yield '"… (nested deeper than the preview shows)"'
    elif isinstance(value, dict):
        if not value:
            yield "{}"
            return
        yield "{\n"
        for i, (key, item) in enumerate(value.items()):
            yield f"{inner}{json.dumps(key, ensure_ascii=False)}: "
            yield from _pretty(item, level + 1)
            yield ",\n" if i < len(value) - 1 else "\n"
        yield pad + "}"
    elif isinstance(value, list):
        if not value:
            yield "[]"
            return
        yield "[\n"
        for i, item in enumerate(value):
            yield inner
            yield from _pretty(item, level + 1)
            yield ",\n" if i < len(value) - 1 else "\n"
        yield pad + "]"
    elif isinstance(value, str) and len(value) > MAX_STRING_CHARS:
        more = len(value) - MAX_STRING_CHARS
        yield json.dumps(
            value[:MAX_STRING_CHARS] + f"… [{more:,} more characters]", ensure_ascii=False
        )
    else:
        yield json.dumps(value, ensure_ascii=False)


def pretty_json(value: Any, budget: int) -> tuple[str, bool]:
    """At most ``budget`` characters of pretty JSON, and whether it was cut."""
    parts, used = [], 0
    for chunk in _pretty(value, 0):
        if used + len(chunk) > budget:
            parts.append(chunk[: budget - used])
            return "".join(parts), True
        parts.append(chunk)
        used += len(chunk)
    return "".join(parts), False


def json_preview(value: Any, budget: int = PREVIEW_CHARS) -> Preview:
    """A collapsible section per top-level key (one section for a non-object), in order,
    until the shared budget is spent."""
    items = value.items() if isinstance(value, dict) else [("", value)]
    sections, remaining, truncated, total, hidden = [], budget, False, 0, 0
    for key, item in items:
        size = compact_size(item)
        total += size
        if len(sections) >= MAX_SECTIONS:
            hidden += 1
            truncated = True
            continue
        if remaining <= 0:
            sections.append(Section(key, size, None, True))
            truncated = True
            continue
        text, cut = pretty_json(item, remaining)
        remaining -= len(text)
        truncated = truncated or cut
        sections.append(Section(key, size, highlighted(text), cut))
    return Preview(sections, total, truncated, hidden)


def lexer_for(path: str) -> type:
    return LEXERS.get(posixpath.splitext(path)[1].lower(), TextLexer)


def code_files(content: Any) -> tuple[list[CodeFile], int]:
    """The ``files`` of a test_engineer_output as highlighted code, within a shared budget;
    and how many files there are in all."""
    files = content.get("files") if isinstance(content, dict) else None
    if not isinstance(files, list):
        return [], 0
    shown, remaining = [], FILES_PREVIEW_CHARS
    for entry in files[:MAX_SECTIONS]:
        if not isinstance(entry, dict):
            continue
        path, text = str(entry.get("path", "")), str(entry.get("contents", ""))
        lexer = lexer_for(path)
        limit = min(FILE_PREVIEW_CHARS, max(remaining, 0))
        cut = len(text) > limit
        html = highlighted(text[:limit], lexer) if limit > 0 else None
        remaining -= min(len(text), limit)
        shown.append(
            CodeFile(path, LANGUAGES[lexer], text.count("\n") + 1, len(text.encode()), html, cut)
        )
    return shown, len(files)
