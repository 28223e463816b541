"""Startup benchmark: how long do `cutaway --version`, `--help`, `list` and `report` take, against
an interpreter that does nothing?

In one run, interleaved (the order rotates by one place each repetition, so drift hits every
command alike), it times the wall clock of: ``python -c pass`` (the interpreter that runs the
``cutaway`` script), ``cutaway --version``, ``cutaway --help``, ``cutaway list --db X`` and
``cutaway report ID --db X --color never``, and ``python -c 'import sqlite3'`` (the floor of
``list``, which must read a SQLite file). The store X holds one stored experiment of 100
counted rounds (and one warmup round) of 3 variants with every process metric, which the
benchmark writes itself through the store API with synthetic runs (seeded): nothing is run. It
prints, in Markdown, the median, the quartiles and the ratio of medians to ``python -c pass``,
and the same ratio of the CPU time each command used (steadier than wall time on a shared
machine). The commands run with Python's bytecode cache on (without PYTHONDONTWRITEBYTECODE),
as on a user's machine. Raw times go to bench/results/startup-<date>/.
Usage: ``python bench/startup.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cutaway import __version__
from cutaway.environment import capture_environment
from cutaway.model import PROCESS_METRICS, Calibration, Run, RunStatus, Spec, Variant
from cutaway.store import Store

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
VARIANTS = ("base", "faster", "slower")
WALL_FACTOR = {"base": 1.0, "faster": 0.97, "slower": 1.02}

Record = dict[str, Any]


def cutaway_command() -> list[str]:
    """The ``cutaway`` script next to this interpreter, else on PATH, else ``python -m``."""
    beside = Path(sys.executable).parent / "cutaway"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("cutaway")
    return [found] if found else [sys.executable, "-m", "cutaway"]


def synthetic_metrics(rng: random.Random, variant: str) -> dict[str, float]:
    """Plausible whole-process metrics of a ~50 ms command, with noise."""
    wall = 0.050 * WALL_FACTOR[variant] * rng.lognormvariate(0.0, 0.02)
    user, sys_time = wall * 0.8 * rng.uniform(0.95, 1.05), wall * 0.1 * rng.uniform(0.9, 1.1)
    metrics = {
        "wall": wall,
        "user": user,
        "sys": sys_time,
        "cpu": user + sys_time,
        "max_rss": float(8_000_000 + rng.randrange(0, 200_000)),
        "minor_faults": float(900 + rng.randrange(0, 40)),
        "voluntary_switches": float(rng.randrange(2, 9)),
        "involuntary_switches": float(rng.randrange(0, 5)),
    }
    return {m.name: metrics.get(m.name, 0.0) for m in PROCESS_METRICS}


def create_store(path: Path, rounds: int, seed: int) -> int:
    """One complete experiment of ``rounds`` counted rounds of 3 variants; its id."""
    spec = Spec(
        name="startup-bench",
        variants=tuple(Variant(name=name, command=("true", name)) for name in VARIANTS),
        baseline=VARIANTS[0],
        rounds=rounds,
        warmup_rounds=1,
        seed=seed,
    )
    rng = random.Random(seed)
    environment = capture_environment()
    with Store(path) as store:
        experiment_id = store.create_experiment(spec, environment, None, __version__)
        store.set_calibration(experiment_id, Calibration("true", 100, 0.0008, 0.0007))
        started = time.time()
        for round_index in range(-1, rounds):
            order = list(VARIANTS)
            rng.shuffle(order)
            for position, variant in enumerate(order):
                metrics = synthetic_metrics(rng, variant)
                started += metrics["wall"]
                run = Run(variant, round_index, position, RunStatus.OK, 0, None, metrics, started)
                store.add_run(experiment_id, run)
        store.finish_experiment(experiment_id, "complete", environment)
    return experiment_id


def commands(db: Path, experiment_id: int) -> dict[str, list[str]]:
    cutaway = cutaway_command()
    report = ["report", str(experiment_id), "--db", str(db), "--color", "never"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        # The floor of `list`, which has to read a SQLite file: the interpreter and sqlite3.
        "python -c 'import sqlite3'": [sys.executable, "-c", "import sqlite3"],
        "cutaway --version": [*cutaway, "--version"],
        "cutaway --help": [*cutaway, "--help"],
        "cutaway list": [*cutaway, "list", "--db", str(db)],
        "cutaway report": [*cutaway, *report],
    }


def timed_environment() -> dict[str, str]:
    """This environment without PYTHONDONTWRITEBYTECODE: with it, Python compiles every module
    of cutaway from source at every start (an editable install has no other bytecode), which no
    user's installation does; pip compiles a regular install's modules when it installs them."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall_and_cpu_seconds(argv: list[str]) -> tuple[float, float]:
    """Wall time from spawning to exit, and the CPU time (user + system) the command used: on
    a shared machine the CPU time is the steadier of the two."""
    cpu = children_cpu_seconds()
    start = time.perf_counter()
    subprocess.run(
        argv,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=timed_environment(),
    )
    return time.perf_counter() - start, children_cpu_seconds() - cpu


