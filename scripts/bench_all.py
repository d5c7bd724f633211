"""``make bench``: run every benchmark, one after another, and end with their RATIO lines.

Each script prints ``RATIO <name>: <value> (goal ...)`` lines; this runner shows each
script's output as it comes, collects those lines and prints them as one table at the end.
It writes nothing itself. A script that is not in this checkout is reported as missing; one
that fails is reported with its exit status, and the others still run; one that prints a line
starting ``SKIPPED`` (llama: the llama.cpp server is not built) is reported as skipped.

    .venv/bin/python scripts/bench_all.py [--only submit,workers]

Each script runs with its own defaults (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RATIO = re.compile(r"^RATIO (?P<name>[\w., ()+=-]+?): (?P<value>.+?)(?: \((?P<goal>.*)\))?$")

BENCHMARKS = [  # name, script and its arguments
    ("orchestration", "bench_orchestration.py"),
    ("crawl", "bench_crawl.py"),
    ("scale", "bench_scale.py"),  # 1k/10k/100k files x local/github x standard/deep: 12 runs
    ("lists", "bench_lists.py"),
    ("dashboard", "bench_dashboard.py"),  # 1M runs: rollup build, run end, dashboard loads
    ("prune", "bench_prune.py"),  # 1M runs seeded again, half of them pruned
    ("submit", "bench_submit.py"),
    ("workers", "bench_workers.py"),
    ("sandbox", "bench_sandbox.py"),  # 5 demo verifications in the box, 5 without
    ("explore", "bench_explore.py"),  # a 50-page app explored 3 times in the box
    ("grounding", "bench_grounding.py"),  # 4 apps: crawl, explore, write, verify and heal
    ("boot", "bench_boot.py"),  # every vendored real app booted in the box: cold, then warm
    # The vendored open-source apps started live by the script (npm/pip installs cached under
    # .devstack/), then booted by AMTP from their recipes; each killed and reported as timed
    # out after 15 min.
    ("realworld", "realworld.py --timeout 900"),
    # A real llama.cpp server against our fake; building it takes ~20 min, so only if built.
    ("llama", "llama_compare.py --no-build"),
]


def spread(label: str, seconds: list[float], *, unit: str = "ms") -> float:
    """Print ``label``'s median and each sample in ``unit`` (ms, or s); the median, in seconds.
    For the benchmarks that time a few rounds of the same thing."""
    scale, digits = (1000, None) if unit == "ms" else (1, 1)
    median = statistics.median(seconds)
    shown = [round(s * scale, digits) for s in seconds]
    print(f"  {label:11} {median * scale:8.{digits or 0}f} {unit}   {shown}")
    return median


def run(name: str, command: str) -> tuple[str, list[dict], float]:
    script, *arguments = command.split()
    path = ROOT / "scripts" / script
    if not path.exists():
        print(f"\n=== {name}: scripts/{script} is not in this checkout, skipped", flush=True)
        return "missing", [], 0.0
    print(f"\n=== {name}: scripts/{script}", flush=True)
    started = time.monotonic()
    found, skipped = [], False
    with subprocess.Popen(
        [sys.executable, str(path), *arguments],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    ) as process:
        for line in process.stdout:
            print(line, end="", flush=True)
            skipped |= line.startswith("SKIPPED")
            if match := RATIO.match(line.strip()):
                found.append(match.groupdict())
    seconds = time.monotonic() - started
    status = "ok" if process.returncode == 0 else f"exit {process.returncode}"
    status = "skipped" if skipped and status == "ok" else status
    return status, found, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated names: " + ", ".join(name for name, _ in BENCHMARKS),
    )
    args = parser.parse_args()
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    unknown = only - {name for name, _ in BENCHMARKS}
    if unknown:
        parser.error(f"--only: unknown {sorted(unknown)}")

    rows, failed = [], False
    for name, script in BENCHMARKS:
        if only and name not in only:
            continue
        status, ratios, seconds = run(name, script)
        failed |= status not in ("ok", "missing", "skipped")
        rows.append((name, status, ratios, seconds))

    print("\n=== make bench: summary\n")
    print("| benchmark | status | time | figure | value | goal |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, status, ratios, seconds in rows:
        if not ratios:
            print(f"| {name} | {status} | {seconds:.0f} s | (no RATIO line) | | |")
        for r in ratios:
            print(
                f"| {name} | {status} | {seconds:.0f} s | {r['name']} | {r['value']} | "
                f"{r['goal'] or ''} |"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
