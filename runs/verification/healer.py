"""The Test Engineer's healing session in a fresh process (spawned, Django set up anew), so no
heap, client or conversation of the verifying process reaches it; a new provider session
starts inside it (``agents.service.run_test_healer``)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

from amtp_site.child import django_setup
from amtp_site.errors import AmtpError


def _heal_in_child(payload: dict, test_dir: str, max_seconds: float) -> tuple[str, dict, dict]:
    from django.conf import settings

    from agents.service import run_test_healer

    # The stage's budget bounds the session too (checked before each model call).
    settings.AMTP_AGENT_MAX_SECONDS = min(settings.AMTP_AGENT_MAX_SECONDS, max_seconds)
    try:
        result = run_test_healer(payload, test_dir=test_dir)
    except AmtpError as exc:  # typed errors do not all survive pickling: send their words
        said = {"type": type(exc).__name__, "message": exc.message}
        return "error", {**said, "problems": exc.details.get("problems") or []}, {}
    return "ok", result.output, result.meta


def heal_in_fresh_process(
    payload: dict, *, test_dir: str, max_seconds: float, meta: list[dict]
) -> dict:
    """The heal output for ``payload``; a refused or failed heal raises an AmtpError (the
    tests stay failing). The session's meta (provider, model, usage, pid) goes to ``meta``."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context, initializer=django_setup) as pool:
        outcome, output, info = pool.submit(_heal_in_child, payload, test_dir, max_seconds).result()
    if outcome == "error":
        raise AmtpError(f"{output['type']}: {output['message']}", problems=output["problems"])
    meta.append(info)
    return output
