"""The comment that marks a spec file as AMTP's own.

Maintenance re-verifies, heals and quarantines only the specs AMTP wrote (unless the repository
says every spec), and tells them by this comment in their first lines. A model writing the
files may leave it out, so a generation pull request adds it where it is missing, when its
files are assembled: the stored Test Engineer output stays exactly what the model wrote.
"""

from __future__ import annotations

import re

AMTP_MARK = re.compile(r"^\s*(//|/\*|\*).*\bAMTP\b")
HEAD_LINES = 10
SPEC_SUFFIX = ".spec.ts"
SPEC_HEADER = "// Written by AMTP: kept green by its maintenance runs. Review before merging.\n"


def is_amtp_file(text: str) -> bool:
    """Whether a comment naming AMTP opens the file (within its first HEAD_LINES lines)."""
    return any(AMTP_MARK.match(line) for line in text.splitlines()[:HEAD_LINES])


def with_amtp_header(files: list[dict]) -> list[dict]:
    """``files`` with SPEC_HEADER opening every Playwright spec that lacks an AMTP comment
    (a comment line changes neither the syntax nor what the tests do); others as they are."""
    return [
        {**f, "contents": SPEC_HEADER + f["contents"]}
        if f["path"].endswith(SPEC_SUFFIX) and not is_amtp_file(f["contents"])
        else f
        for f in files
    ]
