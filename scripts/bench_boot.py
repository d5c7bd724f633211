"""BootApp's cost per real app: each vendored app of ``tests/boot_apps.py`` (express-mvc, a
Node app; flaskr, a Flask app) booted from a local git repository in the sandbox twice, with
an empty dependency cache (cold: the install through the registries' proxy) and again (warm:
the install restored from the cache). Prints per app the install and start times and
``RATIO boot_warm_<app>_s`` (goals: ≤ 20 s Node, ≤ 15 s Flask); cold is reported.

    .venv/bin/python scripts/bench_boot.py [--apps express-mvc,flaskr]
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

from django.conf import settings  # noqa: E402

from repositories.hosts.local import LocalGitHost  # noqa: E402
from tests.boot_apps import RECIPES, app_git_repo  # noqa: E402
from verification.boot.app import booted  # noqa: E402

GOALS = {"express-mvc": 20.0, "flaskr": 15.0}


def boot_once(host: LocalGitHost, commit: str, name: str) -> tuple[float, float, float]:
    """(wall seconds to a ready app, install seconds, start seconds)."""
    started = time.monotonic()
    with booted(host, commit, RECIPES[name], {}) as app:
        return time.monotonic() - started, app.install_s, app.boot_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", default=",".join(RECIPES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="amtp-bench-boot-") as scratch:
        settings.AMTP_BOOT_CACHE_DIR = Path(scratch) / "cache"  # cold: nothing cached yet
        for name in args.apps.split(","):
            host = LocalGitHost("bench/" + name, app_git_repo(name, Path(scratch) / name))
            commit = host.resolve_ref("main")
            cold = boot_once(host, commit, name)
            warm = boot_once(host, commit, name)
            for label, (wall, install, start) in (("cold", cold), ("warm", warm)):
                print(
                    f"{name} {label}: {wall:.1f} s (install {install:.1f} s, start {start:.1f} s)"
                )
            print(f"RATIO boot_cold_{name}_s: {cold[0]:.1f}")
            print(f"RATIO boot_warm_{name}_s: {warm[0]:.1f} (goal ≤ {GOALS[name]:.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
