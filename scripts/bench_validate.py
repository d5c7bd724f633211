"""Benchmark contract validation of a real-size handoff: a 100,000-file deep crawl.

Prints, for the Repo Crawler output and the Test Case Generator input built from it, the time of
``schemas.validate`` (jsonschema-rs verdict) and of the Python ``jsonschema`` error walk it
replaced, median of ``--repeat`` runs. No services needed.

    .venv/bin/python scripts/bench_validate.py [--files 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a plain script: make schemas and amtp_site importable

import schemas  # noqa: E402


def crawler_output(files: int) -> dict:
    tree = [
        {"path": f"packages/pkg{i // 500}/src/module_{i}.ts", "size": 1000 + i, "sha": f"{i:040x}"}
        for i in range(files)
    ]
    return {
        "run_id": str(uuid.uuid4()),
        "repo_full_name": "bench/monorepo",
        "ref": "main",
        "file_tree": tree,
        "entry_points": [{"path": tree[0]["path"], "kind": "ui_component"}],
        "detected_stack": {"runtime": "node", "frameworks": ["next"]},
        "cache_hits": 0,
    }


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    output = crawler_output(args.files)
    documents = {
        "repo_crawler/output": output,
        "test_case_generator/input": {**output, "depth_level": "deep"},
    }
    print(f"{args.files} file_tree entries, median of {args.repeat}")
    for name, doc in documents.items():
        schemas.validate(name, doc)  # compile both validators first
        assert not schemas.violations(name, doc)
        fast = median_seconds(lambda n=name, d=doc: schemas.validate(n, d), args.repeat)
        slow = median_seconds(lambda n=name, d=doc: schemas.violations(n, d), args.repeat)
        print(f"{name:<28} schemas.validate {fast:7.3f} s   jsonschema alone {slow:7.3f} s")


if __name__ == "__main__":
    main()
