"""Quarantine: each test still failing after healing becomes ``test.fixme`` under a comment with
its reason, or is dropped, as the repository says; never deleted silently, never weakened."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agents import spec_blocks
from agents.file_policy import check_generated_files
from amtp_site.errors import AmtpError
from repositories import targets
from verification.playwright import clean, probe

if TYPE_CHECKING:
    from verification.session import Row, Session

QUARANTINED = "failed against {url} after {rounds} healing round(s): {error}"
PAGE_REMOVED = "page removed: confirm the deletion (GET {path} answers 404 at {url})"
NOT_LOCATED = "could not be quarantined automatically (its title is not a string literal)"

_SNIPPET = re.compile(r"^\s*(>?\s*\d+ \||\|\s|at |Call log:)")
# The first page a test opens: a same-origin path literal (nothing else is probed).
# A test that expects the 404 itself (a "missing page" test): its 404 is its subject, so a
# failure of it is something else (page errors, a heading), never a removed page.
_EXPECTS_404 = re.compile(r"\b(?:toBe|toEqual|toHaveStatus)\(\s*404\s*\)")
_GOTO = re.compile(r"""\bpage\.goto\(\s*(['"])(/[A-Za-z0-9._~!$&()*+,;=:@%/?-]{0,200})\1""")


def headline(error: str) -> str:
    """An error on one line: its message lines, without the code snippet and call log."""
    lines = []
    for line in error.splitlines():
        if _SNIPPET.match(line):
            break
        if line.strip():
            lines.append(line.strip())
    return clean(" · ".join(lines) or "(no message)", 300)


def _page_removed(session: Session, test_source: str) -> str:
    """PAGE_REMOVED when the first page the test opens answers 404 now (asked the way the
    tests' proxy would go: the pinned address, the network rule) and the test did not expect
    that 404, else ""."""
    found = _GOTO.search(test_source)
    if found is None or session.policy is None or _EXPECTS_404.search(test_source):
        return ""
    url = session.plan.target_url
    try:
        status = probe(url, session.policy, path=found.group(2))
    except AmtpError:
        return ""
    if status != 404:
        return ""
    return PAGE_REMOVED.format(path=found.group(2), url=targets.display(url))


def _text(source: str, block) -> str:
    return source.encode("utf-8")[block.start : block.end].decode("utf-8", "replace")


def set_aside(session: Session, row: Row, reason: str) -> None:
    """One test quarantined at once, whatever its status (it crashed the app: run again, it
    would take every later test down with it): ``test.fixme`` with ``reason``, or dropped."""
    source = session.files.get(row.file)
    block = spec_blocks.find(source, title=row.title, line=row.line) if source else None
    if block is None:
        row.reason = "; ".join(r for r in (reason, NOT_LOCATED) if r)
        return
    row.status, row.reason = "quarantined", reason
    if session.plan.failing_tests == "drop":
        source = spec_blocks.drop(source, block)
    else:
        source = spec_blocks.mark_fixme(source, block, reason)
    if spec_blocks.blocks(source):
        session.files[row.file] = source
    else:
        del session.files[row.file]  # its only test was dropped


def quarantine(session: Session) -> None:
    """Every test still failing: ``test.fixme`` with its reason, or dropped (the setting). When
    the target stopped answering at some request, each reason names it (``Policy``)."""
    plan = session.plan
    stopped = session.policy.stopped_answering() if session.policy else ""
    by_file: dict[str, list[Row]] = {}
    for row in session.failing():
        by_file.setdefault(row.file, []).append(row)
    for path, rows in by_file.items():
        source = session.files[path]
        for row in sorted(rows, key=lambda r: r.line, reverse=True):  # bottom-up: lines hold
            block = spec_blocks.find(source, title=row.title, line=row.line)
            if block is None:
                row.reason = NOT_LOCATED
                continue
            why = _page_removed(session, _text(source, block)) or QUARANTINED.format(
                url=targets.display(plan.target_url),
                rounds=plan.heal_rounds,
                error=headline(row.error),
            )
            # a refused heal leads: the test is kept as it was written, and may have found a bug
            row.reason = "; ".join(r for r in (row.refused, why, stopped, row.reason) if r)
            if plan.failing_tests == "drop":
                source = spec_blocks.drop(source, block)
            else:
                source = spec_blocks.mark_fixme(source, block, row.reason)
            row.status = "quarantined"
        if spec_blocks.blocks(source):
            session.files[path] = source
        else:
            del session.files[path]  # every test of the file was dropped
    if session.files:
        check_generated_files(
            [{"path": p, "contents": c} for p, c in session.files.items()],
            framework="playwright",
            test_dir=plan.test_dir,
        )
