from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Test generation runs"
    # The worker registers every app's activities (see runs.temporal.worker.app_activities).
    temporal_activities = "runs.temporal.activities.ACTIVITIES"
