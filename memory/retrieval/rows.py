"""Retrieval's written-out SQL and its rows: statements sent to PostgreSQL together (one round trip, or beside the
request's connection on a side reader), the query vector in pgvector's text form, and model instances made from rows
without the ORM's compilation on the request path (docs/decisions/0009-retrieval-sql-in-two-round-trips.md)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

import numpy as np
from django.db import connection, models
from django.db.models import signals
from django.db.models.base import ModelState
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute
from django.db.models.query_utils import DeferredAttribute
from django.db.models.sql import Query
from django.db.models.sql.compiler import SQLCompiler

from memory.models.tiers import unread_fields
from memory.retrieval.side_readers import reads_beside_allowed, rows_beside, several_statements_per_execute

M = TypeVar("M", bound=models.Model)


def vector_text(vector: np.ndarray) -> str:
    """The query vector as pgvector's text form, formatted once for the several statements of one retrieval: nine
    significant digits, which give every float32 back exactly, in two thirds of the characters of the shortest
    float64 form (the statements carry it five times, and PostgreSQL parses each)."""
    return "[" + ",".join([f"{x:.9g}" for x in np.asarray(vector, dtype=np.float32).tolist()]) + "]"


# The cosine similarity of a row's `embedding` to the query vector (parameter `vector`); rows without one score 0.
COSINE = "coalesce(1.0 - (embedding <=> %(vector)s::vector), 0.0)"
# The same for a page, whose vector is kept in half precision (`HalfVectorField`): the question's is cast to match.
PAGE_COSINE = "coalesce(1.0 - (embedding <=> %(vector)s::halfvec), 0.0)"


# --- Statements sent together -----------------------------------------------------------------------------------


@dataclass
class Statement:
    """One statement of a batch; its rows once the batch has run."""

    sql: str
    params: dict
    beside: bool = (
        False  # may run on a side reader's connection, beside the batch (`memory.retrieval.side_readers.rows_beside`)
    )
    rows: list[tuple] = field(default_factory=list)
    prepared: bool = False  # beside, planned once per side connection (`side_readers.prepared_rows`)


class Batch:
    """Statements that do not depend on each other, sent to PostgreSQL in one round trip (one execute, results read
    in turn). Each statement's parameters are renamed apart (the third statement's `%(space)s` is sent as
    `%(s2_space)s`), so statements need not agree on names. One execute may carry several statements because
    Django binds parameters on the client with psycopg 3, its default; a database configured with the
    `server_side_binding` option refuses that, and gets the statements one execute each.

    A statement added `beside` runs on a side reader's connection at the same time, on another server backend,
    when reads may run beside this thread's (`side_readers.reads_beside_allowed`: not inside a transaction); if
    that read fails it runs again here, where a real failure is raised as usual. `run(meanwhile=...)` calls
    `meanwhile` once the statements run here have their rows, before waiting for those beside, so that turning rows
    into results overlaps the reads still under way."""

    def __init__(self) -> None:
        self.statements: list[Statement] = []

    def add(self, sql: str, params: dict, *, beside: bool = False, prepared: bool = False) -> Statement:
        statement = Statement(sql, params, beside, prepared=prepared)
        self.statements.append(statement)
        return statement

    def run(self, meanwhile: Callable[[], None] | None = None) -> None:
        parallel = reads_beside_allowed()
        futures = [(s, _rows_beside(s)) for s in self.statements if s.beside and parallel]
        self._run_here([s for s in self.statements if not (s.beside and parallel)])
        if meanwhile is not None:
            meanwhile()
        for statement, future in futures:
            try:
                statement.rows = future.result()
            except Exception:  # a lost side connection, or no side reader to be had: read it here
                self._run_here([statement])

    @staticmethod
    def _run_here(statements: list[Statement]) -> None:
        if not statements:
            return
        if not several_statements_per_execute():
            Batch._run_one_by_one(statements)
            return
        sql = ";\n".join(_renamed(s.sql, i) for i, s in enumerate(statements))
        params = {f"s{i}_{name}": value for i, s in enumerate(statements) for name, value in s.params.items()}
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            for statement in statements:
                statement.rows = cursor.fetchall()
                cursor.nextset()

    @staticmethod
    def _run_one_by_one(statements: list[Statement]) -> None:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement.sql, statement.params)
                statement.rows = cursor.fetchall()


def _rows_beside(statement: Statement) -> Future:
    """The statement's rows from a side reader, or the error that kept one from reading them."""
    try:
        return rows_beside(statement.sql, statement.params, prepared=statement.prepared)
    except RuntimeError as exc:  # no new threads while the interpreter shuts down
        failed: Future = Future()
        failed.set_exception(exc)
        return failed


