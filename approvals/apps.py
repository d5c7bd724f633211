from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"
    temporal_activities = "approvals.activities.ACTIVITIES"

    def ready(self) -> None:
        from approvals.run_part import PART
        from approvals.services import approvals_close
        from runs import parts
        from runs.signals import run_closed

        run_closed.connect(approvals_close, dispatch_uid="approvals_close")
        parts.register(PART)
