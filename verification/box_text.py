"""Text that leaves a box (test titles, errors, console lines, refused hosts), made safe for
where it goes. Every function here passes it through the one scrubber
(:func:`repositories.secrets.scrub`: the secrets the run holds, in their written and encoded
forms) and bounds it; ``line`` also makes it one line (a newline in a test title forged
``ok …`` lines in ``verify_tests``' output), ``markdown`` also escapes it for a pull request
body or a check run's text (a backtick in a refused host broke out of a code span)."""

from __future__ import annotations

import html
import re

from repositories.secrets import scrub

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Control characters and lone surrogates: a test's error may carry anything it read (NUL bytes
# of an environ file), and the text goes into a committed file, the PR and JSON.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")
# Everything that ends or breaks a line, for text that must stay on one (C1 controls too:
# U+0085 is a newline to some readers, U+2028/2029 to JavaScript and Markdown renderers).
_BREAKS = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]+")
# Markdown's punctuation that can start emphasis, code, links, tables, headings or lists.
_MARKDOWN = re.compile(r"([\\`*_\[\]{}()#+!|~])")


def bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clean(text: str, limit: int) -> str:
    """Text from the tests, bounded, and scrubbed of every secret: it reaches the report, the
    pull request, the LLM's heal request and the failure records. Newlines stay (an error's
    lines); other control characters do not."""
    return bounded(scrub(_CONTROL.sub(" ", _ANSI.sub("", str(text or "")))).strip(), limit)


def line(text: str, limit: int) -> str:
    """:func:`clean`, on one line: every run of whitespace or control characters is a space."""
    return bounded(" ".join(_BREAKS.sub(" ", clean(text, limit * 2)).split()), limit)


def markdown(text: str, limit: int) -> str:
    """:func:`line`, escaped to show as plain text in Markdown and its HTML (GitHub's pull
    request bodies and check runs): no tag, entity, code span, link or table cell opens. Not
    for inside a code span, which shows its backslashes and entities as they are."""
    return html.escape(_MARKDOWN.sub(r"\\\1", line(text, limit)), quote=False)


def code(text: str) -> str:
    """``text`` as inline code, whatever backticks it holds (inside a code span Markdown and
    HTML are shown as they are; only a longer run of backticks would close it)."""
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence} {text} {fence}" if fence != "`" else f"`{text}`"