PARAMETER = re.compile(r"%\((\w+)\)s")


@cache
def _renamed(sql: str, index: int) -> str:
    return PARAMETER.sub(rf"%(s{index}_\1)s", sql)


@cache
def columns(model: type[models.Model]) -> str:
    """The model's columns a read loads (as `without_vectors()` does), for retrieval's written-out statements."""
    return ", ".join(f.column for f in _read_fields(model))


@cache
def _read_fields(model: type[models.Model]) -> tuple[models.Field, ...]:
    skipped = unread_fields(model)
    return tuple(f for f in model._meta.concrete_fields if f.name not in skipped)


def instances(model: type[M], rows: list[tuple], extra: tuple[str, ...] = ()) -> list[M]:
    """Model instances from rows of `columns(model)` followed by the `extra` columns (set as attributes, read back
    with `extra_float`), with the fields' own conversions from the database applied, as `Manager.raw` would.

    Made as `Model.from_db` makes them, without calling `Model.__init__` when nothing could tell the difference (no
    receiver of the model's init signals, every field a plain attribute: `_plainly_set`): the values go straight into
    the instance's `__dict__`, a sixth of the cost for the sixty instances a retrieval makes."""
    names, compiler, converters = _reading(model)
    converted: Iterable[Sequence[Any]] = compiler.apply_converters(rows, converters) if converters else rows
    made = _made_plainly if _plainly_set(model) and not _init_heard(model) else _made_from_db
    return [made(model, names, row, extra) for row in converted]


def _made_plainly(model: type[M], names: list[str], row: Sequence[Any], extra: tuple[str, ...]) -> M:
    instance = model.__new__(model)
    state = instance._state = ModelState()
    state.adding, state.db = False, connection.alias
    values = instance.__dict__
    values.update(zip(names, row, strict=False))  # the extra columns follow
    values.update(zip(extra, row[len(names) :], strict=True))
    return instance


def _made_from_db(model: type[M], names: list[str], row: Sequence[Any], extra: tuple[str, ...]) -> M:
    instance = model.from_db(connection.alias, _loaded_names(model), row[: len(names)])
    for name, value in zip(extra, row[len(names) :], strict=True):
        setattr(instance, name, value)
    return instance


def _init_heard(model: type[models.Model]) -> bool:
    """Whether a receiver of `pre_init` or `post_init` would hear of this model's instances (asked on every call:
    a receiver may be connected at any time)."""
    return signals.pre_init.has_listeners(model) or signals.post_init.has_listeners(model)


@cache
def _plainly_set(model: type[models.Model]) -> bool:
    """Whether setting each of `columns(model)`'s attributes on a new instance only stores the value, as Django's
    own descriptors for a plain field or a foreign key's id do, so that `__dict__` may be filled directly."""
    plain = (DeferredAttribute, ForeignKeyDeferredAttribute)
    return all(type(getattr(model, name, None)) in plain for name in _reading(model)[0])


def extra_float(instance: models.Model, name: str) -> float:
    """An `extra` column (a score or a cosine) that `instances` set on the instance: the model does not declare it,
    so it is read by name."""
    return float(getattr(instance, name))


@cache
def _loaded_names(model: type[models.Model]) -> frozenset[str]:
    """`columns(model)`'s attribute names as a set: `Model.from_db` asks of every field whether it was loaded."""
    return frozenset(_reading(model)[0])


@cache
def _reading(model: type[models.Model]) -> tuple[list[str], SQLCompiler, dict]:
    """The attribute names of `columns(model)` and the conversions their values need, worked out once."""
    fields = _read_fields(model)
    compiler = connection.ops.compiler("SQLCompiler")(Query(model), connection, connection.alias)
    converters = compiler.get_converters([f.get_col(model._meta.db_table) for f in fields])
    return [f.attname for f in fields], compiler, converters
