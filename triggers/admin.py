"""Admin's "Check tests now" on a repository's page: a maintenance run of its default branch,
started at once (``triggers.maintenance``). POST only, with the CSRF token of the page;
the operator role on that repository (``repositories.access``), or ``runs.add_run`` on all."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from amtp_site import audit
from amtp_site.errors import AmtpError
from repositories import access
from repositories.models import Repository
from triggers.maintenance import maintenance_start_now

LAUNCH_PERMISSION = "runs.add_run"
STARTED = "Maintenance run <a href='{url}'>{run_id}</a> started on {repo}."
ALREADY = "Maintenance run <a href='{url}'>{run_id}</a> of {repo} is still {status}: see it there."


@require_POST
def check_tests_now_view(request, repository_id: int):
    repository = get_object_or_404(Repository, pk=repository_id)
    if not access.may(request.user, access.VIEW | access.LAUNCH, repository):
        raise Http404  # a repository the user cannot see does not exist for them
    back = HttpResponseRedirect(
        reverse("admin:repositories_repository_change", args=[repository.pk])
    )
    if not request.user.has_perm(LAUNCH_PERMISSION, repository):
        refusal = access.NEEDS_ROLE.format(
            action="Checking the tests",
            repository=repository.full_name,
            roles=", ".join(access.roles_allowing([LAUNCH_PERMISSION])),
            permission=LAUNCH_PERMISSION,
        )
        messages.error(request, refusal)
        return back
    try:
        run = maintenance_start_now(repository=repository, actor=audit.Actor.admin(request))
    except AmtpError as exc:
        messages.error(request, getattr(exc, "rule", None) or str(exc))
        return back
    url = reverse("admin:runs_run_change", args=[run.pk])
    if run.created:
        text = format_html(STARTED, url=url, run_id=run.pk, repo=repository.full_name)
        messages.success(request, text)
    else:
        text = format_html(
            ALREADY, url=url, run_id=run.pk, repo=repository.full_name, status=run.status
        )
        messages.warning(request, text)
    return HttpResponseRedirect(url)
