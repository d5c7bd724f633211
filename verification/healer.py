"""The Test Engineer's healing session, run like every agent: in a fresh process of the
worker's agent pool (``sessions``), so no heap, client or conversation of the verifying worker
reaches it, and a new provider session starts inside it (``agents.service.run_test_healer``).
The pool also bounds how many LLM sessions the worker holds at once."""

from __future__ import annotations

from concurrent.futures import Executor

from amtp_site.errors import AmtpError, ConfigurationError

NO_AGENT_POOL = "healing needs the worker's agent process pool; none was given"


def heal_session(payload: dict, test_dir: str, max_seconds: float) -> tuple[str, dict, dict]:
    """In the agent process: ("ok", output, meta), or ("error", what was said, {})."""
    from django.conf import settings

    from agents.service import run_test_healer

    # The stage's budget bounds the session too (checked before each model call); the
    # process is this task's alone, so the setting changes nowhere else.
    settings.AMTP_AGENT_MAX_SECONDS = min(settings.AMTP_AGENT_MAX_SECONDS, max_seconds)
    try:
        result = run_test_healer(payload, test_dir=test_dir)
    except AmtpError as exc:  # typed errors do not all survive pickling: send their words
        said = {"type": type(exc).__name__, "message": exc.message}
        return "error", {**said, "problems": exc.details.get("problems") or []}, {}
    return "ok", result.output, result.meta


def heal_in(
    sessions: Executor | None, payload: dict, *, test_dir: str, max_seconds: float, meta: list
) -> dict:
    """The heal output for ``payload``, from a session in ``sessions``; a refused or failed
    heal raises an AmtpError (the tests stay failing). The session's meta (provider, model,
    usage, pid) goes to ``meta``."""
    if sessions is None:
        raise ConfigurationError(NO_AGENT_POOL)
    future = sessions.submit(heal_session, payload, test_dir, max_seconds)
    outcome, output, info = future.result()
    if outcome == "error":
        raise AmtpError(f"{output['type']}: {output['message']}", problems=output["problems"])
    meta.append(info)
    return output
