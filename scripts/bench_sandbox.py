"""The sandbox's cost: first a box running ``true``, phase by phase (the box's tmpfs, its
cgroup, the proxy, bubblewrap, node, the whole execution sandboxed and unsandboxed), then the
demo's generated tests verified against its stand-in app, 5 times in the bubblewrap box and 5
times unsandboxed (the operator's override), alternating, back to back. Prints the medians and
``RATIO sandbox_overhead_ms`` (goal ≤ 300).

    .venv/bin/python scripts/bench_sandbox.py [--rounds 5] [--phases-only]
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")

import django  # noqa: E402

django.setup()

from bench_all import spread  # noqa: E402
from django.conf import settings  # noqa: E402

from agents.offline.cases import generate_cases  # noqa: E402
from runs.demo.app import DemoTasks, serving  # noqa: E402
from runs.demo.content import DEMO_WEB  # noqa: E402
from tests.offline_checks import crawl, playwright_files  # noqa: E402
from tests.plans import make_plan  # noqa: E402
from verification import proxy, sandbox, seccomp  # noqa: E402
from verification import verify as v  # noqa: E402
from verification.cgroup import Cgroup  # noqa: E402
from verification.service import runner_from_settings  # noqa: E402


def demo_files() -> list[dict]:
    return playwright_files(generate_cases(crawl(DEMO_WEB), "smoke"))


def verify_once(files: list[dict], url: str, sandboxed: bool) -> tuple[float, dict]:
    settings.AMTP_VERIFY_UNSANDBOXED = not sandboxed
    with tempfile.TemporaryDirectory() as scratch:
        plan = make_plan(Path(scratch), url, files, heal_rounds=0, budget_s=300)
        started = time.perf_counter()
        report = v.verify(plan, heal=None)
        return time.perf_counter() - started, report


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def phases_once(limits: sandbox.Limits, runner: Path) -> dict[str, float]:
    """One box running ``true``, each phase timed (ms), then the same execution unsandboxed."""
    took: dict[str, float] = {}
    started = time.perf_counter()
    cgroup = Cgroup(
        f"bench-{secrets.token_hex(4)}",
        settings.AMTP_SANDBOX_CGROUP_PARENT,
        limits.box_memory_bytes,
        limits.box_processes,
    )
    cgroup.remove()
    took["cgroup made and removed"] = _ms(started)
    started = time.perf_counter()
    sandbox.Box().remove()
    took["tmpfs mounted and unmounted"] = _ms(started)
    box = sandbox.Box()
    try:
        started = time.perf_counter()
        with proxy.serving(box.socket, proxy.Policy("http://127.0.0.1:9/", [])):
            took["proxy started and stopped"] = _ms(started)
        fds = [
            os.open(runner, os.O_PATH | os.O_DIRECTORY),
            os.open(box.proxy_dir, os.O_PATH | os.O_DIRECTORY),
            seccomp.memfd(),
        ]
        box.hand_over()
        try:
            argv = box._argv(["true"], *fds)
            bare = argv[: argv.index(sandbox._node())]  # bubblewrap, then `true` in it
            started = time.perf_counter()
            subprocess.run([*bare, "/usr/bin/true"], check=True, pass_fds=fds, **box.user)
            took["bwrap running true"] = _ms(started)
        finally:
            for fd in fds:
                os.close(fd)
        started = time.perf_counter()
        subprocess.run(["node", "-e", "0"], check=True)
        took["node -e 0 (outside)"] = _ms(started)
        for unsandboxed in (False, True):
            settings.AMTP_VERIFY_UNSANDBOXED = unsandboxed
            started = time.perf_counter()
            run = sandbox.Box()
            try:
                with proxy.serving(run.socket, proxy.Policy("http://127.0.0.1:9/", [])):
                    outcome = run.run(["true"], env={}, runner=runner, limits=limits, wall_s=60)
                assert outcome.returncode == 0 and not outcome.stopped, outcome
            finally:
                run.remove()
            took["true in the box, all told" + (" (unsandboxed)" if unsandboxed else "")] = _ms(
                started
            )
    finally:
        settings.AMTP_VERIFY_UNSANDBOXED = False
        box.remove()
    return took


def phases(rounds: int) -> None:
    limits = sandbox.Limits.from_settings()
    runner = (runner_from_settings().runner_dir / "node_modules").resolve()
    started = time.perf_counter()
    sandbox.sealed_node()
    print(f"execute-only copy of node (once per worker process): {_ms(started):.0f} ms")
    phases_once(limits, runner)  # warm
    samples = [phases_once(limits, runner) for _ in range(rounds)]
    print(f"a box running `true`, median of {rounds} (ms):")
    for phase in samples[0]:
        values = [sample[phase] for sample in samples]
        print(f"  {phase:42} {statistics.median(values):7.1f}   {[round(t) for t in values]}")
    boxed = statistics.median(s["true in the box, all told"] for s in samples)
    bare = statistics.median(s["true in the box, all told (unsandboxed)"] for s in samples)
    print(f"RATIO sandbox_true_overhead_ms: {boxed - bare:.0f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--phases-only", action="store_true")
    args = parser.parse_args()
    phases(args.rounds)
    if args.phases_only:
        return 0
    files = demo_files()
    with serving(DemoTasks()) as url:
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
    print(f"demo verification ({totals['tests']} tests), median of {args.rounds}:")
    boxed, bare = spread("sandboxed", times[True]), spread("unsandboxed", times[False])
    print(f"RATIO sandbox_overhead_ms: {(boxed - bare) * 1000:.0f} (goal <= 300)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
