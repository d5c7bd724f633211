"""Model fields shared by every app's models.

What a row left without a value gets is the same in Python (``default``) and in PostgreSQL
(``db_default``: a row inserted without the column, by older code or raw SQL, gets it too).
Empty is ``""`` or ``[]``, never NULL; only a reference to another row is NULL when empty.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import models


def optional_char(*args, **kwargs) -> models.CharField:
    """A CharField that may be empty (``max_length`` and ``help_text`` as usual)."""
    return models.CharField(*args, blank=True, default="", db_default="", **kwargs)


def optional_text(*args, **kwargs) -> models.TextField:
    """A TextField that may be empty."""
    return models.TextField(*args, blank=True, default="", db_default="", **kwargs)


def optional_list(*args, default: Callable[[], list] = list, **kwargs) -> models.JSONField:
    """A JSON list that may be empty; ``default`` (a module-level function, which migrations
    name) makes a new row's list, empty unless it says otherwise."""
    return models.JSONField(*args, default=default, blank=True, db_default=default(), **kwargs)


def optional_reference(to, *args, on_delete, **kwargs) -> models.ForeignKey:
    """A ForeignKey that may be empty (NULL)."""
    return models.ForeignKey(to, *args, on_delete=on_delete, null=True, blank=True, **kwargs)


def flag(*args, default: bool, **kwargs) -> models.BooleanField:
    """A BooleanField whose default PostgreSQL applies too."""
    return models.BooleanField(*args, default=default, db_default=default, **kwargs)
