"""Repository hosts: ``github`` (PyGithub) and ``local`` (git on disk), one interface."""

from __future__ import annotations

from repositories.errors import RepositoryAccessError
from repositories.hosts.base import PullRequestResult, RepositoryHost, TreeEntry

__all__ = ["PullRequestResult", "RepositoryHost", "TreeEntry", "host_for", "host_for_repo"]


def host_for(repository) -> RepositoryHost:
    """The host for a ``runs.Repository`` row, with credentials from settings."""
    from django.conf import settings

    if repository.host == "local":
        from repositories.hosts.local import LocalGitHost

        return LocalGitHost(repository.full_name, repository.local_path)
    from amtp_site import valkey
    from repositories.hosts.github import GitHubHost
    from repositories.hosts.github_limits import ValkeyStrikes

    return GitHubHost(
        repository.full_name,
        api_url=settings.GITHUB_API_URL,
        token=settings.GITHUB_TOKEN or None,
        app_id=settings.GITHUB_APP_ID or None,
        private_key=settings.GITHUB_APP_PRIVATE_KEY or None,
        seconds_between_writes=settings.GITHUB_SECONDS_BETWEEN_WRITES or None,
        strikes=ValkeyStrikes(valkey.client),  # repeated secondary limits, across processes
    )


def host_for_repo(full_name: str) -> RepositoryHost:
    from repositories.models import Repository

    repository = Repository.objects.filter(full_name=full_name).first()
    if repository is None:
        raise RepositoryAccessError(
            f"unknown repository {full_name!r}: register it in admin (Repositories) "
            "or launch with `manage.py launch_run --local PATH`"
        )
    return host_for(repository)
