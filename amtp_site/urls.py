from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

admin.site.site_header = "AMTP operations"
admin.site.site_title = "AMTP"
admin.site.index_title = "Runs, approvals and repositories"

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("admin/", admin.site.urls),
]
