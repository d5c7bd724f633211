"""The host-resource cases of the hostile corpus (tests/test_box_bounds.py) at the default caps
(3 GiB of memory, 1 GiB and 100,000 inodes of tmpfs, 64 proxy connections): each spec through
the real box, what the host lost at worst while it ran, the box's peak, its reason to stop,
and whether the next run on the same worker passes. A few minutes; needs a devstack.

    .venv/bin/python scripts/hostile_box.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")

import django  # noqa: E402

django.setup()

from runs.demo.app import serve  # noqa: E402
from tests.test_box_bounds import CASES, MIB, HostWatch, next_run_passes  # noqa: E402
from tests.test_sandbox import run_alone  # noqa: E402
from tests.verify_apps import NotesApp  # noqa: E402
from verification import sandbox  # noqa: E402


def main() -> int:
    outcomes: list = []
    real_run = sandbox.Box.run

    def run(self, *args, **kwargs):
        outcomes.append(real_run(self, *args, **kwargs))
        return outcomes[-1]

    sandbox.Box.run = run
    server, url = serve(NotesApp(slow_seconds=0))
    failed = 0
    try:
        for case, (body, cap) in CASES.items():
            with tempfile.TemporaryDirectory() as scratch:
                outcomes.clear()
                started = time.monotonic()
                with HostWatch() as host:
                    report, error = run_alone(Path(scratch), url, body, [])
                took = time.monotonic() - started
                print(f"{case}: {took:.1f} s, {outcomes[0].stopped or error[:100]!r}")
                print(f"  box peak memory {outcomes[0].peak_memory / MIB:.0f} MiB")
                print(
                    "  host lost at worst: "
                    + ", ".join(f"{k} {v:.0f}" for k, v in host.lost().items())
                )
                ok = report is None and cap in error
                try:
                    next_run_passes(Path(scratch), url)
                except AssertionError as exc:
                    ok = False
                    print(f"  the next run did not pass: {exc}")
                print(f"  {'ok' if ok else 'FAILED'}")
                failed += not ok
    finally:
        server.shutdown()
        server.server_close()
        sandbox.Box.run = real_run
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
