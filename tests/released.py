"""The released workflow histories: one folder per release under
``tests/fixtures/histories/released/``, each file's sha256 in ``released/SHA256SUMS``
(``sha256sum`` format, so ``sha256sum -c SHA256SUMS`` checks it too). A release adds a folder
and its lines; nothing already released changes (docs/releasing.md). Free of Django: the
recording script (scripts/record_release_histories.py) imports it before any settings."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from runs.stages import CHECK_WORKFLOW, MAINTENANCE_WORKFLOW, WORKFLOW_NAME

RELEASED = Path(__file__).resolve().parent / "fixtures" / "histories" / "released"
MANIFEST = "SHA256SUMS"
# The run workflows every release records (ScheduledMaintenance only starts a run).
RUN_WORKFLOWS = (WORKFLOW_NAME, MAINTENANCE_WORKFLOW, CHECK_WORKFLOW)


def workflow_type(path: Path) -> str:
    start = json.loads(path.read_text())["events"][0]
    return start["workflowExecutionStartedEventAttributes"]["workflowType"]["name"]


def histories(root: Path = RELEASED) -> list[Path]:
    return sorted(root.glob("*/*.json"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(root: Path = RELEASED) -> dict[str, str]:
    """``{"<version>/<file>": sha256}`` as committed."""
    path = root / MANIFEST
    if not path.exists():
        return {}
    entries = {}
    for line in path.read_text().splitlines():
        digest, _, name = line.partition("  ")
        entries[name] = digest
    return entries


def write_manifest(entries: dict[str, str], root: Path = RELEASED) -> None:
    lines = [f"{entries[name]}  {name}\n" for name in sorted(entries)]
    (root / MANIFEST).write_text("".join(lines))


def manifest_problems(root: Path = RELEASED) -> list[str]:
    """What differs between the released histories on disk and the manifest: a file changed,
    missing, or not listed. Empty when every released history is as it was recorded."""
    listed = read_manifest(root)
    found = {str(path.relative_to(root)): sha256(path) for path in histories(root)}
    problems = [f"{name}: not in {MANIFEST}" for name in sorted(found.keys() - listed.keys())]
    problems += [f"{name}: missing" for name in sorted(listed.keys() - found.keys())]
    problems += [
        f"{name}: changed (sha256 {found[name]}, {MANIFEST} says {listed[name]})"
        for name in sorted(found.keys() & listed.keys())
        if found[name] != listed[name]
    ]
    return problems