def measure(
    argvs: dict[str, list[str]], repetitions: int, warmup: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """``warmup`` uncounted passes (page cache, .pyc files), then ``repetitions`` counted ones;
    each pass runs every command once, the first one rotating. (wall times, CPU times)."""
    names = list(argvs)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu_times: dict[str, list[float]] = {name: [] for name in names}
    for repetition in range(-warmup, repetitions):
        shift = repetition % len(names)
        for name in names[shift:] + names[:shift]:
            seconds, cpu_seconds = wall_and_cpu_seconds(argvs[name])
            if repetition >= 0:
                times[name].append(seconds)
                cpu_times[name].append(cpu_seconds)
        if repetition >= 0 and (repetition + 1) % 5 == 0:
            print(f"{repetition + 1}/{repetitions} repetitions", file=sys.stderr, flush=True)
    return times, cpu_times


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms"


def summary_table(times: dict[str, list[float]], cpu_times: dict[str, list[float]]) -> list[str]:
    baseline = statistics.median(times["python -c pass"])
    cpu_baseline = statistics.median(cpu_times["python -c pass"])
    lines = [
        "| command | median wall | quartiles | wall / `python -c pass` | median CPU | CPU ratio |",
        "|---|---|---|---|---|---|",
    ]
    for name, values in times.items():
        q1, median, q3 = (
            statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
        )
        cpu = statistics.median(cpu_times[name])
        lines.append(
            f"| `{name}` | {milliseconds(median)} | {milliseconds(q1)} to {milliseconds(q3)} "
            f"| {median / baseline:.2f} | {milliseconds(cpu)} | {cpu / cpu_baseline:.2f} |"
        )
    return lines


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repetitions", type=int, default=30, help="default 30")
    parser.add_argument("--warmup", type=int, default=2, help="uncounted passes (default 2)")
    parser.add_argument("--rounds", type=int, default=100, help="of the stored experiment")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    return parser.parse_args()


def main() -> int:
    arguments = parse_arguments()
    raw_dir: Path = arguments.results_dir / f"startup-{time.strftime('%Y%m%d-%H%M%S')}"
    raw_dir.mkdir(parents=True, exist_ok=True)
    db = raw_dir / "startup.db"
    experiment_id = create_store(db, arguments.rounds, arguments.seed)
    argvs = commands(db, experiment_id)
    load_before = os.getloadavg()
    times, cpu_times = measure(argvs, arguments.repetitions, arguments.warmup)
    load_after = os.getloadavg()
    record: Record = {
        "commands": argvs,
        "repetitions": arguments.repetitions,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "times": times,
        "cpu_times": cpu_times,
    }
    (raw_dir / "summary.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"raw results: {raw_dir}", file=sys.stderr)
    print("\n".join(summary_table(times, cpu_times)))
    print(
        f"\nload average (1, 5, 15 min): before {', '.join(f'{x:.2f}' for x in load_before)}; "
        f"after {', '.join(f'{x:.2f}' for x in load_after)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
