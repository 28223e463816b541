"""The store of experiments, their runs and their measurements, in SQLite (a file, the
default) or PostgreSQL (a ``postgresql://`` URL: the team store).

Every write method is one transaction, so a crash or a kill never leaves half a run, and several
cutaway processes, on one machine or many, can write one store at once (store/sqlite.py and
store/postgresql.py say how each engine does it). The SQL here is written once for both engines
(store/engine.py).

Its length: one class, :class:`Store`, whose every read and write is a method and one
transaction, so that callers hold one object; the engines, the checks of stored values and the
schema live in their own modules.
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from operator import methodcaller
from pathlib import Path
from typing import TYPE_CHECKING

from cutaway.model import TIMED, Calibration, Run, RunData, RunStatus, Spec
from cutaway.store.checks import (
    LARGEST_MEASUREMENT,
    SMALLEST_MEASUREMENT,
    Columns,
    DamagedStoreError,
    metric_minimum,
)
from cutaway.store.engine import Connection, Engine
from cutaway.store.listing import listing_rows
from cutaway.store.location import is_postgresql_url
from cutaway.store.records import (
    TRIAGE_STATES,
    ExperimentRow,
    MetricTable,
    ProbeInfo,
    StoredExperiment,
    StoredRunData,
    Triage,
    dumps,
)
from cutaway.store.rows import (
    check_cells,
    listing_row,
    probe_info,
    run_data_item,
    run_data_key,
    runs_from_rows,
    stored_experiment,
    usable_runs,
    variant_names,
)
from cutaway.visible import clip, left_out_note

if TYPE_CHECKING:
    from types import TracebackType

    import numpy as np
    import numpy.typing as npt

    from cutaway.store.lease import Owner

from cutaway.store.schema import EXPERIMENT_STATUSES, StoreError, StoreFull
from cutaway.store.sqlite import SqliteEngine

FINISHED_STATUSES = ("complete", "incomplete")
# How often stored runs renew an experiment's lease (store/lease.py): far within the lease's
# FOREIGN_LEASE_SECONDS, and not one more write per run.
HEARTBEAT_SECONDS = 10.0

_INSERT_RUN = (
    "INSERT INTO runs (experiment_id, variant, round_index, order_in_round, status, exit_code,"
    " signal, started_at, message, leftover_processes, leftover_names, purpose)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# Every row of one experiment, table by table, in a fixed order (Store.experiment_content).
# Every table of the schema but ``triage`` (keyed by experiment names, not by an experiment):
# a migration that adds a table adds its query here (tests/unit/test_kept_analysis.py).
_OF_ITS_RUNS = "WHERE run_id IN (SELECT id FROM runs WHERE experiment_id = ?)"
_CONTENT_QUERIES = {
    "experiments": "SELECT * FROM experiments WHERE id = ?",
    "variants": "SELECT * FROM variants WHERE experiment_id = ? ORDER BY position",
    "runs": "SELECT * FROM runs WHERE experiment_id = ? ORDER BY id",
    "measurements": f"SELECT * FROM measurements {_OF_ITS_RUNS} ORDER BY run_id, metric",
    "run_data": f"SELECT * FROM run_data {_OF_ITS_RUNS} ORDER BY id",
    "probes": "SELECT * FROM probes WHERE experiment_id = ? ORDER BY name",
    "calibrations": "SELECT * FROM calibrations WHERE experiment_id = ?",
}
CONTENT_TABLES = tuple(_CONTENT_QUERIES)
MEASUREMENTS_PER_STATEMENT = 300
# Every Store not yet closed: cli/main.py ends the process without the interpreter's
# finalization only when none is left open.
_OPEN_STORES: weakref.WeakSet[Store] = weakref.WeakSet()
_RUN_COLUMNS = (
    "id, variant, round_index, order_in_round, status, exit_code, signal, started_at, message,"
    " leftover_processes, leftover_names, purpose"
)


def open_stores() -> int:
    """How many stores this process has opened and not closed (one that was garbage-collected
    unclosed is not counted: its connection closed with it)."""
    return len(_OPEN_STORES)


class Store:
    """An open cutaway database. Use as a context manager, or call :meth:`close`."""

    def __init__(self, db: str | os.PathLike[str], *, create: bool = True) -> None:
        """Open the store ``db``: an SQLite file's path, or a ``postgresql://`` URL. With
        ``create`` false a missing store is an error, and an unwritable SQLite file is opened
        read-only (see :func:`~cutaway.store.schema.open_database`)."""
        location = os.fspath(db)
        self._engine: Engine
        if is_postgresql_url(location):
            from cutaway.store.postgresql import PostgresEngine  # psycopg: only for a URL

            self._engine = PostgresEngine(location, create=create)
        else:
            self._engine = SqliteEngine(Path(location), create=create)
        # When add_run last renewed each experiment's lease (time.monotonic()).
        self._heartbeats: dict[int, float] = {}
        _OPEN_STORES.add(self)

    @property
    def location(self) -> str:
        """The store as messages name it: the file's path, or the URL without its password."""
        return self._engine.location

    @property
    def path(self) -> Path:
        """The SQLite file (StoreError for a PostgreSQL store, which has none)."""
        if not isinstance(self._engine, SqliteEngine):
            raise StoreError(f"the store {self.location} is a PostgreSQL database, not a file")
        return self._engine.path

    @property
    def engine(self) -> str:
        """ "sqlite" or "postgresql"."""
        return "sqlite" if isinstance(self._engine, SqliteEngine) else "postgresql"

    def close(self) -> None:
        self._engine.close()
        _OPEN_STORES.discard(self)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- writes -------------------------------------------------------------------------------

    def create_experiment(
        self,
        spec: Spec,
        environment: Mapping[str, object],
        label: str | None,
        cutaway_version: str,
        owner: Owner | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> int:
        """Store a new experiment, status "running", with its variants; return its id.
        ``owner`` is the process that will run it (its lease), None for none; with an owner,
        the store holds a little space on its disk until :meth:`finish_experiment`.
        ``versions``: the variants' own versions, by name (cutaway.versions)."""
        versions = versions or {}
        spec_json = dumps(spec.to_dict(), "the spec")
        environment_json = dumps(environment, "the environment")
        variant_jsons = [dumps(v.to_dict(), f"variant {v.name!r}") for v in spec.variants]
        with self._write(f"create experiment {spec.name!r}") as connection:
            experiment_id = self._engine.inserted_id(
                connection,
                "INSERT INTO experiments (name, status, created_at, label, spec_json, spec_text,"
                " spec_path, environment_json, cutaway_version, owner_host, owner_pid,"
                " owner_started, heartbeat_at)"
                " VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    spec.name,
                    time.time(),
                    label,
                    spec_json,
                    spec.source_text,
                    spec.source_path,
                    environment_json,
                    cutaway_version,
                    *_owner_columns(owner),
                    time.time(),
                ),
            )
            connection.executemany(
                "INSERT INTO variants (experiment_id, position, name, spec_json, version)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (
                        experiment_id,
                        position,
                        variant.name,
                        variant_json,
                        versions.get(variant.name),
                    )
                    for position, (variant, variant_json) in enumerate(
                        zip(spec.variants, variant_jsons, strict=True)
                    )
                ],
            )
        if owner is not None:
            self._engine.hold_reserve()
        return experiment_id

    def add_run(
        self,
        experiment_id: int,
        run: Run,
        data: Sequence[RunData] = (),
        *,
        replace: bool = True,
    ) -> None:
        """Store one run, all its measurements and what probes recorded during it, together. A
        run already stored for the same variant, round and purpose is replaced (resuming may
        redo an interrupted slot); ``replace`` false says that none can be (a slot of an
        experiment this process created and has not filled yet), and a run there is refused.

        This is the one write between two measured runs: one transaction of as few statements
        as it can be, a transaction a run (never a group of runs held back, but for the runs
        of one block: add_runs). The variant's existence is left to the foreign key (a
        refused run is explained afterwards), and the lease's heartbeat is renewed at most
        every HEARTBEAT_SECONDS."""
        self.add_runs(experiment_id, ((run, data),), replace=replace)

    def add_runs(
        self,
        experiment_id: int,
        runs: Sequence[tuple[Run, Sequence[RunData]]],
        *,
        replace: bool = True,
    ) -> None:
        """Store several runs as add_run stores one, in one transaction: all of them or none.
        For the runs of one block (the runner's run_blocks), which ended within about 0.1 s of
        each other and reach cutaway together (docs/how-it-works.md, "What is saved")."""
        rows = [(run, data, list(map(float, run.metrics.values()))) for run, data in runs]
        for run, _, values in rows:
            if any(map(math.isnan, values)):  # SQLite would store NULL, PostgreSQL a NaN
                nan = next(
                    name
                    for name, value in zip(run.metrics, values, strict=True)
                    if math.isnan(value)
                )
                raise StoreError(
                    f"cannot {_storing(experiment_id, run)}: its metric {nan!r} is NaN"
                )
        if not rows:
            return
        now = time.monotonic()
        heartbeat = now - self._heartbeats.get(experiment_id, -math.inf) >= HEARTBEAT_SECONDS
        first = rows[0][0]
        try:
            with self._write(lambda: _storing(experiment_id, first, len(rows))) as connection:
                if heartbeat:  # the lease's heartbeat: the owner is still at work
                    connection.execute(
                        "UPDATE experiments SET heartbeat_at = ? WHERE id = ?",
                        (time.time(), experiment_id),
                    )
                for run, data, values in rows:
                    self._insert_run(connection, experiment_id, run, data, values, replace)
        except StoreError as error:
            for run, _, _ in rows:
                unknown = self._unknown_variant(experiment_id, run.variant)
                if unknown is not None:
                    raise unknown from error
            raise
        if heartbeat:
            self._heartbeats[experiment_id] = now
        self._engine.run_stored()

    def _insert_run(
        self,
        connection: Connection,
        experiment_id: int,
        run: Run,
        data: Sequence[RunData],
        values: list[float],
        replace: bool,
    ) -> None:
        """One run's statements within add_runs' transaction."""
        if replace:  # deleting cascades to the replaced run's measurements
            connection.execute(
                "DELETE FROM runs WHERE experiment_id = ? AND variant = ?"
                " AND round_index = ? AND purpose = ?",
                (experiment_id, run.variant, run.round_index, run.purpose),
            )
        run_id = self._engine.inserted_id(connection, _INSERT_RUN, _run_row(experiment_id, run))
        # Many rows a statement: a statement a row cost more than the rest of the
        # transaction; at most MEASUREMENTS_PER_STATEMENT, within SQLite's 999 parameters of
        # old.
        parameters: list[object] = [run_id] * (3 * len(values))  # (run, metric, value)
        parameters[1::3] = run.metrics
        parameters[2::3] = values
        for start in range(0, len(values), MEASUREMENTS_PER_STATEMENT):
            count = min(len(values) - start, MEASUREMENTS_PER_STATEMENT)
            connection.execute(
                _insert_measurements(count), parameters[3 * start : 3 * (start + count)]
            )
        if data:
            connection.executemany(
                "INSERT INTO run_data (run_id, kind, key, count, data) VALUES (?, ?, ?, ?, ?)",
                [(run_id, d.kind, d.key, d.count, d.data) for d in data],
            )

    def _unknown_variant(self, experiment_id: int, variant: str) -> StoreError | None:
        """After a refused run: the clearer error when its experiment or variant is unknown
        (the foreign key's own message names neither), else None."""
        try:
            with self._read(f"read the variants of experiment {experiment_id}") as connection:
                return self._missing_variant(connection, experiment_id, variant)
        except StoreError:
            return None  # the store cannot say more than the error it gave

    def set_calibration(self, experiment_id: int, calibration: Calibration) -> None:
        """Store (or replace) the harness-overhead calibration of an experiment."""
        with self._write(f"store the calibration of experiment {experiment_id}") as connection:
            self._require_experiment(connection, experiment_id)
            connection.execute(
                "INSERT INTO calibrations (experiment_id, command, n, median_wall_seconds,"
                " min_wall_seconds) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (experiment_id) DO UPDATE SET command = excluded.command,"
                " n = excluded.n, median_wall_seconds = excluded.median_wall_seconds,"
                " min_wall_seconds = excluded.min_wall_seconds",
                (
                    experiment_id,
                    calibration.command,
                    calibration.n,
                    calibration.median_wall_seconds,
                    calibration.min_wall_seconds,
                ),
            )

    def finish_experiment(
        self, experiment_id: int, status: str, environment_end: Mapping[str, object] | None
    ) -> None:
        """Mark an experiment "complete" or "incomplete" now, with the fingerprint at its end,
        and release its lease. On a full disk the space held since the experiment started is
        given back first, so that this last write still fits."""
        _check_status(status, FINISHED_STATUSES)
        end_json = None if environment_end is None else dumps(environment_end, "the environment")
        try:
            self._finish(experiment_id, status, end_json)
        except StoreFull:
            if not self._engine.release_reserve():
                raise
            self._finish(experiment_id, status, end_json)
        finally:
            self._engine.release_reserve()

    def _finish(self, experiment_id: int, status: str, end_json: str | None) -> None:
        with self._write(f"finish experiment {experiment_id}") as connection:
            cursor = connection.execute(
                "UPDATE experiments SET status = ?, finished_at = ?, environment_end_json = ?,"
                " owner_host = NULL, owner_pid = NULL, owner_started = NULL WHERE id = ?",
                (status, time.time(), end_json, experiment_id),
            )
            if cursor.rowcount == 0:
                raise self._unknown(experiment_id)

    def set_status(self, experiment_id: int, status: str) -> None:
        """Change an experiment's status; back to "running" (on resume) also clears its
        finish time, since it is no longer finished."""
        _check_status(status, EXPERIMENT_STATUSES)
        with self._write(f"set the status of experiment {experiment_id}") as connection:
            cursor = connection.execute(
                "UPDATE experiments SET status = ?,"
                " finished_at = CASE WHEN ? THEN NULL ELSE finished_at END WHERE id = ?",
                (status, status == "running", experiment_id),
            )
            if cursor.rowcount == 0:
                raise self._unknown(experiment_id)

    def claim(self, experiment_id: int, owner: Owner) -> None:
        """Take the lease of an experiment to resume it: status "running", owned by ``owner``.
        Raises StoreError, changing nothing, when another live process holds it, or when the
        experiment is complete."""
        with self._write(f"claim experiment {experiment_id}") as connection:
            row = connection.execute(
                "SELECT status, owner_host, owner_pid, owner_started, heartbeat_at"
                f" FROM experiments WHERE id = ?{self._engine.lock_rows}",
                (experiment_id,),
            ).fetchone()
            if row is None:
                raise self._unknown(experiment_id)
            from cutaway.store.lease import owner_from_row  # not on the path of reads

            status, holder = row[0], owner_from_row(*row[1:4])
            heartbeat_at = self._columns(experiment_id).optional_real(
                "experiments.heartbeat_at", row[4]
            )
            if status == "complete":
                raise StoreError(f"experiment #{experiment_id} is complete: nothing to resume")
            now = time.time()
            if holder is not None and holder != owner and holder.alive(heartbeat_at, now):
                raise StoreError(
                    f"experiment #{experiment_id} is being run by "
                    f"{holder.describe(heartbeat_at, now)}: it can be resumed once that "
                    "process has stopped"
                )
            connection.execute(
                "UPDATE experiments SET status = 'running', finished_at = NULL, owner_host = ?,"
                " owner_pid = ?, owner_started = ?, heartbeat_at = ? WHERE id = ?",
                (*_owner_columns(owner), now, experiment_id),
            )
        self._engine.hold_reserve()

    # -- reads --------------------------------------------------------------------------------

    def experiment(self, experiment_id: int) -> StoredExperiment:
        """One stored experiment, every value checked (DamagedStoreError otherwise)."""
        with self._read(f"read experiment {experiment_id}") as connection:
            row = connection.execute(
                "SELECT e.id, e.name, e.status, e.created_at, e.finished_at, e.label,"
                " e.spec_json, e.spec_text, e.environment_json, e.environment_end_json,"
                " e.cutaway_version, c.experiment_id, c.command, c.n, c.median_wall_seconds,"
                " c.min_wall_seconds FROM experiments e"
                " LEFT JOIN calibrations c ON c.experiment_id = e.id WHERE e.id = ?",
                (experiment_id,),
            ).fetchone()
            variant_rows = connection.execute(
                "SELECT position, name, version FROM variants WHERE experiment_id = ?"
                " ORDER BY position",
                (experiment_id,),
            ).fetchall()
        if row is None:
            raise self._unknown(experiment_id)
        return stored_experiment(row, variant_rows, self._columns(experiment_id))

    def list_experiments(
        self, on_damaged: Callable[[DamagedStoreError], None] | None = None
    ) -> list[ExperimentRow]:
        """Every stored experiment, newest first. A row that is damaged raises
        DamagedStoreError, or with ``on_damaged`` is handed to it and left out."""
        with self._read("list experiments") as connection:
            rows = listing_rows(connection)
        listed = []
        for row in rows:
            try:
                listed.append(listing_row(row, self._columns(row[0])))
            except DamagedStoreError as error:
                if on_damaged is None:
                    raise
                on_damaged(error)
        return listed

    def resolve(self, ref: str | None) -> int:
        """The id of the experiment ``ref`` names: None or "latest" (the newest),
        "latest-incomplete" (the newest that stopped before its end and that no live process
        is running), an id, or a name (the newest experiment of that name)."""
        asked = _quoted("latest" if ref is None else ref)
        with self._read(f"find experiment {asked}") as connection:
            found = _find(connection, ref, self.location)
        if found is None:
            raise StoreError(
                f"no experiment {asked} in {self.location}; `cutaway list` shows the stored ones"
            )
        return found

    def runs(
        self, experiment_id: int, include_warmup: bool = True, purpose: str | None = TIMED
    ) -> list[Run]:
        """The experiment's runs of one purpose (the timed runs by default; None: every run)
        ordered by round_index, then order_in_round."""
        with self._read(f"read the runs of experiment {experiment_id}") as connection:
            self._require_experiment(connection, experiment_id)
            # A NULL parameter has no type in PostgreSQL: "any purpose" is spelt in the SQL.
            which = " AND r.purpose = ?" if purpose is not None else ""
            chosen = (experiment_id, include_warmup, *(() if purpose is None else (purpose,)))
            run_rows = connection.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs r WHERE r.experiment_id = ?"
                f" AND (? OR r.round_index >= 0){which}"
                " ORDER BY r.round_index, r.order_in_round, r.id",
                chosen,
            ).fetchall()
            measurement_rows = connection.execute(
                "SELECT m.run_id, m.metric, m.value FROM measurements m"
                " JOIN runs r ON r.id = m.run_id"
                f" WHERE r.experiment_id = ? AND (? OR r.round_index >= 0){which}",
                chosen,
            ).fetchall()
        return runs_from_rows(run_rows, measurement_rows, self._columns(experiment_id))

    def completed_slots(self, experiment_id: int) -> set[tuple[int, str, str]]:
        """(round_index, variant, purpose) of every stored run that was not interrupted: the
        slots a resumed experiment need not run again."""
        with self._read(f"read the runs of experiment {experiment_id}") as connection:
            self._require_experiment(connection, experiment_id)
            rows = connection.execute(
                "SELECT round_index, variant, purpose FROM runs"
                " WHERE experiment_id = ? AND status != 'interrupted'",
                (experiment_id,),
            ).fetchall()
        columns = self._columns(experiment_id)
        return {
            (
                columns.integer("runs.round_index", round_index),
                columns.text("runs.variant", name),
                columns.text("runs.purpose", purpose),
            )
            for round_index, name, purpose in rows
        }

    def set_probe(
        self,
        experiment_id: int,
        name: str,
        description: str,
        overhead_seconds: float | None,
        process_overhead_seconds: float | None = None,
    ) -> None:
        """Record (or replace) a probe of an experiment: its backend and measured overhead,
        per recorded event and per process."""
        with self._write(f"store probe {name!r} of experiment {experiment_id}") as connection:
            self._require_experiment(connection, experiment_id)
            connection.execute(
                "INSERT INTO probes (experiment_id, name, description, overhead_seconds,"
                " process_overhead_seconds) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (experiment_id, name) DO UPDATE SET"
                " description = excluded.description,"
                " overhead_seconds = excluded.overhead_seconds,"
                " process_overhead_seconds = excluded.process_overhead_seconds",
                (experiment_id, name, description, overhead_seconds, process_overhead_seconds),
            )

    def set_triage(self, name: str, change_id: str, state: str, note: str) -> None:
        """Record (or replace) the triage of a change flagged in the history of ``name``."""
        if state not in TRIAGE_STATES:
            raise StoreError(f"unknown triage state {state!r}; one of {', '.join(TRIAGE_STATES)}")
        with self._write(f"store the triage of change {change_id!r}") as connection:
            connection.execute(
                "INSERT INTO triage (name, change_id, state, note, at) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (name, change_id) DO UPDATE SET state = excluded.state,"
                " note = excluded.note, at = excluded.at",
                (name, change_id, state, note, time.time()),
            )

    def triage(self, name: str) -> dict[str, Triage]:
        """The triage of every change flagged in the history of ``name``, by change id."""
        with self._read(f"read the triage of {name!r}") as connection:
            rows = connection.execute(
                "SELECT change_id, state, note, at FROM triage WHERE name = ?", (name,)
            ).fetchall()
        found = {}
        for change_id, state, note, at in rows:
            if not (
                isinstance(change_id, str)
                and state in TRIAGE_STATES
                and isinstance(note, str)
                and isinstance(at, int | float)
            ):
                raise DamagedStoreError(
                    self.location, None, "triage", f"the row of change {change_id!r} of {name!r}"
                )
            found[change_id] = Triage(change_id, state, note, float(at))
        return found

    def probes(self, experiment_id: int) -> list[ProbeInfo]:
        """The probes recorded for an experiment, by name."""
        with self._read(f"load the probes of experiment {experiment_id}") as connection:
            rows = connection.execute(
                "SELECT name, description, overhead_seconds, process_overhead_seconds"
                " FROM probes WHERE experiment_id = ? ORDER BY name",
                (experiment_id,),
            ).fetchall()
        return [probe_info(row, self._columns(experiment_id)) for row in rows]

    def run_data(self, experiment_id: int, kind: str) -> list[StoredRunData]:
        """Every counted, successful run's data of one kind, in round order (from runs of any
        purpose: a probe's data comes from the runs it attached to)."""
        with self._read(f"load {kind} data of experiment {experiment_id}") as connection:
            self._require_experiment(connection, experiment_id)
            # Order the keys first and fetch each blob by its primary key: ordering rows that
            # carry the blobs would copy every blob through SQLite's sorter (seconds for a run
            # with ten million calls).
            keys = connection.execute(
                "SELECT d.run_id, r.variant, r.round_index, d.key, d.count FROM run_data d"
                " JOIN runs r ON r.id = d.run_id WHERE r.experiment_id = ? AND d.kind = ?"
                " AND r.round_index >= 0 AND r.status = 'ok'"
                " ORDER BY r.round_index, r.order_in_round, d.key",
                (experiment_id, kind),
            ).fetchall()
            columns = self._columns(experiment_id)
            found = []
            for row in keys:
                checked = run_data_key(row, columns)
                (data,) = connection.execute(
                    "SELECT data FROM run_data WHERE run_id = ? AND kind = ? AND key = ?",
                    (row[0], kind, row[3]),
                ).fetchone()
                found.append(run_data_item(checked, data, columns, row[0]))
        return found

    def experiment_content(
        self, experiment_id: int, largest_run_data_bytes: int
    ) -> list[tuple[str, list[tuple[object, ...]]]] | None:
        """Every stored row of one experiment, table by table (CONTENT_TABLES), as stored and
        unchecked, read in one snapshot: what a digest of its content reads
        (cutaway.kept_analysis). None when it holds more than ``largest_run_data_bytes`` of
        run data (a probe's records: reading them all would cost more than the digest saves).
        Raises StoreError when there is no such experiment."""
        with self._read(f"read experiment {experiment_id}") as connection:
            self._require_experiment(connection, experiment_id)
            (run_data_bytes,) = connection.execute(
                f"SELECT SUM(LENGTH(data)) FROM run_data {_OF_ITS_RUNS}", (experiment_id,)
            ).fetchone()
            if run_data_bytes is not None and run_data_bytes > largest_run_data_bytes:
                return None
            return [
                (table, connection.execute(query, (experiment_id,)).fetchall())
                for table, query in _CONTENT_QUERIES.items()
            ]

    def commits_by_others(self) -> int | None:
        """A count that changes whenever another connection (another process, another Store)
        commits to the store, and only then (SQLite's data_version): two equal counts mean
        that nothing another connection could write changed in between. None for an engine
        that keeps no such count (PostgreSQL)."""
        if not isinstance(self._engine, SqliteEngine):
            return None
        with self._read("read the store's data version") as connection:
            (version,) = connection.execute("PRAGMA data_version").fetchone()
        return int(version)

    def metric_names(self, experiment_id: int) -> tuple[str, ...]:
        """The names of every metric stored for any run of the experiment, sorted."""
        with self._read(f"read the metrics of experiment {experiment_id}") as connection:
            self._require_experiment(connection, experiment_id)
            rows = connection.execute(
                "SELECT DISTINCT m.metric FROM measurements m JOIN runs r ON r.id = m.run_id"
                " WHERE r.experiment_id = ? AND r.purpose = 'timed' ORDER BY m.metric",
                (experiment_id,),
            ).fetchall()
        return tuple(name for (name,) in rows)

    def has_usable_rounds(self, experiment_id: int) -> bool:
        """Whether some counted round holds a successful run of every variant: without one
        there is nothing to compare (with one variant: some successful counted run)."""
        with self._read(f"count the usable rounds of experiment {experiment_id}") as connection:
            row = connection.execute(
                "SELECT EXISTS (SELECT 1 FROM runs WHERE experiment_id = ? AND round_index >= 0"
                " AND status = 'ok' AND purpose = 'timed'"
                " GROUP BY round_index HAVING COUNT(DISTINCT variant) ="
                " (SELECT COUNT(*) FROM variants WHERE experiment_id = ?))",
                (experiment_id, experiment_id),
            ).fetchone()
        return bool(row[0])

    def metric_table(self, experiment_id: int, metric: str, purpose: str = TIMED) -> MetricTable:
        """One metric as a counted-rounds x variants matrix (see :class:`MetricTable`), read
        from the runs of one purpose: the timed runs, or a probe's own (``Metric.purpose``)."""
        with self._read(f"read {metric!r} of experiment {experiment_id}") as connection:
            self._require_experiment(connection, experiment_id)
            variant_rows = connection.execute(
                "SELECT position, name FROM variants WHERE experiment_id = ? ORDER BY position",
                (experiment_id,),
            ).fetchall()
            # One row per counted run: (round, column, value or NULL when not usable, run id).
            cells = connection.execute(
                "SELECT r.round_index, v.position, CASE WHEN r.status = 'ok' THEN m.value END,"
                " r.id FROM runs r"
                " JOIN variants v ON v.experiment_id = r.experiment_id AND v.name = r.variant"
                " LEFT JOIN measurements m ON m.run_id = r.id AND m.metric = ?"
                " WHERE r.experiment_id = ? AND r.round_index >= 0 AND r.purpose = ?",
                (metric, experiment_id, purpose),
            ).fetchall()
        from cutaway.numeric import np  # here only: listing experiments must not import numpy

        columns = self._columns(experiment_id)
        variants = variant_names(variant_rows, columns)
        try:  # numpy turns the NULLs (None) into NaN
            matrix = np.array(cells, dtype=np.float64).reshape(-1, 4)
        except (TypeError, ValueError):
            matrix = None
        if matrix is None or not _usable_cells(matrix, metric_minimum(metric)):
            check_cells(cells, metric, columns)  # raises, naming the damaged cell
            raise AssertionError("a damaged cell was not found")  # pragma: no cover
        rounds, row_of_cell = np.unique(matrix[:, 0].astype(np.int64), return_inverse=True)
        values = np.full((len(rounds), len(variants)), np.nan, dtype=np.float64)
        values[row_of_cell.reshape(-1), matrix[:, 1].astype(np.intp)] = matrix[:, 2]
        return MetricTable(rounds=rounds, variants=variants, values=values)

    def timed_tables_and_runs(
        self, experiment_id: int, metrics: Sequence[str]
    ) -> tuple[dict[str, MetricTable], list[Run]] | None:
        """The metric tables of ``metrics`` (each as :meth:`metric_table` reads it from the
        timed runs) and the counted timed runs (as ``runs(experiment_id, include_warmup=False)``
        reads them), from one read of the runs and their measurements instead of one per metric
        and one more for the runs: together they were most of an analysis's reading.

        None when some value read is one that the all-at-once checks do not pass: the caller
        then reads them as before, one metric at a time and the runs after, and the damaged
        value is named as it always was."""
        with self._read(f"read the runs of experiment {experiment_id}") as connection:
            self._require_experiment(connection, experiment_id)
            variant_rows = connection.execute(
                "SELECT position, name FROM variants WHERE experiment_id = ? ORDER BY position",
                (experiment_id,),
            ).fetchall()
            run_rows = connection.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs r WHERE r.experiment_id = ?"
                " AND r.round_index >= 0 AND r.purpose = ?"
                " ORDER BY r.round_index, r.order_in_round, r.id",
                (experiment_id, TIMED),
            ).fetchall()
            measurement_rows = connection.execute(
                "SELECT m.run_id, m.metric, m.value FROM measurements m"
                " JOIN runs r ON r.id = m.run_id"
                " WHERE r.experiment_id = ? AND r.round_index >= 0 AND r.purpose = ?",
                (experiment_id, TIMED),
            ).fetchall()
        columns = self._columns(experiment_id)
        variants = variant_names(variant_rows, columns)
        runs = usable_runs(run_rows, measurement_rows)
        if runs is None:
            return None
        return _metric_tables(variants, runs, metrics), runs

    # -- plumbing -----------------------------------------------------------------------------

    def _write(self, what: str | Callable[[], str]) -> _Transaction:
        """One write transaction (the engine's BEGIN keeps a second writer from changing what
        this one reads). ``what`` it does, as its error messages say: a function to build it
        only for a message, where even that costs (between two measured runs)."""
        return _Transaction(self._engine, self._engine.begin_write, what)

    def _read(self, what: str) -> _Transaction:
        """One read transaction: its queries see one snapshot even while another process
        writes."""
        return _Transaction(self._engine, self._engine.begin_read, what)

    def _columns(self, experiment_id: int | None) -> Columns:
        """The checks of values read for ``experiment_id`` (see checks.py)."""
        return Columns(self.location, experiment_id)

    def _unknown(self, experiment_id: int) -> StoreError:
        return StoreError(
            f"no experiment {experiment_id} in {self.location}; "
            "`cutaway list` shows the stored ones"
        )

    def _require_experiment(self, connection: Connection, experiment_id: int) -> None:
        found = connection.execute(
            "SELECT 1 FROM experiments WHERE id = ?", (experiment_id,)
        ).fetchone()
        if found is None:
            raise self._unknown(experiment_id)

    def _missing_variant(
        self, connection: Connection, experiment_id: int, variant: str
    ) -> StoreError | None:
        """Why ``experiment_id`` cannot hold a run of ``variant`` (no such experiment, no such
        variant in it), or None when it can."""
        found = connection.execute(
            "SELECT 1 FROM variants WHERE experiment_id = ? AND name = ?",
            (experiment_id, variant),
        ).fetchone()
        if found is not None:
            return None
        found = connection.execute(
            "SELECT 1 FROM experiments WHERE id = ?", (experiment_id,)
        ).fetchone()
        if found is None:
            return self._unknown(experiment_id)
        return StoreError(f"experiment {experiment_id} has no variant {variant!r}")


