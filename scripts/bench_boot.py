"""BootApp's cost per real app: each vendored app of ``tests/fixtures/realworld`` committed to
a local git repository and booted in the sandbox as a run with no target URL boots it (its
recipe found in its files, with the repository settings ``realworld_start.boot_settings``
gives), twice: with an empty dependency cache (cold: the install through the registries'
proxy, and a build where the recipe has one) and again (warm: the installed dependencies and
the build restored from the cache). Prints per app the wall time to a ready app, split into
install and start, and ``RATIO boot_warm_<app>_s`` (goals: ≤ 20 s for a Node app, ≤ 15 s for
a Flask app; others and cold are reported).

    .venv/bin/python scripts/bench_boot.py [--apps express-mvc,flaskr]
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
sys.path.insert(0, str(ROOT / "scripts"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from realworld_start import boot_settings  # noqa: E402

from repositories.hosts.local import LocalGitHost  # noqa: E402
from tests.gitrepo import make_git_repo  # noqa: E402
from tests.realworld_apps import SUITE, app_repository  # noqa: E402
from verification.boot.app import booted  # noqa: E402
from verification.boot.errors import RecipeError  # noqa: E402
from verification.boot.failures import BootFailed  # noqa: E402
from verification.boot.recipe import AppRecipe, recipe_at  # noqa: E402

NODE_GOAL_S, FLASK_GOAL_S = 20.0, 15.0


def goal(recipe: AppRecipe) -> float | None:
    """The issue's goal for the app's stack: Flask, Node; None for the others."""
    if "flask" in recipe.start:
        return FLASK_GOAL_S
    return None if recipe.uses_python else NODE_GOAL_S


def boot_once(host: LocalGitHost, commit: str, recipe: AppRecipe) -> tuple[float, float, float]:
    """(wall seconds to a ready app, install seconds, start seconds)."""
    started = time.monotonic()
    with booted(host, commit, recipe, {}) as app:
        return time.monotonic() - started, app.install_s, app.boot_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", default=",".join(SUITE))
    args = parser.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="amtp-bench-boot-") as scratch:
        settings.AMTP_BOOT_CACHE_DIR = Path(scratch) / "cache"  # cold: nothing cached yet
        for name in args.apps.split(","):
            make_git_repo(Path(scratch) / name, app_repository(name))
            host = LocalGitHost("bench/" + name, Path(scratch) / name)
            commit = host.resolve_ref("main")
            try:
                recipe = recipe_at(host, commit, boot_settings().get(name))
                cold = boot_once(host, commit, recipe)
                warm = boot_once(host, commit, recipe)
            except (RecipeError, BootFailed) as exc:
                failed += 1
                print(f"RATIO boot_warm_{name}_s: did not boot: {' '.join(str(exc).split())[:300]}")
                continue
            print(f"{name}: {recipe.source}")
            for label, (wall, install, start) in (("cold", cold), ("warm", warm)):
                print(
                    f"{name} {label}: {wall:.1f} s (install {install:.1f} s, start {start:.1f} s)"
                )
            print(f"RATIO boot_cold_{name}_s: {cold[0]:.1f}")
            target = goal(recipe)
            shown = f" (goal ≤ {target:.0f})" if target else ""
            print(f"RATIO boot_warm_{name}_s: {warm[0]:.1f}{shown}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
