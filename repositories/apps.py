from django.apps import AppConfig


class RepositoriesConfig(AppConfig):
    name = "repositories"
    verbose_name = "Repositories"
