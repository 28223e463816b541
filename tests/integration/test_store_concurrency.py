"""Cutaway processes writing one store at the same time lose nothing and corrupt nothing, on
both engines: an SQLite file, and a PostgreSQL database (a real server, conftest.py) that many
machines may share.

Each writer is a separate Python process (as two `cutaway run` would be). They open the store
only after a shared "go", so they also race to create and migrate a new database."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cutaway
from cutaway.model import Spec, Variant
from cutaway.store import Store

RUNS_PER_WRITER = 300

# argv: database path, experiment id ("new" to create one), variant names, first round.
# Writes RUNS_PER_WRITER runs, cycling through the variants, one transaction each, with a pause
# between runs as a real run would make: without it one writer could hold the lock from its
# first run to its last (SQLite's busy wait is not fair), and the two would not interleave.
WRITER = """
import sys, time
from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.store import Store

path, experiment, variants, first_round, count = sys.argv[1:6]
names = variants.split(",")
print("ready", flush=True)
sys.stdin.readline()  # wait for "go"
with Store(path) as store:
    if experiment == "new":
        spec = Spec(name="writer", variants=tuple(Variant(n, ("true",)) for n in names),
                    baseline=names[0])
        experiment_id = store.create_experiment(spec, {"pid": 1}, None, "test")
    else:
        experiment_id = int(experiment)
    for i in range(int(count)):
        round_index = int(first_round) + i // len(names)
        store.add_run(experiment_id, Run(
            variant=names[i % len(names)], round_index=round_index,
            order_in_round=i % len(names), status=RunStatus.OK, exit_code=0, signal=None,
            metrics={"wall": float(round_index), "user": 0.5, "max_rss": 1024.0},
            started_at=time.time(),
        ))
        time.sleep(0.001)
    print(experiment_id, flush=True)
"""


# argv: store, experiments to write, runs each. Writes whole experiments, each one created,
# given its runs (one transaction each) and finished, as a CI job's `cutaway run` does; prints
# their ids.
EXPERIMENT_WRITER = """
import sys, time
from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.store import Store

location, experiments, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()  # wait for "go"
spec = Spec(name="job", variants=(Variant("a", ("true",)), Variant("b", ("true",))), baseline="a")
ids = []
with Store(location) as store:
    for _ in range(experiments):
        experiment_id = store.create_experiment(spec, {"writer": sys.argv[4]}, None, "test")
        for i in range(runs):
            store.add_run(experiment_id, Run(
                variant="ab"[i % 2], round_index=i // 2, order_in_round=i % 2,
                status=RunStatus.OK, exit_code=0, signal=None,
                metrics={"wall": experiment_id + i / 1000, "user": 0.5}, started_at=time.time(),
            ))
        store.finish_experiment(experiment_id, "complete", None)
        ids.append(experiment_id)
print(" ".join(map(str, ids)), flush=True)
"""


def start_together(code: str, argument_lists: list[list[str]]) -> list[str]:
    """Start one process per argument list, release them together, return what each printed
    last."""
    source_dir = str(Path(cutaway.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source_dir, *sys.path])}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for args in argument_lists
    ]
    for process in processes:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    printed = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
        printed.append(stdout.strip())
    return printed


def run_writers(path: Path | str, writer_args: list[list[str]]) -> list[int]:
    """Start one writer process per argument list, release them together, return the ids."""
    arguments = [[str(path), *args, str(RUNS_PER_WRITER)] for args in writer_args]
    return [int(printed) for printed in start_together(WRITER, arguments)]


def assert_writers_overlapped(store: Store, experiment_ids: list[int]) -> None:
    """Otherwise the test would pass without any contention."""
    spans = []
    for experiment_id in experiment_ids:
        started = [run.started_at for run in store.runs(experiment_id)]
        spans.append((min(started), max(started)))
    (first_start, first_end), (second_start, second_end) = spans
    assert first_start < second_end and second_start < first_end


def assert_intact(location: str) -> None:
    """SQLite's own checks of the file (PostgreSQL's constraints are always enforced)."""
    if "://" in location:
        return
    with sqlite3.connect(location) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
    raw.close()


def test_two_processes_writing_their_own_experiments(store_location: str) -> None:
    path = store_location  # does not exist yet (or is empty): both writers create it
    ids = run_writers(path, [["new", "a,b", "0"], ["new", "x,y,z", "0"]])

    assert_intact(path)
    with Store(path) as store:
        assert sorted(ids) == sorted(row.id for row in store.list_experiments())
        for row in store.list_experiments():
            assert row.n_runs == RUNS_PER_WRITER
        for experiment_id in ids:
            runs = store.runs(experiment_id)
            assert len(runs) == RUNS_PER_WRITER
            assert all(
                run.metrics == {"wall": run.round_index, "user": 0.5, "max_rss": 1024.0}
                for run in runs
            )
        assert_writers_overlapped(store, ids)


def test_two_processes_writing_distinct_rounds_of_one_experiment(store_location: str) -> None:
    path = store_location
    spec = Spec(
        name="shared", variants=(Variant("a", ("true",)), Variant("b", ("true",))), baseline="a"
    )
    with Store(path) as store:
        experiment_id = store.create_experiment(spec, {}, None, "test")
    rounds_per_writer = RUNS_PER_WRITER // 2
    ids = run_writers(
        path,
        [
            [str(experiment_id), "a,b", "0"],
            [str(experiment_id), "a,b", str(rounds_per_writer)],
        ],
    )
    assert ids == [experiment_id, experiment_id]

    assert_intact(path)
    with Store(path) as store:
        assert len(store.runs(experiment_id)) == 2 * RUNS_PER_WRITER
        table = store.metric_table(experiment_id, "wall")
        expected_rounds = np.arange(2 * rounds_per_writer)
        np.testing.assert_array_equal(table.rounds, expected_rounds)
        np.testing.assert_array_equal(table.values, np.column_stack([expected_rounds] * 2))
        first_half = [r.started_at for r in store.runs(experiment_id) if r.round_index < 150]
        second_half = [r.started_at for r in store.runs(experiment_id) if r.round_index >= 150]
        assert min(first_half) < max(second_half) and min(second_half) < max(first_half)


@pytest.mark.slow
def test_several_processes_writing_whole_experiments_lose_nothing(store_location: str) -> None:
    """Four jobs at once, each writing experiments from start to finish into one new store: every
    experiment gets an id of its own, and every run is there afterwards."""
    writers, experiments, runs = 4, 8, 40
    printed = start_together(
        EXPERIMENT_WRITER,
        [[store_location, str(experiments), str(runs), str(w)] for w in range(writers)],
    )
    ids = [int(word) for line in printed for word in line.split()]
    assert len(ids) == len(set(ids)) == writers * experiments

    assert_intact(store_location)
    with Store(store_location) as store:
        listed = store.list_experiments()
        assert sorted(row.id for row in listed) == sorted(ids)
        assert all(row.status == "complete" and row.n_runs == runs for row in listed)
        for experiment_id in ids:
            stored = store.runs(experiment_id)
            assert [run.metrics["wall"] for run in stored] == [
                experiment_id + i / 1000 for i in range(runs)
            ]
        writers_seen = {store.experiment(i).environment["writer"] for i in ids}
        assert writers_seen == {str(w) for w in range(writers)}
