"""What notifications were sent, and which failed: read-only, newest first."""

from __future__ import annotations

from django.contrib import admin

from amtp_site.lists import EstimatedCountPaginator
from notifications.models import Notification
from repositories import access


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ("created_at", "event", "channel", "status", "attempts", "run", "recipient")
    list_filter = ("status", "event", "channel")
    list_select_related = ("run",)
    readonly_fields = [f.name for f in Notification._meta.fields]
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    list_per_page = 50

    def get_queryset(self, request):
        rows = super().get_queryset(request)
        return access.restrict(
            rows, request.user, ("runs.view_notification",), via="run__repository"
        )

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # a record of what was sent; removed with its run
