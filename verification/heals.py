"""A healing round's answer applied to a file, test by test.

Only the failing tests' new text is taken from the heal, spliced into the file as it was: the
rest of the file stays byte for byte (the healer is told so), so nothing outside a test (a
``test.describe.skip``, an ``expect`` of the file's own) comes in with it. Each changed test is
judged by the heal rule (``agents.expectations``): a heal that loosens what the test expects
is refused and the test put back as it was, so it keeps failing and is quarantined as a
possible app bug. Every heal, taken or refused, is kept as a small unified diff of its file.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from agents import expectations, spec_blocks

REFUSED_LEAD = "possible app bug: the expectation still fails"
REFUSED = REFUSED_LEAD + "; the heal was refused: it tried to {what}"
MAX_DIFF_LINES = 60
MAX_DIFF_CHARS = 4000
CONTEXT_LINES = 2


@dataclass(frozen=True)
class Verdict:
    title: str
    diff: str  # the heal of this test as a unified diff of its file, bounded
    refused: str  # "" when the heal is taken; else why not (REFUSED)


def apply(
    path: str, before: str, after: str, failing: list[tuple[str, int]]
) -> tuple[str, dict[str, Verdict]]:
    """(the file to run next, a verdict per test the heal changed) for the heal ``after`` of
    the file ``before`` at ``path``, whose tests ``failing`` ((title, line)) failed."""
    changes = []
    for title, line in failing:
        old = spec_blocks.find(before, title=title, line=line)
        new = spec_blocks.find(after, title=title)
        if old is not None and new is not None and old.text != new.text:
            changes.append((old, new))
    source, verdicts = before, {}
    for old, new in sorted(changes, key=lambda pair: pair[0].start, reverse=True):
        loosened = expectations.weakening(old.text, new.text)
        refused = REFUSED.format(what="; ".join(loosened)) if loosened else ""
        verdicts[old.title] = Verdict(
            old.title, diff(path, before, _splice(before, old, new)), refused
        )
        if not refused:  # bottom-up: the blocks above keep their offsets
            source = _splice(source, old, new)
    return source, verdicts


def _splice(source: str, old: spec_blocks.TestBlock, new: spec_blocks.TestBlock) -> str:
    data = source.encode("utf-8")
    return (data[: old.start] + new.text.encode("utf-8") + data[old.end :]).decode("utf-8")


def diff(path: str, before: str, after: str) -> str:
    """A unified diff of ``path`` from ``before`` to ``after``, at most MAX_DIFF_LINES lines
    and MAX_DIFF_CHARS characters (the rest counted, not shown)."""
    lines = list(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
            n=CONTEXT_LINES,
            lineterm="",
        )
    )
    shown, size = [], 0
    for line in lines:
        if len(shown) == MAX_DIFF_LINES or size + len(line) + 1 > MAX_DIFF_CHARS - 80:
            shown.append(f"… {len(lines) - len(shown)} more diff line(s) not shown")
            break
        shown.append(line)
        size += len(line) + 1
    return "\n".join(shown)
