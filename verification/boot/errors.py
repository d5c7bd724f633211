"""Errors of booting a repository's app: finding its recipe, and running it.

Each is final for the run (no retry changes a repository's files or settings); the message
names what was found and the repository settings that would make it bootable."""

from __future__ import annotations

from amtp_site.errors import NonRetryableError


class RecipeError(NonRetryableError):
    """No recipe could be made for the repository's app (the message says why)."""


class RecipeNotFound(RecipeError):
    """Nothing in the repository says how its app starts, and its settings do not either."""


class RecipeUnsupported(RecipeError):
    """The repository declares its app in a way AMTP cannot run (a compose file, a Dockerfile
    only, a config value computed at run time): named, with the settings to fill in."""
