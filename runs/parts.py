"""What an app above ``runs`` shows on a run's pages (approvals: the run's approvals).

The app registers its part from its AppConfig.ready(), as it connects to :mod:`runs.signals`:
``runs`` shows the part without importing the app, so the layers of .importlinter hold in
code, not only on paper. A part may add

- ``detail``: the API's run detail with the part's field, a subclass of
  ``runs.api_schemas.RunDetailOut`` (one part at most: ``runs.api`` answers with it);
- ``context(run)``: the context document's lines, (decisions taken, actions pending);
- ``admin_section(request, run)``: a section of the run's admin page, a dict with the
  ``template`` to include (given the dict as ``section``), or None to show nothing.

Registered before the URLconf is loaded (the apps are ready first), so ``runs.api`` sees them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunPart:
    name: str
    detail: type | None = None
    context: Callable[[Any], tuple[list[str], list[str]]] | None = None
    admin_section: Callable[[Any, Any], dict | None] | None = None


_parts: dict[str, RunPart] = {}


def register(part: RunPart) -> None:
    _parts[part.name] = part


def registered() -> list[RunPart]:
    return list(_parts.values())
