"""Benchmark VerifyTests with the offline provider: the share of generated tests that pass against
the live app before and after the healing round (docs/benchmarks.md).

For each app and depth level the offline rules write the tests exactly as a run would (the same
reads, detection, cases and files), VerifyTests runs them with Playwright Test on Debian's
Chromium against the app served on loopback, heals with the offline provider and quarantines
the rest. Apps: the demo web app (`make run`'s stand-in for demo/web) and the issue's Flask
notes service (tests/verify_apps.py). Needs no database, Valkey or Temporal.

    .venv/bin/python scripts/bench_verify.py [--depths smoke,core,standard,deep]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")
os.environ.setdefault("AMTP_SERVICES_NOT_NEEDED", "1")  # no database, Valkey or Temporal
os.environ["AMTP_LLM_PROVIDER"] = "offline"

import django  # noqa: E402

django.setup()

from agents.offline import generate_cases  # noqa: E402
from agents.service import run_test_healer  # noqa: E402
from runs.demo.app import DemoTasks, serving  # noqa: E402
from runs.demo.content import DEMO_WEB  # noqa: E402
from tests.offline_checks import crawl, playwright_files  # noqa: E402
from tests.plans import make_plan  # noqa: E402
from tests.verify_apps import NOTES_REPO, NotesApp  # noqa: E402
from verification.exploration.service import app_view  # noqa: E402
from verification.verify import verify  # noqa: E402

APPS = {"demo/web": (DEMO_WEB, DemoTasks), "notes (Flask)": (NOTES_REPO, NotesApp)}


def offline_files(repo: dict[str, str], depth: str, app_map: dict | None = None) -> list[dict]:
    """The spec files the offline rules write for ``repo`` at ``depth``, from the app map too
    when there is one (the ExploreApp stage's output)."""
    request = {**crawl(repo), "depth_level": depth}
    if app_map is not None:
        request["app_map"] = app_view(app_map, request)  # what the pipeline hands the agents
    return playwright_files(generate_cases(request, depth))


def verified(url: str, files: list[dict], **plan: object) -> dict:
    """The verification report of ``files`` against the app at ``url``: one run, one healing
    round, the rest quarantined. ``plan`` overrides fields of the Plan."""
    with tempfile.TemporaryDirectory() as scratch:
        return verify(make_plan(Path(scratch), url, files, **{"budget_s": 600, **plan}), heal=_heal)


def _heal(heal_input: dict, _seconds_left: float) -> dict:
    return run_test_healer(heal_input, test_dir="e2e/amtp").output


def measure(name: str, depth: str) -> dict:
    repo, app_class = APPS[name]
    with serving(app_class()) as url:
        began = time.monotonic()
        report = verified(url, offline_files(repo, depth))
        seconds = time.monotonic() - began
    totals = report["totals"]
    before = totals["passed"] + totals["flaky"]
    return {**totals, "before": before, "after": before + totals["healed"], "seconds": seconds}


def _share(count: int, total: int) -> str:
    return f"{count} ({100 * count / total:.0f}%)" if total else "0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="smoke,core,standard,deep")
    args = parser.parse_args()
    print(
        "| app | depth | tests | passing before healing | after healing | healed | flaky "
        "| quarantined | failed unlabelled | seconds |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in APPS:
        for depth in args.depths.split(","):
            m = measure(name, depth)
            print(
                f"| {name} | {depth} | {m['tests']} | {_share(m['before'], m['tests'])} "
                f"| {_share(m['after'], m['tests'])} "
                f"| {m['healed']} | {m['flaky']} | {m['quarantined']} | {m['failed']} "
                f"| {m['seconds']:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
