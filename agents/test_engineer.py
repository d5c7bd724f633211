"""Agent 3, the Test Engineer: test cases → Playwright or Maestro files and PR metadata; and,
in a session of its own, the healing of the tests that failed against the running app.

The files are untrusted: agents.file_policy checks paths, sizes and syntax before anything is
stored. Branch names in the answer are never trusted: the run's own replace them. A heal's
shape is checked here (agents.spec_blocks): only the files and failing tests it was given,
none deleted, none added. Whether each healed test still expects what it expected is the rule
of agents.expectations, judged test by test where the heal is applied (verification), so
one weakening heal is refused without losing the honest ones beside it.
"""

from __future__ import annotations

from typing import Any

from agents import spec_blocks
from agents.file_policy import check_generated_files
from agents.runner import Agent, AgentContext
from schemas.errors import ContractViolation


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


# --- the healing session -------------------------------------------------------------------

HEAL_NEW_FILE = "healing may only change the files it was given"
HEAL_DELETED = "a failing test was deleted; fix it or leave it unchanged (AMTP quarantines it)"
HEAL_TOUCHED_PASSING = "a test that passed was changed or removed; change failing tests only"
HEAL_NEW_TEST = "healing fixes failing tests; it does not add new ones"


class HealingTestEngineer(TestEngineer):
    """The Test Engineer in a fresh session, asked to fix the tests that failed against the
    running app. Its answer may change only the failing tests, and only honestly."""

    name = "test_engineer_heal"

    @property
    def input_schema(self) -> str:
        return "verification/heal_input"

    @property
    def output_schema(self) -> str:
        return "verification/heal_output"

    def assemble(self, answer: Any, ctx: AgentContext) -> Any:
        return answer

    def check(self, output: dict[str, Any], ctx: AgentContext) -> None:
        given: dict[str, str] = ctx.extra["files"]
        failing: dict[str, set[str]] = ctx.extra["failing"]
        problems = []
        if output["run_id"] != ctx.run_id:
            problems.append(f"$.run_id: must be the input's run_id {ctx.run_id}")
        for entry in output["files"]:
            path = entry["path"]
            if path not in given:
                problems.append(f"{path}: {HEAL_NEW_FILE}")
            else:
                problems += [
                    f"{path}: {p}"
                    for p in heal_problems(given[path], entry["contents"], failing[path])
                ]
        if output["files"]:
            try:
                check_generated_files(
                    output["files"], framework="playwright", test_dir=ctx.extra["test_dir"]
                )
            except ContractViolation as exc:
                problems.extend(exc.problems)
        if problems:
            raise ContractViolation("the heal breaks the healing rules", problems)


def heal_problems(original: str, healed: str, failing: set[str]) -> list[str]:
    """Why ``healed`` is not a heal of the ``failing`` tests of ``original`` in shape: a test
    added, deleted, or a passing one touched (what a healed test expects is judged apart)."""
    before = {b.title: b for b in spec_blocks.blocks(original)}
    after = {b.title: b for b in spec_blocks.blocks(healed)}
    problems = [f"test {t!r}: {HEAL_NEW_TEST}" for t in after.keys() - before.keys()]
    for title, old in before.items():
        new = after.get(title)
        if title not in failing:
            if new is None or new.text != old.text:
                problems.append(f"test {title!r}: {HEAL_TOUCHED_PASSING}")
        elif new is None:
            problems.append(f"test {title!r}: {HEAL_DELETED}")
    return problems