class _Transaction:
    """One transaction, as a context manager that gives its connection: BEGIN on entry,
    COMMIT on a clean exit, ROLLBACK on any exception (a signal too), and an engine's error
    raised as the StoreError that says what was being done (``what``) and in which store.

    A class rather than a contextlib generator: one of these runs between every two measured
    runs (Store.add_run), and two nested generators cost it several microseconds more."""

    __slots__ = ("_begin", "_connection", "_engine", "_what")

    def __init__(self, engine: Engine, begin: str, what: str | Callable[[], str]) -> None:
        self._engine = engine
        self._begin = begin
        self._what = what

    def __enter__(self) -> Connection:
        self._connection = connection = self._engine.connection()
        try:
            # BEGIN inside the try: a signal or an error just after it took effect (Python
            # delivers a signal when the call returns) still rolls back, so the store's next
            # command does not find a transaction open.
            connection.execute(self._begin)
        except BaseException as error:
            self._failed(error)
            raise
        return connection

    def __exit__(
        self,
        error_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error is not None:
            self._failed(error)
            return  # the error goes on as it is
        try:
            self._connection.execute("COMMIT")
        except BaseException as commit_error:
            self._failed(commit_error)
            raise

    def _failed(self, error: BaseException) -> None:
        """After ``error`` inside the transaction: roll it back, and raise the StoreError
        that explains an engine's error (or the rollback's own); return for any other."""
        try:
            if self._connection.in_transaction:
                self._connection.execute("ROLLBACK")
        except Exception as rollback_error:
            self._raise_store_error(rollback_error)
            raise
        self._raise_store_error(error)

    def _raise_store_error(self, error: BaseException) -> None:
        if not isinstance(error, Exception):
            return  # a signal (KeyboardInterrupt, SystemExit) goes on as it is
        what = self._what if isinstance(self._what, str) else self._what()
        found = self._engine.store_error(error, f"cannot {what} in {self._engine.location}")
        if found is not None and found is not error:
            raise found from error


@functools.cache
def _insert_measurements(count: int) -> str:
    """The INSERT of a run's ``count`` measurements, in one statement."""
    rows = ", ".join(["(?, ?, ?)"] * count)
    return f"INSERT INTO measurements (run_id, metric, value) VALUES {rows}"


def _storing(experiment_id: int, run: Run, count: int = 1) -> str:
    """What add_run does (add_runs, from ``run`` on), as its error messages say."""
    more = f" and the {count - 1} runs after it" if count > 1 else ""
    return f"store run {run.variant!r} round {run.round_index}{more} of experiment {experiment_id}"


def _run_row(experiment_id: int, run: Run) -> tuple[object, ...]:
    """The runs table's row of ``run`` (_INSERT_RUN's parameters)."""
    names = json.dumps(list(run.leftover_names), ensure_ascii=False) if run.leftover_names else "[]"
    return (
        experiment_id, run.variant, run.round_index, run.order_in_round, run.status.value,
        run.exit_code, run.signal, run.started_at, run.message, run.leftover_processes, names,
        run.purpose,
    )  # fmt: skip


def _quoted(ref: str) -> str:
    """An experiment's id or name as a message quotes it: cut, decoded with replacement."""
    shown, left_out = clip(ref)
    return repr(shown) + left_out_note(left_out)


def _metric_tables(
    variants: tuple[str, ...], runs: Sequence[Run], metrics: Sequence[str]
) -> dict[str, MetricTable]:
    """:meth:`Store.metric_table` of each of ``metrics``, built from the runs it reads
    (counted, timed, every value checked): the same rounds, columns and values, NaN where a
    run did not end "ok" or lacks the metric."""
    from cutaway.numeric import np  # here only: listing experiments must not import numpy

    position_of = {name: position for position, name in enumerate(variants)}
    cells = [run for run in runs if run.variant in position_of]  # as the join with variants
    # Through float64 as metric_table's matrix takes them, so that any round reads the same.
    round_of_cell = np.array([run.round_index for run in cells], dtype=np.float64)
    rounds, row_of_cell = np.unique(round_of_cell.astype(np.int64), return_inverse=True)
    place = (row_of_cell.reshape(-1), np.array([position_of[r.variant] for r in cells], np.intp))
    usable = [run.metrics if run.status is RunStatus.OK else {} for run in cells]
    tables = {}
    for metric in metrics:
        values = np.full((len(rounds), len(variants)), np.nan, dtype=np.float64)
        values[place] = np.array(list(map(methodcaller("get", metric, math.nan), usable)))
        tables[metric] = MetricTable(rounds=rounds.copy(), variants=variants, values=values)
    return tables


def _usable_cells(matrix: npt.NDArray[np.float64], minimum: float | None) -> bool:
    """Whether every (round, position, value, run id) row of a metric's cells is as cutaway
    writes it: whole rounds and positions, and each value finite (or NaN: no usable run) and
    not below ``minimum``, in the range of measurements (store/checks.py). Compared without
    arithmetic, so NaN raises no numpy warning."""
    from cutaway.numeric import np

    places = matrix[:, :2]
    if not (np.isfinite(places).all() and np.array_equal(places, np.trunc(places))):
        return False
    values = matrix[:, 2]
    known = values[~np.isnan(values)]
    if not np.isfinite(known).all():
        return False
    size = np.abs(known)
    in_range = (size <= LARGEST_MEASUREMENT) & ((known == 0) | (size >= SMALLEST_MEASUREMENT))
    return bool(in_range.all()) and (minimum is None or bool((known >= minimum).all()))


def _find(connection: Connection, ref: str | None, location: str) -> int | None:
    if ref is None or ref == "latest":
        row = connection.execute("SELECT MAX(id) FROM experiments").fetchone()
    elif ref == "latest-incomplete":
        # The newest experiment that stopped before its end and that no live process runs.
        from cutaway.store.lease import owner_from_row  # (socket, tempfile) not for a report

        now = time.time()
        for found_id, host, pid, started, heartbeat_at in connection.execute(
            "SELECT id, owner_host, owner_pid, owner_started, heartbeat_at FROM experiments"
            " WHERE status IN ('running', 'incomplete') ORDER BY id DESC"
        ):
            holder = owner_from_row(host, pid, started)
            heartbeat = Columns(location, found_id).optional_real(
                "experiments.heartbeat_at", heartbeat_at
            )
            if holder is None or not holder.alive(heartbeat, now):
                return int(found_id)
        return None
    else:
        row = None
        # An id fits the stores' 64-bit integers; longer digits can only be a name.
        if ref.isascii() and ref.isdigit() and len(ref) <= 19 and int(ref) < 2**63:
            row = connection.execute(
                "SELECT id FROM experiments WHERE id = ?", (int(ref),)
            ).fetchone()
        if row is None:  # not an id: a name, even one made of digits
            row = connection.execute(
                "SELECT MAX(id) FROM experiments WHERE name = ?", (ref,)
            ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _owner_columns(owner: Owner | None) -> tuple[str | None, int | None, int | None]:
    if owner is None:
        return (None, None, None)
    return (owner.host, owner.pid, owner.started)


def _check_status(status: str, allowed: tuple[str, ...]) -> None:
    if status not in allowed:
        raise ValueError(f"experiment status {status!r} is not one of {', '.join(allowed)}")
