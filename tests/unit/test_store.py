"""The store: round trips, loaders, resolution, migrations and atomicity. The tests of a
``store`` run on both engines, SQLite and PostgreSQL (a real server, conftest.py)."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from stores import raw_execute

from cutaway.model import TIMED, Calibration, Hooks, Run, RunData, RunStatus, Spec, Variant
from cutaway.store import LATEST_VERSION, ProbeInfo, Store, StoreError
from cutaway.store import schema as store_schema
from cutaway.store.db import MEASUREMENTS_PER_STATEMENT

WALL_AND_RSS = {"wall": 0.5, "max_rss": 1_048_576.0}


def make_spec(name: str = "sort-speed") -> Spec:
    return Spec(
        name=name,
        variants=(
            Variant(name="base", command=("sort", "-n", "data.txt")),
            Variant(
                name="fast",
                command="sort --parallel=4 data.txt | head",
                shell=True,
                env={"LC_ALL": "C"},
                cwd="/tmp",
                hooks=Hooks(setup="make", prepare="sync", cleanup="rm -f out"),
                params={"threads": "4"},
            ),
            Variant(name="slow", command=("sort", "-S", "1M", "data.txt")),
        ),
        baseline="base",
        rounds=3,
        warmup_rounds=1,
        timeout_seconds=10.0,
        until_width=0.005,
        seed=7,
        source_path="bench/sort.toml",
        source_text='name = "sort-speed"\n# exactly as given\n',
    )


def make_run(
    variant: str,
    round_index: int,
    order_in_round: int = 0,
    status: RunStatus = RunStatus.OK,
    metrics: dict[str, float] | None = None,
) -> Run:
    failed = status is not RunStatus.OK
    return Run(
        variant=variant,
        round_index=round_index,
        order_in_round=order_in_round,
        status=status,
        exit_code=1 if failed else 0,
        signal=9 if status is RunStatus.TIMEOUT else None,
        metrics=WALL_AND_RSS if metrics is None else metrics,
        started_at=1_700_000_000.25 + round_index,
        message="boom: exit 1" if failed else "",
    )


@pytest.fixture
def store(store_location: str) -> Iterator[Store]:
    """A new store on each engine."""
    with Store(store_location) as opened:
        yield opened


def new_experiment(store: Store, spec: Spec | None = None, label: str | None = None) -> int:
    return store.create_experiment(spec or make_spec(), {"cpu": "x86"}, label, "0.1.0")


# -- opening and migrations ---------------------------------------------------------------------


def test_opening_creates_parent_directories_and_configures_wal(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "cutaway.db"
    with Store(str(path)) as store:
        assert store.path == path
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION


def test_reopening_keeps_data_and_does_not_migrate_again(tmp_path: Path) -> None:
    path = tmp_path / "cutaway.db"
    with Store(path) as store:
        experiment_id = new_experiment(store)
    with Store(path) as store:
        assert store.experiment(experiment_id).name == "sort-speed"


def test_migrations_are_numbered_in_order_and_dated_in_the_history() -> None:
    versions = [migration.version for migration in store_schema.MIGRATIONS]
    assert versions == list(range(1, LATEST_VERSION + 1))
    for migration in store_schema.MIGRATIONS:
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", migration.date)
        assert f"- {migration.version} ({migration.date})" in (store_schema.__doc__ or "")


def test_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE from_the_future (x)")
        raw.execute(f"PRAGMA user_version = {LATEST_VERSION + 5}")
    raw.close()
    before = path.read_bytes()
    with pytest.raises(StoreError) as error:
        Store(path)
    message = str(error.value)
    assert str(path) in message
    assert str(LATEST_VERSION + 5) in message
    assert f"up to {LATEST_VERSION}" in message
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists()


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("this is not sqlite, " * 100)
    with pytest.raises(StoreError, match=r"notes\.db"):
        Store(path)


def test_closed_store_refuses_work(tmp_path: Path) -> None:
    store = Store(tmp_path / "cutaway.db")
    store.close()
    store.close()  # closing twice is harmless
    with pytest.raises(StoreError, match="closed"):
        store.list_experiments()


# -- experiments --------------------------------------------------------------------------------


def test_experiment_round_trip(store: Store) -> None:
    spec = make_spec()
    environment = {"kernel": "6.1", "cpus": 8, "governor": None, "nested": {"b": 1, "a": [2]}}
    experiment_id = store.create_experiment(spec, environment, "before-fix", "0.1.0")

    stored = store.experiment(experiment_id)
    assert stored.id == experiment_id
    assert stored.spec == spec
    assert stored.spec.source_text == spec.source_text
    assert stored.name == "sort-speed"
    assert stored.status == "running"
    assert stored.label == "before-fix"
    assert stored.environment == environment
    assert stored.environment_end is None
    assert stored.finished_at is None
    assert stored.cutaway_version == "0.1.0"
    assert stored.calibration is None
    assert stored.created_at > 1_700_000_000


def test_quick_mode_spec_without_source_round_trips(store: Store) -> None:
    spec = Spec(name="quick", variants=(Variant("a", ("true",)),), baseline="a")
    stored = store.experiment(store.create_experiment(spec, {}, None, "0.1.0"))
    assert stored.spec == spec
    assert stored.spec.source_text is None
    assert stored.label is None


def test_stored_json_has_sorted_keys(store: Store) -> None:
    experiment_id = store.create_experiment(make_spec(), {"z": 1, "a": 2}, None, "0.1.0")
    ((spec_json, environment_json),) = raw_execute(
        store, "SELECT spec_json, environment_json FROM experiments WHERE id = ?", (experiment_id,)
    )
    ((variant_json,),) = raw_execute(
        store,
        "SELECT spec_json FROM variants WHERE experiment_id = ? AND position = 1",
        (experiment_id,),
    )
    assert environment_json == '{"a": 2, "z": 1}'
    assert spec_json == json.dumps(make_spec().to_dict(), sort_keys=True)
    assert variant_json == json.dumps(make_spec().variants[1].to_dict(), sort_keys=True)


def test_duplicate_variant_names_store_nothing(store: Store) -> None:
    twice = Variant("a", ("true",))
    spec = Spec(name="dup", variants=(twice, twice), baseline="a")
    with pytest.raises(StoreError, match="dup"):
        store.create_experiment(spec, {}, None, "0.1.0")
    assert store.list_experiments() == []


def test_read_only_mappings_in_the_environment_are_stored(store: Store) -> None:
    environment = MappingProxyType({"cpu": MappingProxyType({"model": "x", "mhz": 3000.0})})
    experiment_id = store.create_experiment(make_spec(), environment, None, "0.1.0")
    assert store.experiment(experiment_id).environment == {"cpu": {"model": "x", "mhz": 3000.0}}


def test_unserialisable_environment_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError, match="environment"):
        store.create_experiment(make_spec(), {"when": object()}, None, "0.1.0")
    assert store.list_experiments() == []


def test_finish_and_resume_status(store: Store) -> None:
    experiment_id = new_experiment(store)
    store.finish_experiment(experiment_id, "incomplete", {"load": 0.5})
    finished = store.experiment(experiment_id)
    assert finished.status == "incomplete"
    assert finished.finished_at is not None and finished.finished_at >= finished.created_at
    assert finished.environment_end == {"load": 0.5}

    store.set_status(experiment_id, "running")
    resumed = store.experiment(experiment_id)
    assert resumed.status == "running"
    assert resumed.finished_at is None

    store.finish_experiment(experiment_id, "complete", None)
    assert store.experiment(experiment_id).status == "complete"
    assert store.experiment(experiment_id).environment_end is None


def test_invalid_statuses_are_rejected(store: Store) -> None:
    experiment_id = new_experiment(store)
    with pytest.raises(ValueError, match="done"):
        store.set_status(experiment_id, "done")
    with pytest.raises(ValueError, match="running"):
        store.finish_experiment(experiment_id, "running", None)
    assert store.experiment(experiment_id).status == "running"


def test_calibration_round_trip_and_replacement(store: Store) -> None:
    experiment_id = new_experiment(store)
    first = Calibration(command="true", n=20, median_wall_seconds=0.0012, min_wall_seconds=0.001)
    store.set_calibration(experiment_id, first)
    assert store.experiment(experiment_id).calibration == first
    second = Calibration(command="/bin/true", n=50, median_wall_seconds=0.002, min_wall_seconds=0.0)
    store.set_calibration(experiment_id, second)
    assert store.experiment(experiment_id).calibration == second


def test_list_experiments_newest_first_with_counts(store: Store) -> None:
    older = new_experiment(store, label="old")
    newer = new_experiment(store, Spec("two", (Variant("a", ("true",)),), "a"))
    store.add_run(older, make_run("base", -1))
    store.add_run(older, make_run("base", 0))
    store.add_run(older, make_run("fast", 0, 1, RunStatus.FAILED))

    rows = store.list_experiments()
    assert [row.id for row in rows] == [newer, older]
    assert (rows[0].name, rows[0].status, rows[0].n_variants, rows[0].n_runs) == (
        "two",
        "running",
        1,
        0,
    )
    assert (rows[1].label, rows[1].n_variants, rows[1].n_runs) == ("old", 3, 3)


# -- resolve ------------------------------------------------------------------------------------


def test_resolve_latest_id_name_and_incomplete(store: Store) -> None:
    first = new_experiment(store, make_spec("alpha"))
    second = new_experiment(store, make_spec("beta"))
    third = new_experiment(store, make_spec("alpha"))
    store.finish_experiment(first, "incomplete", None)
    store.finish_experiment(third, "complete", None)
    store.finish_experiment(second, "complete", None)

    assert store.resolve(None) == third
    assert store.resolve("latest") == third
    assert store.resolve(str(second)) == second
    assert store.resolve("alpha") == third
    assert store.resolve("beta") == second
    assert store.resolve("latest-incomplete") == first
    store.set_status(second, "running")
    assert store.resolve("latest-incomplete") == second


def test_resolve_digits_fall_back_to_a_name(store: Store) -> None:
    named_2024 = new_experiment(store, make_spec("2024"))
    assert store.resolve("2024") == named_2024


@pytest.mark.parametrize("ref", ["nope", "999", "latest-incomplete", "latest", None])
def test_resolve_unknown_names_what_was_asked(store: Store, ref: str | None) -> None:
    if ref != "latest" and ref is not None:
        store.finish_experiment(new_experiment(store), "complete", None)
    with pytest.raises(StoreError) as error:
        store.resolve(ref)
    assert repr(ref or "latest") in str(error.value)
    assert "cutaway list" in str(error.value)


# -- runs ---------------------------------------------------------------------------------------


def test_runs_round_trip_in_round_order(store: Store) -> None:
    experiment_id = new_experiment(store)
    every_metric = {"wall": 1.25, "user": 1.0, "sys": 0.125, "max_rss": 123456789.0}
    written = [
        make_run("fast", 1, 1, RunStatus.TIMEOUT),
        make_run("base", 0, 0, metrics=every_metric),
        make_run("fast", -1, 0),
        make_run("fast", 0, 1, RunStatus.FAILED),
        make_run("base", 1, 0, RunStatus.ERROR, metrics={}),
        make_run("slow", 1, 2, RunStatus.INTERRUPTED),
    ]
    for run in written:
        store.add_run(experiment_id, run)

    expected = sorted(written, key=lambda run: (run.round_index, run.order_in_round))
    read_back = store.runs(experiment_id)
    assert read_back == expected
    assert [run.status for run in read_back] == [run.status for run in expected]
    assert all(isinstance(run.status, RunStatus) for run in read_back)
    assert read_back[1].metrics == every_metric
    assert read_back[0].warmup and read_back[0].signal is None
    assert store.runs(experiment_id, include_warmup=False) == expected[1:]


def test_a_run_of_more_metrics_than_one_statement_takes_keeps_them_all(store: Store) -> None:
    """A run's measurements are written many rows a statement (store/db.py), in as many
    statements as they need."""
    experiment_id = new_experiment(store)
    count = 2 * MEASUREMENTS_PER_STATEMENT + 7
    metrics = {f"phase:step {index}": index / 8 for index in range(count)}
    store.add_run(experiment_id, make_run("base", 0, metrics=metrics))
    (read_back,) = store.runs(experiment_id)
    assert read_back.metrics == metrics


def test_each_run_is_stored_under_the_id_its_row_was_given(store: Store) -> None:
    """A new row's id (SQLite's last rowid, PostgreSQL's RETURNING) is the one its children
    are stored under: the runs of two experiments written in turn, one replaced among them,
    each come back with their own measurements and probe data."""
    first, second = new_experiment(store), new_experiment(store, make_spec("other"))
    assert (store.experiment(first).name, store.experiment(second).name) == ("sort-speed", "other")
    for round_index in range(3):
        for experiment_id in (first, second):
            wall = 10.0 * experiment_id + round_index
            record = RunData("calls", "getpwnam", round_index, f"{wall}".encode())
            run = make_run("base", round_index, metrics={"wall": wall})
            store.add_run(experiment_id, run, [record], replace=False)
    redone = make_run("base", 1, metrics={"wall": 99.0})
    store.add_run(first, redone, [RunData("calls", "getpwnam", 9, b"redone")])
    for experiment_id, walls in (
        (first, [10.0 * first, 99.0, 10.0 * first + 2]),
        (second, [10.0 * second + index for index in range(3)]),
    ):
        assert [run.metrics for run in store.runs(experiment_id)] == [
            {"wall": wall} for wall in walls
        ]
        stored = store.run_data(experiment_id, "calls")
        assert [item.data for item in stored] == [
            b"redone" if wall == 99.0 else f"{wall}".encode() for wall in walls
        ]


def test_a_run_for_the_same_slot_replaces_the_earlier_one(store: Store) -> None:
    experiment_id = new_experiment(store)
    store.add_run(experiment_id, make_run("base", 0, 0, RunStatus.INTERRUPTED, {"gone": 1.0}))
    redone = make_run("base", 0, 2, metrics={"wall": 0.75})
    store.add_run(experiment_id, redone)
    assert store.runs(experiment_id) == [redone]
    assert store.metric_names(experiment_id) == ("wall",)
    assert raw_execute(store, "SELECT COUNT(*) FROM measurements") == [(1,)]


def test_completed_slots_skip_interrupted_runs(store: Store) -> None:
    experiment_id = new_experiment(store)
    store.add_run(experiment_id, make_run("base", -1))
    store.add_run(experiment_id, make_run("base", 0))
    store.add_run(experiment_id, make_run("fast", 0, 1, RunStatus.FAILED))
    store.add_run(experiment_id, make_run("slow", 0, 2, RunStatus.TIMEOUT))
    store.add_run(experiment_id, make_run("base", 1, 0, RunStatus.ERROR, {}))
    store.add_run(experiment_id, make_run("fast", 1, 1, RunStatus.INTERRUPTED))
    assert store.completed_slots(experiment_id) == {
        (-1, "base", "timed"),
        (0, "base", "timed"),
        (0, "fast", "timed"),
        (0, "slow", "timed"),
        (1, "base", "timed"),
    }


def test_metric_table_places_values_and_nans(store: Store) -> None:
    experiment_id = new_experiment(store)

    def add(variant: str, round_index: int, wall: float, status: RunStatus = RunStatus.OK) -> None:
        store.add_run(experiment_id, make_run(variant, round_index, 0, status, {"wall": wall}))

    add("base", -1, 99.0)  # warmup: not a counted round
    add("slow", 0, 3.0)  # added before base: columns still follow the spec
    add("base", 0, 1.0)
    add("fast", 0, 2.0, RunStatus.FAILED)
    add("base", 2, 1.5)
    add("fast", 2, 2.5)
    store.add_run(experiment_id, make_run("slow", 2, 0, metrics={"max_rss": 5.0}))  # no wall
    add("fast", 5, 9.0, RunStatus.TIMEOUT)  # round 5 has a run, though none is usable

    table = store.metric_table(experiment_id, "wall")
    assert table.variants == ("base", "fast", "slow")
    assert table.rounds.tolist() == [0, 2, 5]
    assert table.values.shape == (3, 3)
    assert table.values.dtype == np.float64
    np.testing.assert_array_equal(
        table.values,
        [[1.0, math.nan, 3.0], [1.5, 2.5, math.nan], [math.nan, math.nan, math.nan]],
    )
    both_finite = np.isfinite(table.values[:, 0]) & np.isfinite(table.values[:, 1])
    assert both_finite.tolist() == [False, True, False]


def test_metric_table_of_an_experiment_without_runs_is_empty(store: Store) -> None:
    table = store.metric_table(new_experiment(store), "wall")
    assert table.rounds.shape == (0,)
    assert table.values.shape == (0, 3)
    assert table.variants == ("base", "fast", "slow")


def test_metric_table_of_an_unknown_metric_is_all_nan(store: Store) -> None:
    experiment_id = new_experiment(store)
    store.add_run(experiment_id, make_run("base", 0))
    table = store.metric_table(experiment_id, "no_such_metric")
    assert table.rounds.tolist() == [0]
    assert np.isnan(table.values).all()


def test_metric_names_lists_every_stored_metric(store: Store) -> None:
    experiment_id = new_experiment(store)
    store.add_run(experiment_id, make_run("base", 0, metrics={"wall": 1.0, "probe.x": 2.0}))
    store.add_run(experiment_id, make_run("fast", 0, metrics={"user": 1.0}))
    assert store.metric_names(experiment_id) == ("probe.x", "user", "wall")


# -- errors and atomicity -----------------------------------------------------------------------


def test_unknown_experiment_is_a_store_error_everywhere(store: Store) -> None:
    calibration = Calibration("true", 1, 0.001, 0.001)
    calls: list[Callable[[], object]] = [
        lambda: store.experiment(42),
        lambda: store.add_run(42, make_run("base", 0)),
        lambda: store.set_calibration(42, calibration),
        lambda: store.finish_experiment(42, "complete", None),
        lambda: store.set_status(42, "running"),
        lambda: store.runs(42),
        lambda: store.completed_slots(42),
        lambda: store.metric_table(42, "wall"),
        lambda: store.metric_names(42),
    ]
    for call in calls:
        with pytest.raises(StoreError, match=r"no experiment 42 .*cutaway list"):
            call()


def test_a_run_of_an_unknown_variant_is_refused(store: Store) -> None:
    experiment_id = new_experiment(store)
    with pytest.raises(StoreError, match="no variant 'nope'"):
        store.add_run(experiment_id, make_run("nope", 0))
    assert store.runs(experiment_id) == []


def test_a_nan_measurement_stores_no_run(store: Store) -> None:
    experiment_id = new_experiment(store)
    # SQLite would store NaN as NULL, PostgreSQL as a NaN: the store refuses it on both.
    with pytest.raises(StoreError, match=r"metric 'user' is NaN"):
        store.add_run(experiment_id, make_run("base", 0, metrics={"wall": 1.0, "user": math.nan}))
    assert store.runs(experiment_id) == []
    assert store.completed_slots(experiment_id) == set()


def test_runs_stored_together_are_read_back_each_as_stored_alone(store: Store) -> None:
    experiment_id = new_experiment(store)
    runs = [
        make_run("base", 0, 0, metrics={"wall": 1.0, "user": 0.5}),
        make_run("fast", 0, 1, status=RunStatus.FAILED),
        make_run("slow", 0, 2, metrics={"wall": 3.0}),
    ]
    store.add_runs(experiment_id, [(run, ()) for run in runs], replace=False)
    assert store.runs(experiment_id) == runs
    assert store.completed_slots(experiment_id) == {(0, r.variant, TIMED) for r in runs}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (make_run("fast", 0, 1, metrics={"wall": math.nan}), r"'fast' round 0 .*'wall' is NaN"),
        (make_run("nope", 0, 1), r"no variant 'nope'"),
    ],
    ids=["nan", "unknown-variant"],
)
def test_runs_stored_together_are_all_stored_or_none(store: Store, bad: Run, message: str) -> None:
    experiment_id = new_experiment(store)
    with pytest.raises(StoreError, match=message):
        store.add_runs(
            experiment_id,
            [(make_run("base", 0, 0), ()), (bad, ()), (make_run("slow", 0, 2), ())],
            replace=False,
        )
    assert store.runs(experiment_id) == []


def test_a_failed_replacement_keeps_the_earlier_run(store: Store) -> None:
    experiment_id = new_experiment(store)
    earlier = make_run("base", 0, metrics={"wall": 1.0})
    store.add_run(experiment_id, earlier)
    # A trigger fails the transaction after the old run was deleted and the new one inserted.
    if store.engine == "sqlite":
        raw_execute(
            store,
            "CREATE TRIGGER fail_midway BEFORE INSERT ON measurements"
            " WHEN NEW.metric = 'explode' BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
        )
    else:
        raw_execute(
            store,
            "CREATE FUNCTION fail_midway() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " IF NEW.metric = 'explode' THEN RAISE EXCEPTION 'injected failure'; END IF;"
            " RETURN NEW; END $$",
        )
        raw_execute(
            store,
            "CREATE TRIGGER fail_midway BEFORE INSERT ON measurements"
            " FOR EACH ROW EXECUTE FUNCTION fail_midway()",
        )
    with pytest.raises(StoreError, match="injected failure"):
        store.add_run(experiment_id, make_run("base", 0, metrics={"wall": 2.0, "explode": 1.0}))
    assert store.runs(experiment_id) == [earlier]
    # The store is still usable after the rollback.
    store.add_run(experiment_id, make_run("fast", 0, 1))
    assert len(store.runs(experiment_id)) == 2


def test_run_data_is_stored_with_its_run_and_replaced_with_it(store: Store) -> None:

    spec = Spec(name="d", variants=(Variant("a", ("true",)),), baseline="a")
    experiment_id = store.create_experiment(spec, {}, None, "test")
    blob = bytes(range(256)) * 10
    run = Run("a", 0, 0, RunStatus.OK, 0, None, {"wall": 1.0}, 0.0)
    store.add_run(experiment_id, run, [RunData("calls", "getpwnam", 2, blob)])
    store.add_run(
        experiment_id,
        Run("a", -1, 0, RunStatus.OK, 0, None, {"wall": 1.0}, 0.0),
        [RunData("calls", "getpwnam", 1, b"warmup")],
    )
    (stored,) = store.run_data(experiment_id, "calls")
    assert (stored.variant, stored.round_index, stored.key, stored.count) == ("a", 0, "getpwnam", 2)
    assert stored.data == blob
    assert store.run_data(experiment_id, "other") == []
    store.add_run(experiment_id, run)  # replacing the slot drops its old data
    assert store.run_data(experiment_id, "calls") == []


def test_probes_and_triage_are_replaced_not_doubled(store: Store) -> None:
    experiment_id = new_experiment(store)
    store.set_probe(experiment_id, "calls", "uprobes", 1e-7)
    store.set_probe(experiment_id, "calls", "LD_PRELOAD", 2e-7, 1e-3)
    assert store.probes(experiment_id) == [ProbeInfo("calls", "LD_PRELOAD", 2e-7, 1e-3)]
    store.set_triage("sort-speed", "1-2", "confirmed", "")
    store.set_triage("sort-speed", "1-2", "accepted", "the new parser's price")
    (triage,) = store.triage("sort-speed").values()
    assert (triage.change_id, triage.state, triage.note) == (
        "1-2",
        "accepted",
        "the new parser's price",
    )


def test_a_run_holds_64_bit_integers(store: Store) -> None:
    """SQLite's INTEGER is 8 bytes, and so is what PostgreSQL is given (a process's start time
    in clock ticks outgrows 4 bytes after 248 days of uptime at 100 Hz)."""
    experiment_id = new_experiment(store)
    store.add_run(experiment_id, Run("base", 2**40, 0, RunStatus.OK, 2**33, None, {}, 0.0))
    assert store.runs(experiment_id)[0].round_index == 2**40


def test_version_2_run_data_moves_to_the_rowid_table_of_version_3(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    with sqlite3.connect(path, isolation_level=None) as raw:
        for migration in store_schema.MIGRATIONS[:2]:
            for statement in migration.sqlite_statements():
                raw.execute(statement)
        raw.execute("PRAGMA user_version = 2")
    raw.close()
    spec = Spec(name="d", variants=(Variant("a", ("true",)),), baseline="a")
    with sqlite3.connect(path, isolation_level=None) as raw:
        raw.execute(
            "INSERT INTO experiments (id, name, status, created_at, spec_json, environment_json,"
            " cutaway_version) VALUES (1, 'd', 'complete', 0, ?, '{}', 'old')",
            (json.dumps(spec.to_dict()),),
        )
        raw.execute("INSERT INTO variants VALUES (1, 0, 'a', ?)", (json.dumps({"name": "a"}),))
        raw.execute(
            "INSERT INTO runs (id, experiment_id, variant, round_index, order_in_round, status,"
            " started_at) VALUES (7, 1, 'a', 0, 0, 'ok', 0)"
        )
        raw.execute(
            "INSERT INTO run_data VALUES (7, 'calls', 'getpwnam', 2, ?)", (b"\x01" * 100_000,)
        )
    raw.close()
    with Store(path) as store:
        (stored,) = store.run_data(1, "calls")
        assert (stored.key, stored.count, stored.data) == ("getpwnam", 2, b"\x01" * 100_000)
        store.add_run(1, make_run("a", 0))  # replacing the run still drops its data
        assert store.run_data(1, "calls") == []
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION
        (table,) = raw.execute("SELECT sql FROM sqlite_schema WHERE name = 'run_data'").fetchone()
        assert "WITHOUT ROWID" not in table and "UNIQUE (run_id, kind, key)" in table
    raw.close()


def test_probes_keep_their_overhead_per_event_and_per_process(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    with sqlite3.connect(path, isolation_level=None) as raw:  # a version-3 store with a probe
        for migration in store_schema.MIGRATIONS[:3]:
            for statement in migration.sqlite_statements():
                raw.execute(statement)
        raw.execute("PRAGMA user_version = 3")
        spec = Spec(name="d", variants=(Variant("a", ("true",)),), baseline="a")
        raw.execute(
            "INSERT INTO experiments (id, name, status, created_at, spec_json, environment_json,"
            " cutaway_version) VALUES (1, 'd', 'complete', 0, ?, '{}', 'old')",
            (json.dumps(spec.to_dict()),),
        )
        raw.execute("INSERT INTO probes VALUES (1, 'calls', 'old probe', 7e-8)")
    raw.close()
    with Store(path) as store:
        assert store.probes(1) == [ProbeInfo("calls", "old probe", 7e-8, None)]
        store.set_probe(1, "syscalls", "strace", 2.9e-5, 4.4e-3)
        store.set_probe(1, "calls", "new probe", None)
        assert store.probes(1) == [
            ProbeInfo("calls", "new probe", None, None),
            ProbeInfo("syscalls", "strace", 2.9e-5, 4.4e-3),
        ]


def test_what_a_run_left_behind_is_stored_with_it(store: Store) -> None:
    spec = Spec(name="d", variants=(Variant("a", ("true",)),), baseline="a")
    names = ("sleep", "\x1b[2Jx", "sh")  # a process names itself: data, like any other
    experiment_id = store.create_experiment(spec, {}, None, "test")
    left = Run("a", 0, 0, RunStatus.OK, 0, None, {"wall": 1.0}, 0.0, "", 3, names)
    store.add_run(experiment_id, left)
    store.add_run(experiment_id, Run("a", 1, 0, RunStatus.OK, 0, None, {"wall": 1.0}, 0.0))
    first, second = store.runs(experiment_id)
    assert (first.leftover_processes, first.leftover_names) == (3, names)
    assert (second.leftover_processes, second.leftover_names) == (0, ())


def test_runs_stored_before_version_6_left_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    spec = Spec(name="d", variants=(Variant("a", ("true",)),), baseline="a")
    with sqlite3.connect(path, isolation_level=None) as raw:
        for migration in store_schema.MIGRATIONS[:5]:
            for statement in migration.sqlite_statements():
                raw.execute(statement)
        raw.execute("PRAGMA user_version = 5")
        raw.execute(
            "INSERT INTO experiments (id, name, status, created_at, spec_json, environment_json,"
            " cutaway_version) VALUES (1, 'd', 'complete', 0, ?, '{}', 'old')",
            (json.dumps(spec.to_dict()),),
        )
        raw.execute("INSERT INTO variants VALUES (1, 0, 'a', ?)", (json.dumps({}),))
        raw.execute(
            "INSERT INTO runs (experiment_id, variant, round_index, order_in_round, status,"
            " exit_code, signal, started_at) VALUES (1, 'a', 0, 0, 'ok', 0, NULL, 0)"
        )
    raw.close()
    with Store(path) as store:
        (run,) = store.runs(1)
        assert (run.leftover_processes, run.leftover_names) == (0, ())
        assert store.experiment(1).spec.keep_leftovers is False


def test_damaged_leftover_names_are_a_store_error(tmp_path: Path) -> None:
    spec = Spec(name="d", variants=(Variant("a", ("true",)),), baseline="a")
    with Store(tmp_path / "db") as store:
        experiment_id = store.create_experiment(spec, {}, None, "test")
        store.add_run(experiment_id, Run("a", 0, 0, RunStatus.OK, 0, None, {"wall": 1.0}, 0.0))
    with sqlite3.connect(tmp_path / "db") as raw:
        raw.execute("UPDATE runs SET leftover_names = '{not json'")
    raw.close()
    with Store(tmp_path / "db") as store, pytest.raises(StoreError, match="leftover_names"):
        store.runs(experiment_id)


# -- transactions -------------------------------------------------------------------------------


class _InterruptedAfterBegin:
    """A connection that takes a signal (KeyboardInterrupt) just after its next BEGIN took
    effect, as Python delivers one when the database call returns."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.armed = True

    def execute(self, sql: str, *parameters: Any) -> Any:
        cursor = self.connection.execute(sql, *parameters)
        if self.armed and sql.startswith("BEGIN"):
            self.armed = False
            raise KeyboardInterrupt
        return cursor

    def executemany(self, sql: str, parameters: Any) -> Any:
        return self.connection.executemany(sql, parameters)

    @property
    def in_transaction(self) -> bool:
        return bool(self.connection.in_transaction)


