"""What a start-up probe found (``manage.py check_providers``: the LLM provider and GitHub)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    level: str  # "ok" | "warning" | "error"
    text: str
