"""Errors of the contracts: an object that breaks its JSON Schema, or an agent's own rule."""

from __future__ import annotations

from amtp_site.errors import NonRetryableError


class SchemaValidationError(NonRetryableError):
    """Parsed output (or any input) breaks its JSON Schema contract; lists every violation."""

    def __init__(self, schema: str, violations: list[dict[str, str]], message: str = "") -> None:
        lines = "; ".join(f"{v['path']}: {v['message']} ({v['rule']})" for v in violations)
        super().__init__(
            message or f"{schema}: {len(violations)} violation(s): {lines}",
            schema=schema,
            violations=violations,
        )
        self.schema = schema
        self.violations = violations


class ContractViolation(NonRetryableError):
    """Output passes its schema but breaks an agent's own contract rule (e.g. an unsafe path)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message, problems=problems or [message])
        self.problems = problems or [message]
