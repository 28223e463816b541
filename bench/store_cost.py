"""Store cost: seconds to write, then to read, 1,000 experiments on SQLite and on PostgreSQL.

An experiment of realistic size: 3 variants, 1 warmup and 20 counted rounds (63 runs), each run
with the 11 metrics a probe-less run records, a calibration, and the experiment finished at
the end. It is written as `cutaway run` writes it: created, one transaction per run (the
runner stores each run as it ends), the calibration, the finish. It is read as `cutaway report`
reads it: the experiment, its runs, the metric names and one metric table per metric.

SQLite: a file in a temporary directory, as cutaway opens it (WAL, synchronous NORMAL).
PostgreSQL: Debian's server (tests/postgresql_server.py), started for the benchmark in a
temporary directory with its default settings (fsync and synchronous_commit on), reached over
its Unix socket. Both on the same disk. One process writes, then reads; the figures are
wall-clock seconds of that process, per engine, with the load average before and after.

``postgresql-async`` is the same server with ``synchronous_commit=off`` for the connection
(a commit returns before its WAL reaches the disk: a server crash may lose the last few
hundred milliseconds of runs, never corrupt the store), the setting a team may choose for its
cutaway role.

Usage: ``python bench/store_cost.py [--experiments 1000]
[--engines sqlite,postgresql,postgresql-async] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR.parent / "tests"))

from cutaway.model import Calibration, Run, RunStatus, Spec, Variant  # noqa: E402
from cutaway.model.metrics import PROCESS_METRICS  # noqa: E402
from cutaway.store import Store  # noqa: E402
from tests.postgresql_server import running_server  # noqa: E402

VARIANTS = ("baseline", "candidate", "other")
WARMUP_ROUNDS = 1
ROUNDS = 20
METRICS = tuple(metric.name for metric in PROCESS_METRICS)  # what every run stores


def spec(index: int) -> Spec:
    return Spec(
        name=f"workload-{index % 20}",
        variants=tuple(Variant(name, ("./server", f"--mode={name}")) for name in VARIANTS),
        baseline=VARIANTS[0],
        rounds=ROUNDS,
        warmup_rounds=WARMUP_ROUNDS,
    )


def write_experiment(store: Store, index: int, environment: dict[str, object]) -> int:
    experiment_id = store.create_experiment(spec(index), environment, f"v{index}", "bench")
    store.set_calibration(experiment_id, Calibration("true", 30, 0.0021, 0.0019))
    started = time.time()
    for round_index in range(-WARMUP_ROUNDS, ROUNDS):
        for order, variant in enumerate(VARIANTS):
            seed = index * 1000 + round_index * 10 + order
            metrics = {
                name: float((seed * 7919 + position) % 9973)
                for position, name in enumerate(METRICS)
            }
            store.add_run(
                experiment_id,
                Run(variant, round_index, order, RunStatus.OK, 0, None, metrics, started),
            )
    store.finish_experiment(experiment_id, "complete", environment)
    return experiment_id


def read_experiment(store: Store, experiment_id: int) -> int:
    """What `cutaway report` reads; the number of values read."""
    store.experiment(experiment_id)
    count = len(store.runs(experiment_id))
    for metric in store.metric_names(experiment_id):
        count += store.metric_table(experiment_id, metric).values.size
    return count


def timed(action: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def measure(location: str, experiments: int) -> dict[str, object]:
    environment = {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count()}
    load_before = os.getloadavg()
    with Store(location) as store:
        write_seconds, ids = timed(
            lambda: [write_experiment(store, i, environment) for i in range(experiments)]
        )
    with Store(location, create=False) as store:
        assert isinstance(ids, list)
        read_seconds, values = timed(lambda: sum(read_experiment(store, i) for i in ids))
    return {
        "experiments": experiments,
        "runs": experiments * len(VARIANTS) * (ROUNDS + WARMUP_ROUNDS),
        "write_seconds": write_seconds,
        "read_seconds": read_seconds,
        "values_read": values,
        "load_before": load_before,
        "load_after": os.getloadavg(),
    }


def show(engine: str, record: dict[str, object]) -> None:
    experiments = record["experiments"]
    assert isinstance(experiments, int)
    write, read = record["write_seconds"], record["read_seconds"]
    assert isinstance(write, float) and isinstance(read, float)
    print(
        f"| {engine} | {experiments} | {write:.1f} | {write / experiments * 1e3:.1f} |"
        f" {read:.1f} | {read / experiments * 1e3:.1f} |"
        f" {record['load_before'][0]:.2f} -> {record['load_after'][0]:.2f} |"  # type: ignore[index]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=1000)
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--output", type=Path, help="also write the records as JSON lines")
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=BENCH_DIR
    ).stdout.strip()
    print(f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit}")
    print(
        "| engine | experiments | write s | write ms/experiment | read s |"
        " read ms/experiment | load average (1 min) |"
    )
    print("|---|---|---|---|---|---|---|")
    records = []
    for engine in args.engines.split(","):
        if engine == "sqlite":
            with tempfile.TemporaryDirectory(prefix="cutaway-store-cost-") as directory:
                record = measure(str(Path(directory) / "cutaway.db"), args.experiments)
        elif engine in ("postgresql", "postgresql-async"):
            with running_server(durable=True) as server:
                url = server.new_database("store_cost")
                if engine == "postgresql-async":  # commits return before their WAL is flushed
                    url += "&options=-c%20synchronous_commit%3Doff"
                record = measure(url, args.experiments)
        else:
            raise SystemExit(f"unknown engine {engine!r}: sqlite, postgresql, postgresql-async")
        show(engine, record)
        records.append({"engine": engine, "commit": commit, **record})
    if args.output is not None:
        with args.output.open("a") as out:
            for record in records:
                out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
