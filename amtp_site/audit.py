"""The audit trail: who did what to which object, when, and through which surface.

Entries are Django admin ``LogEntry`` rows, so an object's History page in admin lists them and
the admin's "Audit trail" list filters them by user, action, object type, surface and time.
Services record (never the surfaces), so a decision made through the API is recorded exactly
like one made in admin. Every entry also goes to the ``amtp.audit`` logger.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.contrib.admin.models import ADDITION, CHANGE, LogEntry

logger = logging.getLogger("amtp.audit")

MESSAGE = "{what} (via {surface}, as {name})"
SURFACE_MARK = "(via {surface}, "  # what the admin's surface filter looks for
SURFACES = ("admin", "api")

__all__ = ["ADDITION", "CHANGE", "Actor", "record", "refused"]


@dataclass(frozen=True)
class Actor:
    """Who acts. ``user`` files the entry (a LogEntry needs a user; for a service token it is
    the person who minted it), ``name`` is how they appear (e.g. "ops (API token amtp_ab…)"),
    ``surface`` is where they acted: one of :data:`SURFACES`."""

    user: Any
    name: str
    surface: str

    @classmethod
    def admin(cls, request) -> Actor:
        return cls(request.user, request.user.get_username(), "admin")


def record(actor: Actor | None, obj, what: str, *, flag: int = CHANGE) -> None:
    """Record ``what`` happened to ``obj``. Without an actor (trusted code: the workflow, a
    management command, a test) there is nobody to file it under: it is only logged."""
    if actor is None:
        logger.info("%s %s: %s (no acting user)", obj._meta.label, obj.pk, what)
        return
    message = MESSAGE.format(what=what, surface=actor.surface, name=actor.name)
    logger.info("%s %s: %s", obj._meta.label, obj.pk, message)
    if actor.user is None:
        return
    LogEntry.objects.log_actions(
        user_id=actor.user.pk,
        queryset=[obj],
        action_flag=flag,
        change_message=message,
        single_object=True,
    )


def refused(surface: str, what: str) -> None:
    """A refused credential that names nobody trusted (a forged or foreign token): logged to
    ``amtp.audit`` only, as no user can file it and a row per forgery would let anyone fill
    the table."""
    logger.warning("refused (via %s): %s", surface, what)
