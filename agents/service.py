"""Run each agent once, with a fresh provider, budgets and repair turns from settings.

These are what the Temporal activities (in a fresh child process each) and
``manage.py run_agent`` call. They return validated output + meta and persist nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
from pathlib import Path

from django.conf import settings

import schemas
from agents.case_generator import TestCaseGenerator
from agents.providers import make_provider
from agents.runner import UPSTREAM, Agent, AgentContext, AgentResult, Budgets, run_agent
from agents.test_engineer import HealingTestEngineer, TestEngineer
from amtp_site.setting_fields import from_settings


def budgets() -> Budgets:
    return from_settings(
        Budgets,
        "AMTP_",  # AMTP_MAX_INPUT_TOKENS, …
        max_seconds=settings.AMTP_AGENT_MAX_SECONDS,
        # Repository data leaves room for the prompt, the turns and the model's own text.
        context_tokens=min(settings.AMTP_CONTEXT_TOKENS, settings.AMTP_MAX_INPUT_TOKENS * 3 // 4),
    )


def peak_rss_mib() -> int:
    """This process's peak resident memory (an agent activity runs in a fresh one). Linux's
    VmHWM belongs to this program alone; ``ru_maxrss`` of a spawned process also counts the
    parent's memory at the fork, so it is only the fallback."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def _with_peak_rss(result: AgentResult) -> AgentResult:
    result.meta["peak_rss_mib"] = peak_rss_mib()
    return result


def upstream_ref(agent: str, artifact_id: str) -> dict[str, str]:
    return {
        "agent": agent,
        "artifact_id": artifact_id,
        "schema_id": schemas.schema_id(f"{agent}/output"),
    }


def run_repo_crawler(payload: dict, *, commit_sha: str, repository=None) -> AgentResult:
    """``repository``: the ``Repository`` row, handed over so that the agent process reads it
    through its host without a database query; without it, it is looked up by name."""
    from agents.crawler import crawl  # imports the MCP SDK (~1 s): only the crawler needs it

    provider = make_provider("repo_crawler")
    result = asyncio.run(
        crawl(
            payload=payload,
            commit_sha=commit_sha,
            repository=repository,
            provider=provider,
            budgets=budgets(),
            repairs=settings.AMTP_REPAIR_TURNS,
        )
    )
    return _with_peak_rss(result)


def run_test_case_generator(
    payload: dict, *, upstream_artifact_id: str, app_map: dict | None = None
) -> AgentResult:
    agent = TestCaseGenerator()
    ctx = AgentContext(run_id=payload["run_id"], extra={"depth_level": payload["depth_level"]})
    return _run_after_upstream(agent, payload, ctx, upstream_artifact_id, app_map)


def run_test_engineer(
    payload: dict,
    *,
    upstream_artifact_id: str,
    base_branch: str,
    head_branch: str,
    test_dir: str,
    app_map: dict | None = None,
) -> AgentResult:
    agent = TestEngineer()
    ctx = AgentContext(
        run_id=payload["run_id"],
        prompt_params={"test_dir": test_dir},
        extra={
            "framework": payload["target_framework"],
            "test_dir": test_dir,
            "base_branch": base_branch,
            "head_branch": head_branch,
        },
    )
    return _run_after_upstream(agent, payload, ctx, upstream_artifact_id, app_map)


def _run_after_upstream(
    agent: Agent,
    payload: dict,
    ctx: AgentContext,
    upstream_artifact_id: str,
    app_map: dict | None = None,
) -> AgentResult:
    """An agent that takes the previous agent's artifact, handed over in an envelope (with
    the run's app map beside it, when it explored its app)."""
    provider = make_provider(agent.name, output_schema=schemas.load(agent.output_schema))
    result = asyncio.run(
        run_agent(
            agent,
            payload=payload,
            ctx=ctx,
            provider=provider,
            upstream=upstream_ref(UPSTREAM[agent.name], upstream_artifact_id),
            budgets=budgets(),
            repairs=settings.AMTP_REPAIR_TURNS,
            app_map=app_map,
        )
    )
    return _with_peak_rss(result)


def run_test_healer(payload: dict, *, test_dir: str) -> AgentResult:
    """The Test Engineer's healing session (fresh provider, same budgets and repair turns): the
    failing tests of ``payload`` (``verification/heal_input``) fixed where the app says how."""
    agent = HealingTestEngineer()
    ctx = AgentContext(
        run_id=payload["run_id"],
        extra={
            "test_dir": test_dir,
            "files": {f["path"]: f["contents"] for f in payload["files"]},
            "failing": {f["path"]: {x["title"] for x in f["failures"]} for f in payload["files"]},
        },
    )
    provider = make_provider(agent.name, output_schema=schemas.load(agent.output_schema))
    return asyncio.run(
        run_agent(
            agent,
            payload=payload,
            ctx=ctx,
            provider=provider,
            budgets=budgets(),
            repairs=settings.AMTP_REPAIR_TURNS,
        )
    )
