"""An app recipe: how a repository's app installs and starts, found in the repository's own
files and overridden field by field by the repository's settings.

The sources, the first that exists winning (each names itself in ``AppRecipe.source``):
the Playwright config's ``webServer``; ``.devcontainer/devcontainer.json``; a ``Procfile``
``web:`` line; ``package.json`` scripts; Django, Flask, FastAPI/Starlette with their
dependency files (:mod:`verification.boot.recipe_sources`). A compose file or a Dockerfile alone is
named as unsupported (:class:`RecipeUnsupported`), with the settings to fill in.

Reading: :func:`recipe_paths` picks, from the paths of a commit's tree, the few files the
sources look at; the caller reads them through the repository host (``files``: path → text,
missing files simply absent) and calls :func:`find_recipe`. :func:`recipe_at` does both for a
:class:`~repositories.hosts.base.RepositoryHost`. Nothing of the repository is executed here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from repositories.boot_settings import RepositoryBootSettings
from repositories.secrets import is_secret_path
from verification.boot import recipe_sources as sources
from verification.boot.errors import RecipeNotFound, RecipeUnsupported

FROM_SETTINGS = "repository settings"
PYTHON_COMMAND = r"(^|[\s;&|(])(python3?|pip3?|flask|uvicorn|gunicorn|hypercorn|daphne)(\s|$)"
FILE_LIMIT = 256 * 1024  # a recipe file larger than this is not a config a person wrote
SETTINGS_TO_FILL = (
    "start command and port (and install commands, if any) in the repository's boot settings"
)


@dataclass(frozen=True)
class AppRecipe:
    source: str  # shown to users: "from playwright.config.ts webServer", "repository settings"
    start: str  # shell command that starts the app, run from `workdir`
    port: int  # the port the app listens on (inside the box, loopback)
    ready_path: str = "/"  # GET this until it answers < 500
    install: tuple[str, ...] = ()  # shell commands, in order, run from `workdir`
    env: tuple[tuple[str, str], ...] = ()  # plain (non-secret) environment
    secret_env: tuple[str, ...] = ()  # NAMES whose values come from encrypted settings / worker env
    services: tuple[str, ...] = ()  # subset of ("postgres", "valkey")
    seed: str | None = None  # command run once after the services are up and before start
    workdir: str = "."  # relative to the repository root
    lock_files: tuple[str, ...] = ()  # files whose content keys the dependency cache

    @property
    def uses_python(self) -> bool:
        """True when a command runs Python or a Python tool (the box then gives it a venv,
        as a CI job gets setup-python: Debian's own python3 takes no pip install)."""
        commands = " ".join([self.start, self.seed or "", *self.install])
        return re.search(PYTHON_COMMAND, commands) is not None

    @property
    def url(self) -> str:
        """Where the app answers, as the specs and the generated config name it."""
        return f"http://localhost:{self.port}"

    def as_config(self) -> dict:
        """The recipe as JSON (run page, API, artifacts): no secret in it, only names."""
        shown = dataclasses.asdict(self)
        shown["env"] = dict(self.env)
        return {**shown, "url": self.url}


def recipe_paths(tree_paths: Iterable[str]) -> list[str]:
    """The paths of a commit's tree that :func:`find_recipe` reads (secret files never)."""
    return [p for p in tree_paths if sources.wanted(p) and not is_secret_path(p)]


def recipe_at(host, commit_sha: str, overrides: RepositoryBootSettings | None) -> AppRecipe:
    """The recipe of ``host``'s repository at ``commit_sha`` (files read through the host)."""
    entries = {e.path: e for e in host.tree(commit_sha)}
    files = {}
    for path in recipe_paths(entries):
        if entries[path].size <= FILE_LIMIT:
            files[path] = host.read_file(commit_sha, path).decode("utf-8", errors="replace")
    return find_recipe(files, overrides)


def find_recipe(files: Mapping[str, str], overrides: RepositoryBootSettings | None) -> AppRecipe:
    """The recipe the repository's ``files`` declare, with ``overrides`` applied field by
    field. RecipeUnsupported / RecipeNotFound (non-retryable) name what was found and the
    settings to fill in, unless the settings alone give a start command and a port."""
    try:
        found = sources.first_recipe(files)
    except RecipeUnsupported:
        if overrides is None or overrides.start is None or overrides.port is None:
            raise
        found = None
    if found is None:
        if overrides is None or overrides.start is None or overrides.port is None:
            raise RecipeNotFound(
                f"no app recipe found: looked for {', '.join(sources.LOOKED_FOR)}; "
                f"set the {SETTINGS_TO_FILL}",
                fields=["boot_start", "boot_port"],
            )
        return _from_settings(overrides)
    return _apply(AppRecipe(**found), overrides)


def _from_settings(overrides: RepositoryBootSettings) -> AppRecipe:
    return AppRecipe(
        source=FROM_SETTINGS,
        start=overrides.start,
        port=overrides.port,
        ready_path=overrides.ready_path or "/",
        install=overrides.install or (),
        secret_env=overrides.secret_env,
        services=overrides.services or (),
        seed=overrides.seed,
        workdir=overrides.workdir or ".",
    )


def _apply(recipe: AppRecipe, overrides: RepositoryBootSettings | None) -> AppRecipe:
    if overrides is None or not overrides.fields:
        return recipe
    changes = {n: getattr(overrides, n) for n in overrides.fields}
    if "workdir" in changes and changes["workdir"] != recipe.workdir:
        changes["lock_files"] = ()  # the found lock files belong to the found folder
    if "port" in changes:  # a PORT the found recipe set for its port follows the new one
        env = tuple((k, str(changes["port"]) if k == "PORT" else v) for k, v in recipe.env)
        changes["env"] = env
    shown = ", ".join(overrides.fields)
    return dataclasses.replace(
        recipe, **changes, source=f"{recipe.source}; {shown} from {FROM_SETTINGS}"
    )
