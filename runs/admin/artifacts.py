"""The artifact viewer: highlighted, collapsible JSON beside its meta, and a raw download.

Artifacts are immutable records of what an agent produced, so there is no edit form: the
admin "change" page is the viewer. List queries never load ``content`` (it can be megabytes);
the download streams PostgreSQL's own text of the JSONB column without parsing it in Python.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import TextField
from django.db.models.functions import Cast
from django.http import Http404, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse

from amtp_site.lists import EstimatedCountPaginator, PrefixSearchMixin
from repositories import access
from runs.admin.display import RunColumns, short_id
from runs.admin.render import (
    META_PREVIEW_CHARS,
    PREVIEW_CHARS,
    code_files,
    highlighted,
    json_preview,
    pretty_json,
    pygments_css,
)
from runs.models import Artifact, ArtifactKind

VIEWER_TEMPLATE = "admin/runs/artifact/viewer.html"


def download_name(artifact: Artifact) -> str:
    return f"{artifact.run_id}-{artifact.kind}.json"


@admin.register(Artifact)
class ArtifactAdmin(RunColumns, PrefixSearchMixin, admin.ModelAdmin):
    list_display = ("kind", "run_link", "repository", "schema_id", "created_at")
    list_filter = ("kind",)
    search_fields = ("run__repo_full_name",)
    uuid_search_fields = ("artifact_id", "run_id")
    search_help_text = "Start of an artifact id, run id or repository (owner/name)."
    list_select_related = ("run",)
    ordering = ("-created_at", "-artifact_id")  # newest first, on an index
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    list_per_page = 50  # as the run list: each row costs a few ms to render

    def get_queryset(self, request):
        # Only the artifacts of repositories the user may read them on (repositories.access):
        # any other reads as one that does not exist.
        artifacts = super().get_queryset(request).defer("content", "meta")
        perms = ("runs.view_artifact", "runs.change_artifact")
        return access.restrict(artifacts, request.user, perms, via="run__repository")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # deleted with their run, never alone: a handoff would lose its input

    def get_urls(self):
        download = self.admin_site.admin_view(self.download_view)
        return [
            path("<path:object_id>/download/", download, name="runs_artifact_download"),
            *super().get_urls(),
        ]

    def _artifact_or_404(self, request, object_id) -> Artifact:
        if not self.has_view_permission(request):
            raise PermissionDenied
        artifact = self.get_object(request, unquote(object_id))
        if artifact is None:
            raise Http404("no such artifact")
        return artifact

    def change_view(self, request, object_id, form_url="", extra_context=None):
        artifact = self._artifact_or_404(request, object_id)
        artifact.refresh_from_db(fields=["content", "meta"])
        meta_text, meta_cut = pretty_json(artifact.meta, META_PREVIEW_CHARS)
        files, file_count = [], 0
        if artifact.kind == ArtifactKind.TEST_ENGINEER_OUTPUT:
            files, file_count = code_files(artifact.content)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"{artifact.get_kind_display()} · run {short_id(artifact.run_id)}",
            "artifact": artifact,
            "run": artifact.run,
            "preview": json_preview(artifact.content, PREVIEW_CHARS),
            "preview_limit": PREVIEW_CHARS,
            "meta_html": highlighted(meta_text),
            "meta_truncated": meta_cut,
            "files": files,
            "file_count": file_count,
            "pygments_css": pygments_css(),
            "download_url": reverse("admin:runs_artifact_download", args=[artifact.pk]),
            "download_name": download_name(artifact),
        }
        return TemplateResponse(request, VIEWER_TEMPLATE, context)

    def download_view(self, request, object_id):
        artifact = self._artifact_or_404(request, object_id)
        text = (
            Artifact.objects.filter(pk=artifact.pk)
            .values_list(Cast("content", TextField()), flat=True)
            .get()
        )
        response = HttpResponse(text, content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{download_name(artifact)}"'
        return response
