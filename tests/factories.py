import factory

from approvals.models import Approval
from repositories.models import Repository
from runs.models import Artifact, Run, Stage


class RepositoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Repository
        django_get_or_create = ("full_name",)

    full_name = factory.Sequence(lambda n: f"acme/app{n}")
    host = "github"


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    repository = factory.SubFactory(RepositoryFactory)
    repo_full_name = factory.SelfAttribute("repository.full_name")
    ref = "main"
    base_branch = "main"
    depth_level = "standard"
    target_framework = "playwright"


class StageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Stage

    run = factory.SubFactory(RunFactory)
    name = "crawl_repo"


class ArtifactFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Artifact

    run = factory.SubFactory(RunFactory)
    kind = "repo_crawler_output"
    schema_id = "https://amtp.zagtrader.internal/schemas/repo_crawler/output.json"
    content = factory.LazyFunction(dict)


class ApprovalFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Approval

    run = factory.SubFactory(RunFactory)
    stage = factory.SubFactory(
        StageFactory, run=factory.SelfAttribute("..run"), name="create_pull_request"
    )
    approver = "branch-protection"
    comment = '{"message":"Protected branch update failed for refs/heads/main."}'
