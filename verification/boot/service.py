"""The BootApp stage's domain: whether a run starts its app itself, the boot that proves the
recipe works (its ``app_boot`` artifact: the recipe used, install and boot times, the scrubbed
log tail, or the error), and the live app ExploreApp and VerifyTests (healing included) run
against.

A run with neither a target URL nor a preview, of a web app, boots its app. The app lives
only inside the activity that uses it: BootApp boots it once (installing, or restoring from
the cache) and stops it; ExploreApp and VerifyTests each boot it again from the warm cache
and stop it when they end, however they end. No app process is kept between activities, so
a cancel, a worker kill or a retry on another worker never leaves one behind.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator

from django.conf import settings

from repositories.boot_settings import boot_settings_of
from repositories.credentials import app_environment
from repositories.hosts import host_for
from runs.models import Artifact, ArtifactKind, Run
from verification import sandbox
from verification.boot.app import Booted, booted
from verification.boot.errors import RecipeNotFound
from verification.boot.recipe import AppRecipe, recipe_at

APP_BOOT_SCHEMA = "boot/app_boot"
STOP_POLL_S = 0.2
BOOTED, FAILED, NO_RECIPE = "booted", "failed", "no_recipe"
NOT_BOOTED = "the app did not boot ({error}): {what}"
NO_APP_NOTE = "the tests are written without a live app (the repository opens PRs anyway)"


def boot_skip_reason(run: Run) -> str:
    """Why ``run`` does not start its app ("" when it does)."""
    if run.target_url or run.repository.preview_url:
        return "the run has a target URL: AMTP does not start the app"
    if run.target_framework != "playwright":
        return "a mobile app: nothing for AMTP to start"
    if not settings.AMTP_BOOT_APPS:
        return "starting apps is turned off on this worker (AMTP_BOOT_APPS=false)"
    return ""


def boots_app(run: Run) -> bool:
    """Whether ``run`` has (or is about to have) an app of its own to run against: it
    starts its app, and its boot did not end without one."""
    if boot_skip_reason(run):
        return False
    boot = boot_of(run)
    return boot is None or boot["status"] == BOOTED


def boot_of(run: Run) -> dict | None:
    """The run's ``app_boot`` artifact content (None before BootApp stored it)."""
    found = Artifact.objects.filter(run=run, kind=ArtifactKind.APP_BOOT)
    return found.values_list("content", flat=True).first()


def not_booted_reason(run: Run) -> str:
    """Why the run has no app of its own ("" when it has one, or does not start one)."""
    boot = boot_of(run)
    if boot is None or boot["status"] == BOOTED:
        return ""
    return NOT_BOOTED.format(error=boot["error"]["error"], what=boot["error"]["message"])


def recipe_of(run: Run) -> AppRecipe:
    """The run's recipe at its commit (RecipeNotFound / RecipeUnsupported when none)."""
    repository = run.repository
    return recipe_at(host_for(repository), run.commit_sha, boot_settings_of(repository))


@contextlib.contextmanager
def booted_for(run: Run, recipe: AppRecipe | None = None) -> Iterator:
    """The run's app running (verification.boot.app.Booted) while the block runs."""
    recipe = recipe or recipe_of(run)
    wanted = set(recipe.secret_env)
    secrets = {k: v for k, v in app_environment(run.repository).items() if k in wanted}
    with booted(host_for(run.repository), run.commit_sha, recipe, secrets) as app:
        yield app


def boot_content(run: Run) -> dict:
    """BootApp's artifact: the app booted once, then stopped (or why it was not)."""
    try:
        recipe = recipe_of(run)
    except RecipeNotFound as exc:
        return {"status": NO_RECIPE, "error": exc.to_dict()}
    with booted_for(run, recipe) as app:
        return {"status": BOOTED, **app.summary()}


@contextlib.contextmanager
def _stopping(app, stop: Callable[[], bool]) -> Iterator[None]:
    done = threading.Event()

    def watch() -> None:
        while not done.wait(STOP_POLL_S):
            if stop():
                app.stopping = True  # not a crash to recover from
                sandbox.stop(app.process)
                return

    # The caller's context: ``stop`` may be Temporal's activity.is_cancelled, which reads it.
    context = contextvars.copy_context()
    watcher = threading.Thread(target=context.run, args=(watch,), name="amtp-boot-stop")
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def booted_note(content: dict) -> str:
    """The stage's note: where the recipe came from and how long the app took."""
    cached = " (dependencies from the cache)" if content["dependencies_from_cache"] else ""
    return (
        f"{content['recipe']['source']}: installed in {content['install_s']:.1f} s{cached}, "
        f"ready in {content['boot_s']:.1f} s"
    )


@contextlib.contextmanager
def live_app(run: Run, stop: Callable[[], bool] = lambda: False) -> Iterator[Booted | None]:
    """While the block runs, ``run`` (this object, in memory only) targets its own app when
    it boots one: ``target_url`` is the app's loopback URL, which its repository's allowed
    hosts name for the block; the app (verification.boot.app.Booted: restartable) is the block's
    value. Otherwise nothing changes (None). Once ``stop()`` (the run is being cancelled)
    the app is stopped at once, not when the block's browser gives up on it."""
    if not boots_app(run):
        yield None
        return
    with booted_for(run) as app, _stopping(app, stop):
        host = app.url.removeprefix("http://")
        repository = run.repository
        saved = run.target_url, repository.allowed_hosts
        run.target_url = app.url
        repository.allowed_hosts = [*(repository.allowed_hosts or []), host]
        try:
            yield app
        finally:
            run.target_url, repository.allowed_hosts = saved
