"""Why an app AMTP started itself (BootApp) did not come up: one class per way it fails, each
naming the command, its exit code (when it ended) and the last lines of its log, scrubbed.

They are VerificationErrors: like an unreachable target URL, they end the run unless the
repository opens pull requests unverified, and retrying the same commit meets the same recipe.
"""

from __future__ import annotations

from verification.errors import VerificationError


class BootFailed(VerificationError):
    """The app could not be booted from its recipe."""

    what = "boot"

    def __init__(self, problem: str, *, command: str, exit_code: int | None, log: str) -> None:
        code = "" if exit_code is None else f" (exit code {exit_code})"
        lines = f"; last lines of its log:\n{log}" if log.strip() else "; it printed nothing"
        super().__init__(
            f"{self.what} command `{command}`{code}: {problem}{lines}",
            command=command,
            exit_code=exit_code,
            log=log,
        )


class InstallFailed(BootFailed):
    """An install command of the recipe exited with an error (or ran out of time)."""

    what = "install"


class AppExited(BootFailed):
    """The start command ended before the app answered."""

    what = "start"


class AppNotReady(BootFailed):
    """The app listened on its port, but its readiness path never answered below 500 in time."""

    what = "start"


class PortNeverOpened(BootFailed):
    """The start command kept running, but nothing ever listened on the recipe's port."""

    what = "start"


class SeedFailed(BootFailed):
    """The recipe's seed command (run once after the services, before the start) failed."""

    what = "seed"
