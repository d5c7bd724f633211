"""ExploreApp for the tests that serve a live app on loopback.

``explore_loopback`` explores with the suite's runner, from ``/`` unless told otherwise;
``bounds`` are a small app's bounds with a test's overrides; ``API_BOUNDS`` visit an API's
start paths only.
"""

from __future__ import annotations

from pathlib import Path

from verification.exploration.explore import Bounds, explore
from verification.service import runner_from_settings

LOOPBACK = ["127.0.0.1"]  # the apps under test listen on loopback


def bounds(**overrides) -> Bounds:
    values = dict(max_pages=30, max_depth=3, time_s=60, page_timeout_s=15, max_bytes=512 << 10)
    return Bounds(**{**values, **overrides})


DEFAULT_BOUNDS = bounds()
# An API: its start paths only, no link followed.
API_BOUNDS = Bounds(max_pages=5, max_depth=0, time_s=40, page_timeout_s=10, max_bytes=1 << 20)


def explore_loopback(
    url: str,
    shots_dir: Path,
    *,
    start_paths: list[str] | tuple[str, ...] = ("/",),
    bounds: Bounds = DEFAULT_BOUNDS,
    allow_hosts: list[str] = LOOPBACK,
    **options,
) -> dict:
    """The app map of ``url``; ``options`` (``tag``, ``login``, ``writes``…) go to ``explore``."""
    return explore(
        url,
        allow_hosts=list(allow_hosts),
        runner=runner_from_settings(),
        bounds=bounds,
        shots_dir=shots_dir,
        start_paths=list(start_paths),
        **options,
    )
