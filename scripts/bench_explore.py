"""ExploreApp's time on a 50-page app: a stand-in of 50 linked pages (each with a heading, a
list, links to its neighbours and, every fifth page, a form), explored 3 times in the sandbox
with the default bounds raised to reach every page. Prints the median and
``RATIO explore_50_pages_s`` (goal ≤ 60 s).

    .venv/bin/python scripts/bench_explore.py [--rounds 3] [--pages 50]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")

import django  # noqa: E402

django.setup()

from bench_all import spread  # noqa: E402

from runs.demo.app import serving  # noqa: E402
from verification.exploration.explore import Bounds, explore  # noqa: E402
from verification.service import runner_from_settings  # noqa: E402


def site(pages: int):
    """Page i links to the next three and back to the first, so breadth-first exploration
    reaches all of them within a few levels."""

    def page(i: int) -> bytes:
        links = "".join(f'<a href="/p/{j}">Page {j}</a> ' for j in range(i + 1, min(i + 4, pages)))
        form = (
            '<form method="post"><label>Name <input name="name" required></label>'
            "<button>Save</button></form>"
            if i % 5 == 0
            else ""
        )
        items = "".join(f"<li>Item {i}.{k}</li>" for k in range(20))
        return (
            f"<!doctype html><title>Page {i}</title><h1>Page {i}</h1><nav>{links}"
            f'<a href="/">Home</a></nav><ul>{items}</ul>{form}'
        ).encode()

    def app(environ, start_response):
        path = environ["PATH_INFO"]
        number = path.removeprefix("/p/")
        if path == "/":
            number = "0"
        if not number.isdigit() or int(number) >= pages:
            start_response("404 Not Found", [("Content-Type", "text/html")])
            return [b"<h1>Not found</h1>"]
        start_response("200 OK", [("Content-Type", "text/html")])
        return [page(int(number))]

    return app


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pages", type=int, default=50)
    args = parser.parse_args()
    bounds = Bounds(
        max_pages=args.pages + 1, max_depth=50, time_s=300, page_timeout_s=15, max_bytes=2 << 20
    )
    times, sizes = [], []
    with serving(site(args.pages)) as url:
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as shots:
                started = time.perf_counter()
                app_map = explore(
                    url,
                    allow_hosts=["127.0.0.1"],
                    runner=runner_from_settings(),
                    bounds=bounds,
                    shots_dir=Path(shots),
                    start_paths=["/"],
                )
                times.append(time.perf_counter() - started)
            visited = len(app_map["pages"])
            if visited != args.pages:
                print(f"FAILED: visited {visited} pages of {args.pages} ({app_map['stopped']})")
                return 1
            sizes.append(len(str(app_map)))
    print(f"{args.pages}-page app explored {args.rounds} times in the sandbox, median:")
    median = spread("seconds", times, unit="s")
    print(f"  per page {median / args.pages * 1000:.0f} ms; app_map ~{max(sizes) // 1024} KiB")
    print(f"RATIO explore_50_pages_s: {median:.1f} (goal <= 60)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
