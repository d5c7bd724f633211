"""Dataclasses whose fields are settings: each field is the setting named by a prefix and the
field's name in capitals (``Limits.cpu_s``: ``AMTP_SANDBOX_CPU_S``)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

from django.conf import settings

T = TypeVar("T")


def from_settings(cls: type[T], prefix: str, **given: Any) -> T:
    """A ``cls`` with each field read from the setting ``prefix`` + its name in capitals, read
    now (a test's override counts); ``given`` are the fields whose value comes from elsewhere:
    a setting of another name, or a figure computed from settings."""
    named = (f.name for f in fields(cls) if f.name not in given)
    return cls(**{name: getattr(settings, prefix + name.upper()) for name in named}, **given)