def test_a_signal_right_after_begin_leaves_no_transaction_open(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write interrupted between its BEGIN and its work rolls back: the next command of
    the same store does not find a transaction still open ("cannot start a transaction
    within a transaction")."""
    engine = store._engine
    interrupted = _InterruptedAfterBegin(engine.connection())
    monkeypatch.setattr(engine, "connection", lambda: interrupted)
    with pytest.raises(KeyboardInterrupt):
        new_experiment(store)
    assert not interrupted.in_transaction
    experiment_id = new_experiment(store)  # the same connection, a new transaction
    assert [row.id for row in store.list_experiments()] == [experiment_id]


# -- the write between two runs -----------------------------------------------------------------


def _runs_in_the_database_file(path: Path) -> int:
    """The runs the database file itself holds, its WAL left out (what a checkpoint copied)."""
    with sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True) as raw:
        tables = {row[0] for row in raw.execute("SELECT name FROM sqlite_master")}
        if "runs" not in tables:  # not even the schema is there yet
            return 0
        return int(raw.execute("SELECT count(*) FROM runs").fetchone()[0])


def test_a_running_experiment_is_checkpointed_by_time_not_every_thousand_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cutaway.store import sqlite as sqlite_engine
    from cutaway.store.lease import Owner

    path = tmp_path / "cutaway.db"
    monkeypatch.setattr(sqlite_engine, "CHECKPOINT_SECONDS", 3600.0)
    with Store(path) as store:
        experiment_id = store.create_experiment(make_spec(), {}, None, "0.1.0", Owner.current())
        for round_index in range(400):  # well over SQLite's own 1,000 pages of WAL
            store.add_run(experiment_id, make_run("base", round_index), replace=False)
        assert path.with_name(path.name + "-wal").stat().st_size > 1000 * 4096
        assert _runs_in_the_database_file(path) == 0  # all of them in the WAL alone
        with sqlite3.connect(path) as raw:  # committed: another process reads every one
            assert raw.execute("SELECT count(*) FROM runs").fetchone()[0] == 400
        monkeypatch.setattr(sqlite_engine, "CHECKPOINT_SECONDS", 0.0)
        store.add_run(experiment_id, make_run("base", 400), replace=False)
        # The checkpoint after that run synced the WAL and copied it into the database file.
        assert _runs_in_the_database_file(path) == 401


def test_a_run_in_a_slot_said_to_be_new_is_refused_when_one_is_stored(store: Store) -> None:
    experiment_id = new_experiment(store)
    store.add_run(experiment_id, make_run("base", 0), replace=False)
    with pytest.raises(StoreError, match="store run 'base' round 0"):
        store.add_run(experiment_id, make_run("base", 0, metrics={"wall": 2.0}), replace=False)
    store.add_run(experiment_id, make_run("base", 0, metrics={"wall": 3.0}))  # replaces it
    (run,) = store.runs(experiment_id)
    assert run.metrics == {"wall": 3.0}


def test_the_lease_heartbeat_is_renewed_every_few_seconds_not_with_every_run(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cutaway.store import db as store_db

    experiment_id = new_experiment(store)

    def heartbeat() -> float:
        with store._read("test") as connection:
            return float(connection.execute(
                "SELECT heartbeat_at FROM experiments WHERE id = ?", (experiment_id,)
            ).fetchone()[0])  # fmt: skip

    store.add_run(experiment_id, make_run("base", 0))
    first = heartbeat()
    store.add_run(experiment_id, make_run("base", 1))
    assert heartbeat() == first
    monkeypatch.setattr(store_db, "HEARTBEAT_SECONDS", 0.0)
    store.add_run(experiment_id, make_run("base", 2))
    assert heartbeat() > first


# -- the checks of the runs read back (all rows at once, then row by row where one fails) -------


def _checked_runs_store(path: Path) -> tuple[int, list[Run]]:
    """Two variants, two rounds and a warmup run: a failed run, zero and negative values (a
    phase's unaccounted time may be below zero), a run that left processes behind."""
    spec = Spec(
        name="d", variants=(Variant("a", ("true",)), Variant("b", ("false",))), baseline="a"
    )
    metrics = {"wall": 0.5, "major_faults": 0.0, "phase:unaccounted": -0.25}
    runs = [
        Run("a", -1, 0, RunStatus.OK, 0, None, metrics, 1.5),
        Run("a", 0, 0, RunStatus.OK, 0, None, metrics, 2.5, "", 2, ("sleep", "sh")),
        Run("b", 0, 1, RunStatus.FAILED, 1, None, {"wall": 0.25}, 3.5, "boom"),
        Run("b", 1, 0, RunStatus.TIMEOUT, None, 9, {}, 4.5, "slow"),
        Run("a", 1, 1, RunStatus.OK, 0, None, {"wall": 1e18, "max_rss": 1e-30}, 5.5),
    ]
    with Store(path) as store:
        experiment_id = store.create_experiment(spec, {}, None, "test")
        for run in runs:
            store.add_run(experiment_id, run)
    return experiment_id, runs


def test_stored_runs_read_back_as_they_were_written(tmp_path: Path) -> None:
    experiment_id, runs = _checked_runs_store(tmp_path / "db")
    with Store(tmp_path / "db") as store:
        assert store.runs(experiment_id) == runs
        assert store.runs(experiment_id, include_warmup=False) == runs[1:]


# A hand edit of one value of run #2 (or of its wall time), and how the store names it.
RUN_DAMAGES = {
    "text measurement": ("measurements SET value = 'fast'", "run #2, wall: text 'fast'"),
    "blob measurement": ("measurements SET value = X'01'", "wall: a blob of 1 bytes is not a"),
    "negative cost": ("measurements SET value = -0.5", "-0.5 is negative, and wall cannot be"),
    "infinite measurement": ("measurements SET value = 9e999", "wall: inf is not a finite"),
    "huge measurement": ("measurements SET value = 1e300", "wall: 1e+300 is beyond any"),
    "tiny measurement": ("measurements SET value = 1e-320", "is nearer zero than any"),
    "metric a blob": ("measurements SET metric = X'35'", "measurements.metric: run #2: a blob"),
    "variant a blob": ("runs SET variant = X'61'", "runs.variant: run #2: a blob of 1 bytes"),
    "round index text": ("runs SET round_index = 'x'", "runs.round_index: run #2: text 'x'"),
    "round index real": ("runs SET round_index = 0.5", "run #2: number 0.5 is not an integer"),
    "negative order": ("runs SET order_in_round = -1", "runs.order_in_round: run #2: -1 is below"),
    "unknown status": ("runs SET status = 'weird'", "runs.status: run #2: text 'weird' is not one"),
    "real exit code": ("runs SET exit_code = 1.5", "runs.exit_code: run #2: number 1.5"),
    "text signal": ("runs SET signal = 'KILL'", "runs.signal: run #2: text 'KILL'"),
    "text start": ("runs SET started_at = 'noon'", "runs.started_at: run #2: text 'noon'"),
    "infinite start": ("runs SET started_at = 9e999", "runs.started_at: run #2: inf is not"),
    "blob message": ("runs SET message = X'00'", "runs.message: run #2: a blob of 1 bytes"),
    "negative leftovers": ("runs SET leftover_processes = -1", "run #2: -1 is below 0"),
    "leftovers an object": ("runs SET leftover_names = '{}'", "run #2: not a JSON array of"),
    "leftovers numbers": ("runs SET leftover_names = '[1]'", "run #2: not a JSON array of"),
    "leftovers not JSON": ("runs SET leftover_names = '[x'", "run #2: not JSON"),
    "purpose a blob": ("runs SET purpose = X'00'", "runs.purpose: run #2: a blob of 1 bytes"),
}


@pytest.mark.parametrize("damage", RUN_DAMAGES)
def test_a_damaged_value_of_a_run_is_named_with_its_run(tmp_path: Path, damage: str) -> None:
    experiment_id, _ = _checked_runs_store(tmp_path / "db")
    change, named = RUN_DAMAGES[damage]
    where = "run_id = 2 AND metric = 'wall'" if change.startswith("measurements") else "id = 2"
    with sqlite3.connect(tmp_path / "db") as raw:
        # A hand edit may bypass the schema's CHECK constraints, as this one does.
        raw.executescript(f"PRAGMA ignore_check_constraints = ON; UPDATE {change} WHERE {where}")
    raw.close()
    with Store(tmp_path / "db") as store, pytest.raises(StoreError) as raised:
        store.runs(experiment_id, purpose=None)
    assert f"experiment #{experiment_id} in " in str(raised.value)
    assert named in str(raised.value), str(raised.value)


def test_the_first_damaged_value_is_named_measurements_before_runs(tmp_path: Path) -> None:
    experiment_id, _ = _checked_runs_store(tmp_path / "db")
    with sqlite3.connect(tmp_path / "db") as raw:
        raw.executescript(
            "PRAGMA ignore_check_constraints = ON;"
            " UPDATE runs SET started_at = 'noon' WHERE id IN (3, 4);"
            " UPDATE measurements SET value = -1 WHERE metric = 'wall' AND run_id = 5"
        )
    raw.close()
    with Store(tmp_path / "db") as store, pytest.raises(StoreError, match=r"run #5, wall: -1 is"):
        store.runs(experiment_id)
    with sqlite3.connect(tmp_path / "db") as raw:
        raw.execute("UPDATE measurements SET value = 1 WHERE metric = 'wall' AND run_id = 5")
    raw.close()
    with Store(tmp_path / "db") as store, pytest.raises(StoreError, match=r"run #3: text 'noon'"):
        store.runs(experiment_id)


def test_a_signed_metric_may_be_negative_but_not_beyond_any_measurement(tmp_path: Path) -> None:
    experiment_id, _ = _checked_runs_store(tmp_path / "db")
    with Store(tmp_path / "db") as store:
        assert store.runs(experiment_id)[1].metrics["phase:unaccounted"] == -0.25
    with sqlite3.connect(tmp_path / "db") as raw:
        raw.execute("UPDATE measurements SET value = -1e300 WHERE metric = 'phase:unaccounted'")
    raw.close()
    with Store(tmp_path / "db") as store, pytest.raises(StoreError) as raised:
        store.runs(experiment_id)
    assert "run #1, phase:unaccounted: -1e+300 is beyond any measurement" in str(raised.value)


def test_the_timed_tables_and_runs_are_those_of_one_read_per_metric(tmp_path: Path) -> None:
    """A failed run, a run without a metric, a round one variant missed, a warmup round and
    a probe's own run: each table as metric_table reads it, the runs as runs() does."""
    experiment_id, _ = _checked_runs_store(tmp_path / "db")
    with Store(tmp_path / "db") as store:
        store.add_run(experiment_id, Run("b", 3, 0, RunStatus.OK, 0, None, {"wall": 2.0}, 6.5))
        profiled = Run("a", 0, 0, RunStatus.OK, 0, None, {"wall": 9.0}, 7.5, purpose="profile")
        store.add_run(experiment_id, profiled)
        names = ("wall", "major_faults", "phase:unaccounted", "max_rss", "never_measured")
        read = store.timed_tables_and_runs(experiment_id, names)
        assert read is not None
        tables, runs = read
        assert runs == store.runs(experiment_id, include_warmup=False)
        for name in names:
            expected = store.metric_table(experiment_id, name)
            assert tables[name].variants == expected.variants == ("a", "b")
            assert tables[name].rounds.tolist() == expected.rounds.tolist() == [0, 1, 3]
            assert tables[name].rounds.dtype == expected.rounds.dtype
            assert tables[name].values.tobytes() == expected.values.tobytes(), name
        assert tables["wall"].values[0].tolist()[0] == 0.5  # round 0: a ok, b failed (NaN)
        assert math.isnan(tables["wall"].values[0][1])


def test_a_damaged_value_leaves_the_timed_tables_and_runs_to_the_readers_that_name_it(
    tmp_path: Path,
) -> None:
    experiment_id, _ = _checked_runs_store(tmp_path / "db")
    with sqlite3.connect(tmp_path / "db") as raw:
        raw.execute("UPDATE runs SET started_at = 'noon' WHERE id = 2")
    raw.close()
    with Store(tmp_path / "db") as store:
        assert store.timed_tables_and_runs(experiment_id, ("wall",)) is None
        assert store.metric_table(experiment_id, "wall").values.size  # readable alone


def test_commits_by_others_counts_other_connections_commits(store: Store) -> None:
    if store.engine == "postgresql":
        assert store.commits_by_others() is None  # no such count: the digest is read again
        return
    spec = Spec(name="d", variants=(Variant("a", ("true",)),), baseline="a")
    first = store.commits_by_others()
    experiment_id = store.create_experiment(spec, {}, None, "own")  # this connection's own
    assert store.commits_by_others() == first
    with Store(store.path) as other:
        other.add_run(experiment_id, Run("a", 0, 0, RunStatus.OK, 0, None, {"wall": 1.0}, 0.0))
    assert store.commits_by_others() != first


def test_measurement_rows_in_any_order_read_as_the_row_by_row_checks_read_them() -> None:
    """The rows of one run usually come together; where they do not (another engine's
    order), each run's mapping is still every one of its rows, in their order."""
    from cutaway.store.checks import Columns
    from cutaway.store.rows import measurements, usable_runs

    rows = [(1, "wall", 0.5), (2, "wall", 0.25), (1, "max_rss", 8.0), (2, "cpu", 0.0)]
    rows += [(1, "wall", 0.75), (3, "wall", 1.0)]
    run_rows = [
        (run_id, "a", run_id, 0, "ok", 0, None, 1.5, "", 0, "[]", "timed") for run_id in (1, 2, 3)
    ]
    runs = usable_runs(run_rows, rows)
    assert runs is not None
    expected = measurements(rows, Columns("db", 1))
    assert [dict(run.metrics) for run in runs] == [expected[1], expected[2], expected[3]]
    assert [list(run.metrics) for run in runs] == [["wall", "max_rss"], ["wall", "cpu"], ["wall"]]
    assert runs[0].metrics["wall"] == 0.75
