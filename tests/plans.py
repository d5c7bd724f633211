"""Verification plans for the tests (and benchmarks) that run specs against a live app.

``make_plan`` is one VerifyTests plan with the suite's defaults: the apps under test listen on
loopback, one healing round; ``verified`` verifies once, with no retry and no heal.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from verification.service import runner_from_settings
from verification.verify import Plan, verify

RUN_ID = "3f2b8c1e-9a4d-4e6f-8b21-5c7d9e0f1a2b"


def make_plan(tmp_path: Path, url: str, files: list[dict], **overrides) -> Plan:
    """A plan for ``files`` against ``url``, its evidence under ``tmp_path / "evidence"``."""
    values = {
        "run_id": RUN_ID,
        "framework": "playwright",
        "files": files,
        "target_url": url,
        "test_dir": "e2e/amtp",
        "failing_tests": "fixme",
        "heal_rounds": 1,
        "budget_s": 120,
        "runner": runner_from_settings(),
        "evidence_dir": tmp_path / "evidence",
        "allow_hosts": ["127.0.0.1"],  # the apps under test listen on loopback
        **overrides,
    }
    return Plan(**values)


def verified(files: list[dict], url: str, evidence: Path, **overrides) -> dict:
    """The report of one verification of ``files``: no retry, no heal."""
    once = {
        "heal_rounds": 0,
        "runner": dataclasses.replace(runner_from_settings(), retries=0),
        "evidence_dir": evidence,
    }
    plan = make_plan(evidence.parent, url, files, **{**once, **overrides})
    return verify(plan, heal=lambda payload, seconds: {})
