from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

from amtp_site import sso
from amtp_site.api import api
from amtp_site.metrics_view import metrics_view
from amtp_site.problems import problem_type_view
from reporting.admin.dashboard import dashboard_view
from reporting.admin.health import health_view
from runs.admin.launch import launch_run_view
from triggers.admin import check_tests_now_view

admin.autodiscover()  # SimpleAdminConfig (settings.py): the admin modules load with the URLs
admin.site.site_header = "AMTP operations"
admin.site.site_title = "AMTP"
admin.site.index_title = "Runs, approvals and repositories"

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    # Staff only, and runs.view_run on some repository: see reporting/admin/dashboard.py.
    path("admin/dashboard/", admin.site.admin_view(dashboard_view), name="dashboard"),
    # Staff only, and runs.view_run on that repository: see reporting/admin/health.py.
    path(
        "admin/repositories/repository/<int:pk>/health/",
        admin.site.admin_view(health_view),
        name="repository_health",
    ),
    # Single sign-on (amtp_site.sso): 404 unless AMTP_SSO_ISSUER is set. The admin's "Log out"
    # comes here first, to end the provider's session too.
    path("oidc/authenticate/", sso.SignIn.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", sso.Callback.as_view(), name="oidc_authentication_callback"),
    path("admin/logout/", sso.SignOut.as_view(), name="oidc_logout"),
    path("admin/", admin.site.urls),
    path("api/problems/<slug:slug>", problem_type_view, name="problem_type"),
    path("api/", api.urls),
    path("metrics", metrics_view, name="metrics"),  # AMTP_METRICS_*: docs/operations.md
    # Staff only (admin login and is_staff), and runs.add_run: see runs/launch.py.
    path("launch/", admin.site.admin_view(launch_run_view), name="launch_run"),
    # Staff only, POST, and the operator role on the repository: see triggers/admin.py.
    path(
        "repositories/<int:repository_id>/check-tests/",
        admin.site.admin_view(check_tests_now_view),
        name="check_tests_now",
    ),
]
