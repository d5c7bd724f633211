"""The audit trail in admin: every LogEntry (approve, reject, cancel, run again, token mint and
revoke, repository and other admin edits), read-only, filterable by user, action, object type,
surface and time. Each object's History page shows its own entries; this is the whole list.
Recorded by ``amtp_site.audit`` (services) and by the admin itself (form saves).
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.models import LogEntry

from amtp_site.audit import SURFACE_MARK, SURFACES
from amtp_site.lists import EstimatedCountPaginator


class SurfaceFilter(admin.SimpleListFilter):
    title = "surface"
    parameter_name = "surface"

    def lookups(self, request, model_admin):
        return [(surface, surface) for surface in SURFACES]

    def queryset(self, request, queryset):
        if self.value() in SURFACES:
            mark = SURFACE_MARK.format(surface=self.value())
            return queryset.filter(change_message__contains=mark)
        return queryset


@admin.register(LogEntry)
class AuditTrailAdmin(admin.ModelAdmin):
    list_display = ("action_time", "user", "content_type", "object_repr", "action_flag", "what")
    list_filter = (SurfaceFilter, "action_flag", "content_type", "user", "action_time")
    search_fields = ("object_repr", "object_id", "change_message", "user__username")
    list_select_related = ("user", "content_type")
    # No date_hierarchy: its list of years reads every entry; the action_time filter does not.
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    list_per_page = 50  # as the run list: each row costs a few ms to render

    @admin.display(description="what")
    def what(self, entry: LogEntry) -> str:
        return entry.get_change_message()

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # an audit trail one can edit is not one
