"""What an agent process runs before and around its task, kept free of Django at import: the
process unpickles these before anything is set up (its template may have failed to preload).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from multiprocessing import reduction

from amtp_site.child import django_setup
from amtp_site.errors import ConfigurationError


class WorkerStdio:
    """The worker's stdout and stderr as they are now, handed to an agent process as it
    starts (pickled with its start-up arguments): a forked one would otherwise write where the
    template's were when it started, not where the worker's are now (tests capture them)."""

    def __reduce__(self):
        return _adopt_stdio, tuple(_dup_if_open(fd) for fd in (1, 2))


def _dup_if_open(fd: int):
    try:
        os.fstat(fd)
    except OSError:  # closed (a daemon without output): the child keeps the template's
        return None
    return reduction.DupFd(fd)


def _adopt_stdio(*fds) -> None:
    for target, fd in enumerate(fds, start=1):
        if fd is not None:
            os.dup2(fd.detach(), target)


def agent_process_setup(_stdio: WorkerStdio | None) -> None:
    """The pool's initializer."""
    gc.enable()  # the template turned it off and froze what it made (agent_template.py)
    django_setup()  # a no-op after the template's


def in_agent_process(template: str, fn, /, *args, **kwargs):
    """``fn(*args, **kwargs)`` in an agent process, once its template is known to have
    preloaded: a template that could not (a module that fails to import) fails every task
    with a ConfigurationError naming the module, instead of letting processes start cold."""
    problem = template_problem(template)
    if problem:
        raise ConfigurationError(problem)
    return fn(*args, **kwargs)


def template_problem(template: str) -> str:
    """What keeps agent processes from starting from ``template`` ('' if nothing). The
    forkserver skips a preload module that raises ImportError without a word, so a template
    missing from this process is imported here again, for its error."""
    module = sys.modules.get(template)
    if module is None:
        try:
            importlib.import_module(template)
        except Exception as exc:
            return f"the agent process template {template} could not be imported: {exc!r}"
        return f"the agent process template {template} was not preloaded"
    return getattr(module, "PRELOAD_ERROR", "")
