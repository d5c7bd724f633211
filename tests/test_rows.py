"""amtp_site.rows, the ORM details hand-written SQL relies on: what it writes is what ``save()``
writes, what it loads is what the ORM loads. A Django upgrade that changes one of them (the
fields' order or conversions, ``pre_save``, ``from_db``) fails here."""

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction

from access.models import ApiToken
from amtp_site import rows
from repositories.models import Repository
from runs import transitions
from runs.models import ActivityIdempotency, Artifact, Run, RunStart, Stage
from tests.factories import ArtifactFactory, RepositoryFactory, RunFactory

pytestmark = pytest.mark.django_db


def new_run(repository, **fields):
    return Run(
        repository=repository,
        repo_full_name=repository.full_name,
        ref="main",
        depth_level="smoke",
        target_framework="playwright",
        base_branch="main",
        **fields,
    )


def stored(model, pk) -> dict:
    row = model.objects.filter(pk=pk).values().get()
    return {k: v for k, v in row.items() if k not in ("run_id", "stage_id", "created_at")}


def values(obj) -> dict:
    return {name: getattr(obj, name) for name in rows.attnames(type(obj))}


def test_fields_are_the_table_columns_in_the_orms_order():
    """``Model(*values)`` and ``from_db`` take the values in this order; reverse relations and
    many-to-many fields are no columns."""
    for model in (Run, Stage, RunStart, Repository, Artifact, ApiToken, ActivityIdempotency):
        with connection.cursor() as cursor:
            columns = [
                c.name
                for c in connection.introspection.get_table_description(
                    cursor, model._meta.db_table
                )
            ]
        assert sorted(f.column for f in rows.fields(model)) == sorted(columns)
        instance = model(*[f"v{i}" for i in range(len(rows.fields(model)))])
        assert [getattr(instance, n) for n in rows.attnames(model)] == [
            f"v{i}" for i in range(len(rows.fields(model)))
        ]


def test_insert_writes_what_save_writes():
    repository = Repository.objects.create(full_name="acme/web")
    saved, run = new_run(repository), new_run(repository, requested_by="x" * 200)
    saved.requested_by = "x" * 200
    saved.save()
    stages = transitions.new_stages(run)
    rows.insert(run, *stages, RunStart(run=run, task_queue="q"))
    assert stored(Run, run.pk) == stored(Run, saved.pk)
    # created_at to the microsecond, as on the instance (a JSON round trip must not cut it)
    assert Run.objects.get(pk=run.pk).created_at == run.created_at
    assert values(run) == values(Run.objects.get(pk=run.pk))
    assert list(run.stages.order_by("position").values_list("name", "status")) == [
        (name, "pending") for name in Stage.ORDER
    ]
    assert RunStart.objects.get(run=run).task_queue == "q"


def test_a_row_marked_stored_is_what_from_db_builds():
    """mark_stored sets what Model.from_db sets (Model._state's documented adding and db),
    and a Django that marks loaded rows otherwise fails here."""
    run = RunFactory()
    marked = new_run(run.repository)
    rows.mark_stored(marked)
    loaded = Run.objects.get(pk=run.pk)
    assert {"adding", "db"} <= vars(loaded._state).keys()  # set by from_db itself
    assert (marked._state.adding, marked._state.db) == (loaded._state.adding, loaded._state.db)
    rows.insert(inserted := new_run(run.repository))
    inserted.status = Run.Status.RUNNING
    inserted.save()  # stored: saving it again updates
    assert Run.objects.get(pk=inserted.pk).status == Run.Status.RUNNING


def test_insert_is_all_or_nothing():
    """A later row refused (a second stage of the same name) leaves no row of the statement."""
    run = new_run(Repository.objects.create(full_name="acme/web"))
    stages = transitions.new_stages(run)
    twin = Stage(run=run, name=stages[0].name, position=9)
    with pytest.raises(IntegrityError, match="stages_one_per_run_and_name"):
        rows.insert(run, *stages, twin)
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not Stage.objects.filter(run_id=run.pk).exists()


def test_insert_refused_inside_a_transaction_leaves_it_usable():
    repository = Repository.objects.create(full_name="acme/web")
    with transaction.atomic():
        first = new_run(repository, request_key="k")
        rows.insert(first)
        with pytest.raises(IntegrityError):
            rows.insert(new_run(repository, request_key="k"))
        assert Run.objects.get(request_key="k").pk == first.pk  # the transaction goes on


def test_load_builds_what_the_orm_loads(django_assert_num_queries):
    from runs.selectors import run_with_repository

    repository = RepositoryFactory(webhook_branches=["main", "release/*"])  # a JSON column
    run = RunFactory(repository=repository, error_message="ü " * 10, pr_number=7)
    with django_assert_num_queries(1):
        loaded = run_with_repository(run.pk)
        repository = loaded.repository  # loaded with it
    orm = Run.objects.select_related("repository").get(pk=run.pk)
    assert values(loaded) == values(orm) and values(repository) == values(orm.repository)
    assert repository.webhook_branches == ["main", "release/*"]
    loaded.status = Run.Status.RUNNING
    loaded.save()  # a stored row: saving it updates
    assert Run.objects.get(pk=run.pk).status == Run.Status.RUNNING
    with pytest.raises(Run.DoesNotExist):
        run_with_repository(uuid.uuid4())


def test_load_leaves_the_columns_not_read_deferred():
    artifact = ArtifactFactory()
    names = ["artifact_id", "run_id", "kind", "content"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT artifact_id, run_id, kind, content FROM artifacts WHERE artifact_id = %s",
            [artifact.pk],
        )
        loaded = rows.load(Artifact, cursor.fetchone(), names)
    assert loaded.content == artifact.content  # JSON parsed, as the ORM does
    assert loaded.get_deferred_fields() == {"schema_id", "meta", "created_at"}


def test_table_and_column_are_what_the_orm_queries():
    user = get_user_model()
    sql = str(user.objects.filter(username="x").values("username").query)
    assert rows.table(user) in sql and rows.column(user, "username") in sql
