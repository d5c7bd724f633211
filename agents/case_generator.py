"""Agent 2, the Test Case Generator: crawler output + depth level → prioritised test cases.

The depth rule (also in the agent's prompt and docs/agents.md):

    depth     priorities allowed               at most
    smoke     critical                           5
    core      critical, high                    15
    standard  critical, high, medium            40
    deep      critical, high, medium, low      100
"""

from __future__ import annotations

from typing import Any

from agents.runner import Agent, AgentContext
from schemas.errors import ContractViolation

DEPTH_RULES = {
    "smoke": (("critical",), 5),
    "core": (("critical", "high"), 15),
    "standard": (("critical", "high", "medium"), 40),
    "deep": (("critical", "high", "medium", "low"), 100),
}


class TestCaseGenerator(Agent):
    __test__ = False  # a product class, not a pytest test class

    name = "test_case_generator"

    def check(self, output: dict[str, Any], ctx: AgentContext) -> None:
        problems = []
        if output["run_id"] != ctx.run_id:
            problems.append(f"$.run_id: must be the envelope's run_id {ctx.run_id}")
        allowed, cap = DEPTH_RULES[ctx.extra["depth_level"]]
        cases = output["test_cases"]
        if len(cases) > cap:
            problems.append(
                f"$.test_cases: {len(cases)} cases, at most {cap} at depth {ctx.extra['depth_level']}"
            )
        seen = set()
        for i, case in enumerate(cases):
            if case["id"] in seen:
                problems.append(
                    f"$.test_cases[{i}].id: {case['id']!r} is used twice; ids are unique"
                )
            seen.add(case["id"])
            if case["priority"] not in allowed:
                problems.append(
                    f"$.test_cases[{i}].priority: {case['priority']!r} is not allowed at depth "
                    f"{ctx.extra['depth_level']} (allowed: {', '.join(allowed)})"
                )
        if problems:
            raise ContractViolation("test cases break the depth and id rules", problems)
