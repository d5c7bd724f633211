"""CHECK constraints shared by every app's models."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


def one_of(field: str, choices: type[models.TextChoices], name: str) -> models.CheckConstraint:
    """``field`` must hold one of ``choices``: PostgreSQL refuses anything else, raw SQL too."""
    return models.CheckConstraint(condition=Q(**{f"{field}__in": choices.values}), name=name)


def one_of_each(table: str, **fields: type[models.TextChoices]) -> list[models.CheckConstraint]:
    """``one_of`` for each field, named ``<table>_<field>_valid``."""
    return [one_of(field, choices, f"{table}_{field}_valid") for field, choices in fields.items()]
