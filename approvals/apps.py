from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"
    temporal_activities = "approvals.activities.ACTIVITIES"

    def ready(self) -> None:
        from approvals.run_part import PART
        from approvals.services import approvals_close, approvals_prune
        from runs import parts
        from runs.signals import run_closed, runs_pruning

        run_closed.connect(approvals_close, dispatch_uid="approvals_close")
        runs_pruning.connect(approvals_prune, dispatch_uid="approvals_prune")
        parts.register(PART)
