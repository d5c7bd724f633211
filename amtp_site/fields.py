"""Model fields that may be left empty, shared by every app's models.

Empty is ``""`` or ``[]``, never NULL, both in Python (``default``) and in PostgreSQL
(``db_default``: a row inserted without the column, by older code or raw SQL, gets it too).
"""

from __future__ import annotations

from django.db import models


def optional_char(*args, **kwargs) -> models.CharField:
    """A CharField that may be empty (``max_length`` and ``help_text`` as usual)."""
    return models.CharField(*args, blank=True, default="", db_default="", **kwargs)


def optional_text(*args, **kwargs) -> models.TextField:
    """A TextField that may be empty."""
    return models.TextField(*args, blank=True, default="", db_default="", **kwargs)


def optional_list(*args, **kwargs) -> models.JSONField:
    """A JSON list that may be empty."""
    return models.JSONField(*args, default=list, blank=True, db_default=[], **kwargs)
