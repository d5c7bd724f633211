"""The two demo repositories `make run` creates on first start, as local git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from repositories.models import Framework, Host, Repository
from repositories.services import repository_create, repository_update
from runs.demo.content import DEMO_MOBILE, DEMO_WEB, DEMO_WEB_RECIPE

DEMOS = {
    "web": ("demo/web", {**DEMO_WEB, **DEMO_WEB_RECIPE}, Framework.PLAYWRIGHT),
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


def _committed(path: Path, name: str) -> bool:
    found = subprocess.run(
        ["git", "-C", str(path), "cat-file", "-e", f"HEAD:{name}"], capture_output=True
    )
    return found.returncode == 0


def _add_missing(path: Path, files: dict[str, str]) -> None:
    """Commit the demo files an older demo repository lacks (the web app's recipe, first
    written by a later AMTP): its app is then started as a new one's is."""
    missing = {name: text for name, text in files.items() if not _committed(path, name)}
    if missing:
        for name, content in missing.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(content)
        _git(path, "add", "--", *missing)
        _git(path, "commit", "-q", "-m", "Demo application: how it starts", "--", *missing)


def ensure_demo_repositories(folder: Path) -> dict[str, Repository]:
    """The demo repositories (created on first start). demo/web has no preview URL: its
    runs start the real app from its recipe (BootApp)."""
    found = {}
    for key, (full_name, files, framework) in DEMOS.items():
        path = folder / key
        if not (path / ".git").exists():
            create_git_repository(path, files)
        else:
            _add_missing(path, files)
        values = {
            "host": Host.LOCAL,
            "local_path": str(path),
            "default_branch": "main",
            "default_framework": framework,
            "default_depth_level": "core",
            # an earlier AMTP's stand-in app on loopback: gone, so no preview to verify against
            "preview_url": "",
        }
        existing = Repository.objects.filter(full_name=full_name).first()
        if existing is None:
            found[key] = repository_create(full_name=full_name, **values)
        else:
            stale = urlsplit(existing.preview_url).netloc  # the stand-in's loopback host:port
            hosts = [entry for entry in existing.allowed_hosts if entry != stale]
            found[key] = repository_update(repository=existing, allowed_hosts=hosts, **values)
    return found
