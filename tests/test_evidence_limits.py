"""Evidence is bounded per run and pruned after AMTP_EVIDENCE_DAYS."""

import os
import time
from io import StringIO

from django.core.management import call_command

from verification import evidence
from verification.playwright import Attempt


def attempt_with(scratch, count: int, size: int) -> Attempt:
    results = scratch / "results"
    results.mkdir(parents=True)
    attachments = []
    for n in range(count):
        path = results / f"shot-{n}.png"
        path.write_bytes(b"x" * size)
        attachments.append(("screenshot", "image/png", str(path)))
    return Attempt("failed", 1, "boom", attachments)


def test_a_run_keeps_at_most_its_count_and_bytes_of_evidence(tmp_path, settings):
    settings.AMTP_EVIDENCE_MAX_FILES = 3
    settings.AMTP_EVIDENCE_MAX_BYTES = 10_000
    folder = tmp_path / "evidence"
    kept = evidence.keep(
        attempt_with(tmp_path / "a", 5, 100), scratch=tmp_path / "a", folder=folder, prefix="run-1"
    )
    assert len(kept) == 3
    kept = evidence.keep(
        attempt_with(tmp_path / "b", 1, 100), scratch=tmp_path / "b", folder=folder, prefix="run-2"
    )
    assert kept == []  # the count is spent
    settings.AMTP_EVIDENCE_MAX_FILES = 100
    kept = evidence.keep(
        attempt_with(tmp_path / "c", 2, 6_000),
        scratch=tmp_path / "c",
        folder=folder,
        prefix="run-3",
    )
    assert len(kept) == 1  # the second would pass the byte cap


def test_prune_evidence_deletes_only_what_is_older_than_the_setting(tmp_path, settings):
    settings.AMTP_VERIFY_EVIDENCE_DIR = tmp_path
    old, new = tmp_path / "old-run", tmp_path / "new-run"
    for folder in (old, new):
        folder.mkdir()
        (folder / "trace.zip").write_bytes(b"z")
    long_ago = time.time() - 40 * 86400
    os.utime(old, (long_ago, long_ago))
    out = StringIO()
    call_command("prune_evidence", "--days", "30", "--dry-run", stdout=out)
    assert "would delete the evidence of 1 run(s)" in out.getvalue() and old.exists()
    call_command("prune_evidence", "--days", "30", stdout=out)
    assert not old.exists() and new.exists()
