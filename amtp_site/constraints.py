"""CHECK constraints shared by every app's models."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


def one_of(field: str, choices: type[models.TextChoices], name: str) -> models.CheckConstraint:
    """``field`` must hold one of ``choices``: PostgreSQL refuses anything else, raw SQL too."""
    return models.CheckConstraint(condition=Q(**{f"{field}__in": choices.values}), name=name)
