"""Agent 3, the Test Engineer: test cases → Playwright or Maestro files and PR metadata.

The files are untrusted: agents.file_policy checks paths, sizes and syntax before anything is
stored. Branch names in the answer are never trusted: the run's own replace them.
"""

from __future__ import annotations

from typing import Any

from agents.file_policy import check_generated_files
from agents.runner import Agent, AgentContext
from amtp_site.errors import ContractViolation


class TestEngineer(Agent):
    __test__ = False  # a product class, not a pytest test class

    name = "test_engineer"

    def assemble(self, answer: Any, ctx: AgentContext) -> Any:
        if isinstance(answer, dict):
            answer = {
                **answer,
                "base_branch": ctx.extra["base_branch"],
                "head_branch": ctx.extra["head_branch"],
            }
        return answer

    def check(self, output: dict[str, Any], ctx: AgentContext) -> None:
        problems = []
        if output["run_id"] != ctx.run_id:
            problems.append(f"$.run_id: must be the envelope's run_id {ctx.run_id}")
        if output["framework"] != ctx.extra["framework"]:
            problems.append(f"$.framework: must be {ctx.extra['framework']!r}, as asked")
        try:
            check_generated_files(
                output["files"], framework=ctx.extra["framework"], test_dir=ctx.extra["test_dir"]
            )
        except ContractViolation as exc:
            problems.extend(exc.problems)
        if problems:
            raise ContractViolation("generated files break the file policy", problems)
