"""The sandbox's cost per verification: the demo's generated tests verified against its
stand-in app, 5 times in the bubblewrap box and 5 times unsandboxed (the operator's override),
alternating, back to back. Prints the medians and ``RATIO sandbox_overhead_ms`` (goal ≤ 300).

    .venv/bin/python scripts/bench_sandbox.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from agents.offline.cases import generate_cases  # noqa: E402
from agents.offline.code import generate_files  # noqa: E402
from runs.demo.app import DemoTasks, serve  # noqa: E402
from runs.demo.content import DEMO_WEB  # noqa: E402
from tests.offline_checks import RUN_ID, crawl, engineer_input  # noqa: E402
from verification import verify as v  # noqa: E402
from verification.service import runner_from_settings  # noqa: E402

TEST_DIR = "e2e/amtp"


def demo_files() -> list[dict]:
    cases = generate_cases(crawl(DEMO_WEB), "smoke")
    return generate_files(engineer_input(cases, "playwright"), test_dir=TEST_DIR, app_id=None)


def verify_once(files: list[dict], url: str, sandboxed: bool) -> tuple[float, dict]:
    settings.AMTP_VERIFY_UNSANDBOXED = not sandboxed
    with tempfile.TemporaryDirectory() as scratch:
        plan = v.Plan(
            run_id=RUN_ID,
            framework="playwright",
            files=files,
            target_url=url,
            test_dir=TEST_DIR,
            failing_tests="fixme",
            heal_rounds=0,
            budget_s=300,
            runner=runner_from_settings(),
            evidence_dir=Path(scratch) / "evidence",
            allow_hosts=["127.0.0.1"],
        )
        started = time.perf_counter()
        report = v.verify(plan, heal=None)
        return time.perf_counter() - started, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    files = demo_files()
    server, url = serve(DemoTasks())
    try:
        verify_once(files, url, True)  # warm: page cache, Chromium's first start
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.rounds):
            for sandboxed in (True, False):
                seconds, report = verify_once(files, url, sandboxed)
                totals = report["totals"]
                if (
                    totals["passed"] != totals["tests"]
                    or report["sandbox"]["isolated"] != sandboxed
                ):
                    print(f"FAILED: {totals} isolated={report['sandbox']['isolated']}")
                    return 1
                times[sandboxed].append(seconds)
    finally:
        server.shutdown()
        server.server_close()
    boxed, bare = statistics.median(times[True]), statistics.median(times[False])
    print(f"demo verification ({totals['tests']} tests), median of {args.rounds}:")
    print(f"  sandboxed   {boxed * 1000:8.0f} ms   {[round(t * 1000) for t in times[True]]}")
    print(f"  unsandboxed {bare * 1000:8.0f} ms   {[round(t * 1000) for t in times[False]]}")
    print(f"RATIO sandbox_overhead_ms: {(boxed - bare) * 1000:.0f} (goal <= 300)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
