"""The ``OWNER/NAME [--local PATH]`` argument of ``launch_run`` and ``verify_tests``."""

import subprocess
from collections.abc import Callable
from pathlib import Path

from django.core.management.base import CommandError

from repositories.errors import RepositoryInvalid
from repositories.models import Host, Repository
from repositories.names import full_name_problem
from repositories.services import repository_create


def repository_arg(full_name: str, local: str, say: Callable[[str], None]) -> Repository:
    """The registered repository ``full_name``; with ``local``, a local git repository,
    registered as host ``local`` when new. CommandError saying what to do otherwise."""
    if problem := full_name_problem(full_name):
        raise CommandError(RepositoryInvalid({"full_name": [problem]}).message)
    repository = Repository.objects.filter(full_name=full_name).first()
    if local:
        path = Path(local).expanduser().resolve()
        if not (path / ".git").exists() and not (path / "HEAD").exists():
            raise CommandError(f"--local {local}: not a git repository")
        if repository is None:
            repository = _register(full_name, path, say)
        elif repository.host != Host.LOCAL or Path(repository.local_path) != path:
            raise CommandError(
                f"{full_name} is already registered with host {repository.host} "
                f"at {repository.local_path or 'GitHub'}"
            )
    if repository is None:
        raise CommandError(
            f"unknown repository {full_name}: register it in admin or pass --local PATH"
        )
    return repository


def _register(full_name: str, path: Path, say: Callable[[str], None]) -> Repository:
    """Registered by the service admin saves with, so its rules hold here too."""
    head = subprocess.run(
        ["git", "-C", str(path), "symbolic-ref", "--short", "HEAD"],
        capture_output=True,
        text=True,
    )
    try:
        repository = repository_create(
            full_name=full_name,
            host=Host.LOCAL,
            local_path=str(path),
            default_branch=head.stdout.strip() or "main",
        )
    except RepositoryInvalid as exc:
        raise CommandError(exc.message) from exc
    say(f"registered {full_name} -> {path}")
    return repository
