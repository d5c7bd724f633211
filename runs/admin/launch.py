"""The staff "Launch run" form at ``/launch/``.

Permission: ``runs.add_run`` ("Can add run"). Adding a run *is* launching one (the admin has no
add form for runs), so the existing permission says exactly what it grants and no custom
permission (and migration) is needed. Staff status and login come from the admin site. The
repositories offered are those the user may launch on (``repositories.access``: the global
permission, or the operator or admin role there); any other is "not one of the choices".

Empty fields take the repository's settings, server-side, through ``run_create``; the page's
script only shows those defaults as the repository changes. Each rendered form carries a
submission id used as the run's ``request_key``, so a double-clicked or re-posted form opens
the run it already created instead of a second one.
"""

from __future__ import annotations

import uuid

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from amtp_site.errors import AmtpError
from repositories import access
from repositories.models import DepthLevel, Framework, Repository
from repositories.refnames import MAX_REF_LENGTH, ref_problem
from repositories.targets import MAX_TARGET_URL_LENGTH, target_url_problem
from runs.errors import RunInputInvalid
from runs.models import Run
from runs.services import run_create

LAUNCH_PERMISSION = "runs.add_run"
LAUNCH_TEMPLATE = "amtp/launch.html"
LAUNCHED = "Run {run_id} launched on {repo}@{ref}."
REPOSITORY_DEFAULT = ("", "Repository default")


def _ref_field(help_text: str) -> forms.CharField:
    return forms.CharField(
        required=False, max_length=MAX_REF_LENGTH, help_text=help_text, strip=True
    )


class LaunchRunForm(forms.Form):
    repository = forms.ModelChoiceField(queryset=Repository.objects.order_by("full_name"))
    ref = _ref_field("Branch, tag or full commit SHA to crawl. Empty: the default branch.")
    depth_level = forms.ChoiceField(
        required=False, choices=[REPOSITORY_DEFAULT, *DepthLevel.choices]
    )
    target_framework = forms.ChoiceField(
        required=False, choices=[REPOSITORY_DEFAULT, *Framework.choices]
    )
    base_branch = _ref_field("Branch the pull request targets. Empty: the default branch.")
    target_url = forms.CharField(
        required=False,
        max_length=MAX_TARGET_URL_LENGTH,
        strip=True,
        label="Target URL",
        help_text="A running instance of the app; the generated tests run against it before the "
        "pull request. Empty: the repository's preview URL (none: verification is skipped).",
    )
    submission = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["repository"]
        field.queryset = launchable(user)

    def _clean_ref(self, name: str) -> str:
        value = self.cleaned_data[name]
        problem = ref_problem(value) if value else None
        if problem:
            raise forms.ValidationError(problem)
        return value

    def clean_ref(self):
        return self._clean_ref("ref")

    def clean_base_branch(self):
        return self._clean_ref("base_branch")

    def clean_target_url(self):
        value = self.cleaned_data["target_url"]
        if problem := target_url_problem(value):
            raise forms.ValidationError(problem)
        return value

    def run_inputs(self) -> dict:
        data = self.cleaned_data
        return {
            k: data[k]
            for k in (
                "repository",
                "ref",
                "depth_level",
                "target_framework",
                "base_branch",
                "target_url",
            )
        }


def launchable(user):
    """The repositories ``user`` may launch runs on."""
    repositories = Repository.objects.order_by("full_name")
    return access.restrict(repositories, user, [LAUNCH_PERMISSION], via="pk")


def repository_defaults(user) -> dict[str, dict[str, str]]:
    """What each repository fills in for empty fields (shown by the page's script)."""
    return {
        str(repo.pk): {
            "ref": repo.default_branch,
            "base_branch": repo.default_branch,
            "depth_level": repo.default_depth_level,
            "target_framework": repo.default_framework,
            "target_url": repo.preview_url,
        }
        for repo in launchable(user).only(
            "default_branch", "default_depth_level", "default_framework", "preview_url"
        )
    }


def launch_run_view(request):
    if not request.user.has_perm(LAUNCH_PERMISSION):
        raise PermissionDenied
    if request.method == "POST":
        form = LaunchRunForm(request.POST, user=request.user)
        if form.is_valid():
            response = _launch(request, form)
            if response is not None:
                return response
    else:
        form = LaunchRunForm(
            initial={"repository": request.GET.get("repository")}, user=request.user
        )
    context = {
        **admin.site.each_context(request),
        "title": "Launch a run",
        "form": form,
        "repository_defaults": repository_defaults(request.user),
        "runs_url": reverse("admin:runs_run_changelist"),
    }
    return TemplateResponse(request, LAUNCH_TEMPLATE, context)


def _launch(request, form: LaunchRunForm) -> HttpResponseRedirect | None:
    """Redirect to the new run, or None with the service's refusal added to the form."""
    key = f"launch-form:{request.user.pk}:{form.cleaned_data['submission']}"
    try:
        run = run_create(
            **form.run_inputs(),
            trigger=Run.Trigger.FORM,
            requested_by=request.user.get_username(),
            requester=f"user:{request.user.pk}",
            request_key=key,
        )
    except RunInputInvalid as exc:  # shown on its field, as the form's own checks are
        on_field = exc.field in form.fields
        form.add_error(exc.field if on_field else None, exc.rule if on_field else exc.message)
        return None
    except AmtpError as exc:
        form.add_error(None, str(exc))
        return None
    messages.success(request, LAUNCHED.format(run_id=run.pk, repo=run.repo_full_name, ref=run.ref))
    return HttpResponseRedirect(reverse("admin:runs_run_change", args=[run.pk]))
