"""Model rows written and read by hand-written SQL: every ORM detail that SQL relies on, here.

Where the ORM's query compiler costs more CPU than PostgreSQL spends on the statement (a run
submitted with its stages and outbox row in one INSERT, a run loaded with its repository at
every stage; scripts/bench_submit.py, scripts/bench_orchestration.py), the statement is
written by hand and the model objects go in and come out through documented APIs only:
``Options.get_fields()`` and ``db_table``, the fields' ``concrete``, ``attname`` and
``column``, ``Field.pre_save()`` / ``get_prep_value()`` / ``from_db_value()`` (the custom
field API), ``Model.from_db()`` and ``Model._state.adding`` / ``db``. tests/test_rows.py compares each result with what the ORM
writes and reads itself, so a Django upgrade that changes one of these fails there.
"""

from __future__ import annotations

import functools
import json
from contextlib import nullcontext
from typing import TypeVar

from django.db import connection, models, transaction

M = TypeVar("M", bound=models.Model)


@functools.cache
def fields(model: type[models.Model]) -> tuple[models.Field, ...]:
    """The fields that are columns of the model's table, in the order ``Model.from_db`` and
    ``Model(*values)`` take their values."""
    return tuple(f for f in model._meta.get_fields() if f.concrete and not f.many_to_many)


@functools.cache
def attnames(model: type[models.Model]) -> list[str]:
    return [f.attname for f in fields(model)]


def table(model: type[models.Model]) -> str:
    """The model's table, quoted for SQL."""
    return connection.ops.quote_name(model._meta.db_table)


def column(model: type[models.Model], name: str) -> str:
    """The column of the model's field ``name``, quoted for SQL."""
    return connection.ops.quote_name(model._meta.get_field(name).column)


def select_list(model: type[models.Model]) -> str:
    """Every column of the model's table, qualified, in ``fields`` order: a SELECT whose row
    ``load`` turns back into the model."""
    return ", ".join(f"{table(model)}.{connection.ops.quote_name(f.column)}" for f in fields(model))


def load(model: type[M], values, names: list[str] | None = None) -> M:
    """A model object from a row read by raw SQL, as the ORM would build it: each value
    converted by its field's ``from_db_value`` (JSON parsed, for one), then ``from_db``.
    ``names``: the attnames of the columns read, in ``fields`` order (the others deferred);
    all of them by default."""
    names = names or attnames(model)
    return model.from_db(connection.alias, names, converted(model, names, values))


def converted(model: type[models.Model], names: list[str], values) -> tuple:
    """The columns ``names`` of a row of ``model`` read by raw SQL, as the ORM hands them over."""
    return tuple(
        field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value
        for field, value in zip(map(model._meta.get_field, names), values, strict=True)
    )


def mark_stored(*rows: models.Model) -> None:
    """Mark rows inserted by hand as stored (saving one again updates it), as ``Model.from_db``
    marks what it loads: the two attributes of ``Model._state`` that Django documents
    (``adding`` and ``db``, in the model instance reference; its ``from_db`` example sets
    them so). Copies made through ``from_db`` instead cost a submitted run about a sixth of
    its request's CPU (eight objects)."""
    for row in rows:
        row._state.adding = False
        row._state.db = connection.alias


def insert(*rows: models.Model) -> None:
    """Insert new rows (a run, its stages, its admission) with one statement: one round trip,
    and atomic without a transaction of its own; then ``mark_stored``. A later row
    may refer to an earlier one (the foreign keys are checked at the end of the statement).
    Each row's values are what ``save()`` writes, defaults and ``auto_now_add`` included. The
    rows of a table go as one JSON parameter (``jsonb_populate_recordset``): a short statement
    with few parameters, which psycopg parses once per process instead of once per call."""
    tables: dict[str, list[dict]] = {}
    for row in rows:
        values = {f.column: f.get_prep_value(f.pre_save(row, add=True)) for f in fields(type(row))}
        tables.setdefault(table(type(row)), []).append(values)
    inserts = [
        f"INSERT INTO {t} SELECT * FROM jsonb_populate_recordset(NULL::{t}, %s::jsonb)"
        for t in tables
    ]
    *first, last = inserts
    statement = "".join(
        f"{'WITH' if i == 0 else ','} i{i} AS ({sql}) " for i, sql in enumerate(first)
    )
    params = [json.dumps(values, default=_json) for values in tables.values()]
    # Inside a caller's transaction a failure (a duplicate request key) must not abort it.
    with transaction.atomic() if connection.in_atomic_block else nullcontext():
        with connection.cursor() as cursor:
            cursor.execute(statement + last, params)
    mark_stored(*rows)


def _json(value):
    """Datetimes in full (DjangoJSONEncoder cuts them to milliseconds), UUIDs as text."""
    return value.isoformat() if hasattr(value, "isoformat") else str(value)
