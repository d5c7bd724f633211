"""Repository-relative paths: the one definition of a safe path, for every surface.

- :func:`path_problems`: a path we *write* — a generated test file, a pull-request file — and,
  through :func:`checked_test_dir`, the configured test directory. The strictest rules: a
  reviewer must see exactly the path git will store, on every operating system.
- :func:`read_path_problem`: a path we *read* from a commit. A repository may legitimately hold
  long names, ``.github/`` and formatting characters, so only what could leave the repository,
  reach ``.git`` or name a file ambiguously is refused.

Each message names its rule; callers add the path and what is allowed instead.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

MAX_PATH_BYTES = 200  # leaves room under Windows' 260-character MAX_PATH for the checkout root
MAX_SEGMENT_BYTES = 100  # well under the 255-byte file-name limit of common file systems
MAX_READ_PATH_BYTES = 4096  # Linux's PATH_MAX: no file in a checkout has a longer path
# Room for a file name of the longest allowed segment under the test directory.
MAX_TEST_DIR_BYTES = MAX_PATH_BYTES - MAX_SEGMENT_BYTES - 1

NOT_A_STRING = "path is missing, empty or not a string"
PATH_TOO_LONG = f"path is longer than {MAX_PATH_BYTES} UTF-8 bytes"
READ_PATH_TOO_LONG = f"path is longer than {MAX_READ_PATH_BYTES} UTF-8 bytes"
SEGMENT_TOO_LONG = f"a path segment is longer than {MAX_SEGMENT_BYTES} UTF-8 bytes"
CONTROL_CHARACTER = "path contains NUL, control or invisible formatting characters"
UNC_PATH = "path is a UNC network path"
DRIVE_PATH = "path starts with a Windows drive letter"
ABSOLUTE_PATH = "path is absolute (starts with '/')"
BACKSLASH = "path contains a backslash (the separator is '/')"
PARENT_SEGMENT = "path leaves the repository ('..' segment)"
DOT_SEGMENT = "path is not normalised ('.' segment)"
EMPTY_SEGMENT = "path is not normalised (empty segment, '//')"
TRAILING_SLASH = "path ends with '/' (a directory, not a file)"
GIT_DIRECTORY = "path is inside .git/ or .github/ (git internals and CI workflows are off limits)"
GIT_INTERNALS = "path is inside .git/ (git internals)"
OUTSIDE_TEST_DIR = "path is outside the test directory"
REPOSITORY_ROOT = "the test directory must be a sub-directory, not the repository root"
TEST_DIR_TOO_LONG = (
    f"the test directory is longer than {MAX_TEST_DIR_BYTES} UTF-8 bytes "
    f"(a file name of up to {MAX_SEGMENT_BYTES} bytes must fit under it)"
)

# The one file under .github/ a pull request may carry: the CI workflow AMTP itself writes
# (runs.pr_workflow), never a model (the file policy refuses .github/ for model output).
AMTP_CI_WORKFLOW = ".github/workflows/amtp-e2e.yml"

_DRIVE = re.compile(r"^[A-Za-z]:")
_SEPARATORS = re.compile(r"[/\\]")
# What a reviewer cannot see or a terminal would act on: controls, bidi and zero-width
# formatting, surrogates, private use, unassigned code points, line and paragraph separators.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# Windows also resolves `.git.`/`.git ` (trailing dots and spaces) and the 8.3 name `GIT~1`.
_GIT_NAMES = frozenset({".git", "git~1"})
_GIT_OR_CI_NAMES = _GIT_NAMES | {".github", "github~1"}


def path_problems(path: Any, *, under: str | None = None) -> list[str]:
    """Every rule a path to write breaks: relative, normalised, '/'-separated, short, visible,
    outside ``.git/`` and ``.github/``; given ``under``, strictly inside that directory."""
    if not isinstance(path, str) or not path:
        return [NOT_A_STRING]
    segments = _SEPARATORS.split(path.strip("/\\"))
    checks = {
        PATH_TOO_LONG: _utf8_size(path) > MAX_PATH_BYTES,
        CONTROL_CHARACTER: any(unicodedata.category(c) in _INVISIBLE_CATEGORIES for c in path),
        **_shape_checks(path, segments),
        SEGMENT_TOO_LONG: any(_utf8_size(segment) > MAX_SEGMENT_BYTES for segment in segments),
        GIT_DIRECTORY: _inside(segments, _GIT_OR_CI_NAMES),
    }
    if under is not None:
        # Case-sensitive on purpose: `E2E/amtp` is another directory on a Linux CI runner.
        nfc, prefix = unicodedata.normalize("NFC", path).split("/"), under.split("/")
        checks[OUTSIDE_TEST_DIR] = nfc[: len(prefix)] != prefix or len(nfc) <= len(prefix)
    return [rule for rule, broken in checks.items() if broken]


def read_path_problem(path: Any) -> str | None:
    """The first rule a path to read from a commit breaks, or None when it is safe to read."""
    if not isinstance(path, str) or not path:
        return NOT_A_STRING
    segments = _SEPARATORS.split(path.strip("/\\"))
    checks = {
        READ_PATH_TOO_LONG: _utf8_size(path) > MAX_READ_PATH_BYTES,
        # C0 controls and DEL only: git stores other characters a file name may carry.
        CONTROL_CHARACTER: any(ord(c) < 32 or ord(c) == 127 for c in path),
        **_shape_checks(path, segments),
        GIT_INTERNALS: _inside(segments, _GIT_NAMES),
    }
    return next((rule for rule, broken in checks.items() if broken), None)


def checked_test_dir(test_dir: Any) -> tuple[str, list[str]]:
    """(the test directory as a run uses it, every rule it breaks). One trailing '/' is
    dropped and the name put in NFC. The rules are those of a path to write, plus room for a
    file name under it: whatever is accepted here is a directory the Test Engineer's files
    can go under, so repository settings (admin) and the run agree."""
    if isinstance(test_dir, str) and test_dir.endswith("/"):
        test_dir = test_dir[:-1]
    if test_dir in ("", "."):
        return "", [REPOSITORY_ROOT]
    problems = path_problems(test_dir)
    too_long = isinstance(test_dir, str) and _utf8_size(test_dir) > MAX_TEST_DIR_BYTES
    if too_long and PATH_TOO_LONG not in problems:
        problems.append(TEST_DIR_TOO_LONG)
    return ("" if problems else unicodedata.normalize("NFC", test_dir)), problems


def _shape_checks(path: str, segments: list[str]) -> dict[str, bool]:
    """The rules that keep a path relative and normalised, read or written alike.
    Both separators split segments, so that `..\\..\\x` is reported as leaving the repository."""
    unc = path.startswith(("\\\\", "//"))
    return {
        UNC_PATH: unc,
        DRIVE_PATH: _DRIVE.match(path) is not None,
        ABSOLUTE_PATH: path.startswith(("/", "\\")) and not unc,
        BACKSLASH: "\\" in path,
        TRAILING_SLASH: path.endswith(("/", "\\")),
        EMPTY_SEGMENT: "" in segments,
        PARENT_SEGMENT: ".." in segments,
        DOT_SEGMENT: "." in segments,
    }


def _inside(segments: list[str], names: frozenset[str]) -> bool:
    return any(segment.rstrip(". ").casefold() in names for segment in segments)


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))
