"""The evidence of a failed attempt: kept files (trace, screenshot, error context) and the bounded
snapshot of what the app answered, for the healing session.

Files are copied out of the scratch directory into ``AMTP_VERIFY_EVIDENCE_DIR/<run_id>/`` and
named in the report by their path relative to that folder, so the admin can offer them for
download and nothing else. The snapshot reads Playwright's own trace: its network log holds
the last response the test received (API request or page navigation), and the error context
holds the page's accessibility snapshot at the failure.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

from django.conf import settings

from repositories.secrets import scrub, stage_secrets
from verification.playwright import Attempt

KINDS = {"trace": "trace", "screenshot": "screenshot", "error-context": "error_context"}
MAX_FILE_BYTES = 50 * 1024 * 1024
SNAPSHOT_CHARS = 2000
# A trace is a zip the tests wrote: its entries are checked before any is read (a zip bomb
# declares small files that inflate to gigabytes).
MAX_ZIP_ENTRIES = 10_000
MAX_NETWORK_LOG_BYTES = 8 << 20
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_PAGE_YAML = re.compile(r"```yaml\n(.*?)```", re.S)
EMPTY_SNAPSHOT = {"method": "", "url": "", "status": 0, "content_type": "", "body": "", "page": ""}


def _safe(part: str) -> str:
    return _SAFE.sub("-", part).lstrip(".-_") or "x"


def keep(attempt: Attempt | None, *, scratch: Path, folder: Path, prefix: str) -> list[dict]:
    """Copy the attempt's attachments under ``folder/prefix/`` and describe them."""
    if attempt is None:
        return []
    kept = []
    for name, content_type, path in attempt.attachments:
        source = Path(path).resolve()  # a symlink out of the scratch directory is not kept
        results = (scratch / "results").resolve()
        kind = KINDS.get(name) or ("video" if content_type.startswith("video/") else None)
        if kind is None or not source.is_relative_to(results) or not source.is_file():
            continue
        size = source.stat().st_size
        if size > MAX_FILE_BYTES or not _room(folder, size) or _holds_stage_secret(source, kind):
            continue
        relative = source.relative_to(results)
        name_parts = [_safe(prefix), *(_safe(p) for p in relative.parts)]
        target = folder.joinpath(*name_parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        kept.append({"kind": kind, "path": "/".join(name_parts), "bytes": size})
    return kept


def _holds_stage_secret(source: Path, kind: str) -> bool:
    """Whether a trace or error context holds a value the stage holds (a login's
    credentials, which the tests could read): such a file is not kept. A trace is searched
    entry by entry, within bounds; one too large to search is not kept either."""
    values = [v.encode() for v in stage_secrets()]
    if not values or kind not in ("trace", "error_context"):
        return False
    try:
        if kind == "error_context":
            return any(v in source.read_bytes() for v in values)
        with zipfile.ZipFile(source) as archive:
            entries = archive.infolist()
            if len(entries) > MAX_ZIP_ENTRIES or sum(e.file_size for e in entries) > 4 * (
                MAX_FILE_BYTES
            ):
                return True
            return any(any(v in archive.read(e) for v in values) for e in entries)
    except (zipfile.BadZipFile, OSError, ValueError):
        return True


def _room(folder: Path, size: int) -> bool:
    """Whether the run's evidence folder may take one more file of ``size`` bytes."""
    kept = [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []
    return (
        len(kept) < settings.AMTP_EVIDENCE_MAX_FILES
        and sum(p.stat().st_size for p in kept) + size <= settings.AMTP_EVIDENCE_MAX_BYTES
    )


def snapshot(attempt: Attempt | None) -> dict:
    """What the app answered at the failure, bounded: the last network response recorded in
    the trace, and the page's accessibility snapshot from the error context."""
    found = dict(EMPTY_SNAPSHOT)
    if attempt is None:
        return found
    for name, _type, path in attempt.attachments:
        if name == "trace" and Path(path).is_file():
            found.update(_last_response(Path(path)))
        elif name == "error-context" and Path(path).is_file():
            with Path(path).open("rb") as context:
                text = context.read(MAX_FILE_BYTES).decode("utf-8", "replace")
            match = _PAGE_YAML.search(text)
            found["page"] = scrub(match.group(1).strip()[:SNAPSHOT_CHARS]) if match else ""
    return found


def statuses(attempt: Attempt | None) -> set[int]:
    """The HTTP status of every response the attempt's trace recorded (pages and requests)."""
    found: set[int] = set()
    for name, _type, path in attempt.attachments if attempt is not None else []:
        if name == "trace" and Path(path).is_file():
            try:
                with zipfile.ZipFile(Path(path)) as archive:
                    found |= {
                        int(s.get("response", {}).get("status", 0)) for s in _responses(archive)
                    }
            except (zipfile.BadZipFile, KeyError, ValueError, OSError, TypeError, AttributeError):
                continue
    return {s for s in found if s > 0}


def _responses(archive: zipfile.ZipFile) -> list[dict]:
    """The trace's network log, in order (bounded: a trace is a zip the tests wrote)."""
    entries = {info.filename: info for info in archive.infolist()}
    if len(entries) > MAX_ZIP_ENTRIES:
        return []
    found = []
    for name in sorted(n for n in entries if n.endswith(".network")):
        if entries[name].file_size > MAX_NETWORK_LOG_BYTES:
            continue
        with archive.open(name) as log:
            text = log.read(MAX_NETWORK_LOG_BYTES).decode("utf-8", "replace")
        for line in text.splitlines():
            entry = json.loads(line) if line.strip() else {}
            if entry.get("type") == "resource-snapshot":
                found.append(entry["snapshot"])
    return found


def _last_response(trace: Path) -> dict:
    try:
        with zipfile.ZipFile(trace) as archive:
            entries = {info.filename: info for info in archive.infolist()}
            responses = _responses(archive)
            if not responses:
                return {}
            last = responses[-1]
            response = last.get("response", {})
            content = response.get("content", {})
            body = ""
            if content.get("_file") in entries:
                with archive.open(content["_file"]) as raw:  # read no more than is kept
                    body = raw.read(SNAPSHOT_CHARS * 4).decode("utf-8", "replace")
            return {
                "method": str(last.get("request", {}).get("method", ""))[:16],
                "url": scrub(str(last.get("request", {}).get("url", ""))[:2000]),
                "status": max(0, int(response.get("status", 0))),
                "content_type": str(content.get("mimeType", ""))[:200],
                "body": scrub(body[:SNAPSHOT_CHARS]),
            }
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, TypeError, AttributeError):
        return {}
