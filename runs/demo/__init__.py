"""The two demo repositories `make run` creates on first start, as local git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from repositories.models import Framework, Host, Repository
from repositories.services import repository_create, repository_update
from runs.demo.content import DEMO_MOBILE, DEMO_WEB

DEMOS = {
    "web": ("demo/web", DEMO_WEB, Framework.PLAYWRIGHT),
    "mobile": ("demo/mobile", DEMO_MOBILE, Framework.MAESTRO),
}
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "AMTP demo",
    "GIT_AUTHOR_EMAIL": "demo@amtp.local",
    "GIT_COMMITTER_NAME": "AMTP demo",
    "GIT_COMMITTER_EMAIL": "demo@amtp.local",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(path: Path, *args: str) -> None:
    import os

    subprocess.run(
        ["git", "-C", str(path), *args],
        check=True,
        capture_output=True,
        env={**os.environ, **_GIT_ENV},
    )


def create_git_repository(path: Path, files: dict[str, str]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", "-b", "main")
    for name, content in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "Demo application")


def ensure_demo_repositories(folder: Path) -> dict[str, Repository]:
    found = {}
    for key, (full_name, files, framework) in DEMOS.items():
        path = folder / key
        if not (path / ".git").exists():
            create_git_repository(path, files)
        values = {
            "host": Host.LOCAL,
            "local_path": str(path),
            "default_branch": "main",
            "default_framework": framework,
            "default_depth_level": "core",
        }
        existing = Repository.objects.filter(full_name=full_name).first()
        if existing is None:
            found[key] = repository_create(full_name=full_name, **values)
        else:
            found[key] = repository_update(repository=existing, **values)
    return found


def demo_preview_set(repository: Repository, url: str) -> Repository:
    """``url`` (the demo app's stand-in, on loopback) as the repository's preview URL, its
    host:port allow-listed in place of the previous stand-in's: the verifier reaches a
    loopback address only when the repository names it."""
    host, stale = urlsplit(url).netloc, urlsplit(repository.preview_url).netloc
    hosts = [entry for entry in repository.allowed_hosts if entry not in (host, stale)]
    return repository_update(repository=repository, preview_url=url, allowed_hosts=[*hosts, host])
