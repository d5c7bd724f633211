"""The base of the models that moved out of the ``runs`` app."""

from __future__ import annotations

from django.db import models


class KeptInRuns(models.Model):
    """A model that moved out of ``runs`` keeps the ``runs`` app label: its table, its
    migrations (``runs/migrations``) and its permission names (``runs.add_apitoken``) stay
    as they were. A subclass's Meta extends ``KeptInRuns.Meta``."""

    class Meta:
        abstract = True
        app_label = "runs"
