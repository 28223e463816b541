"""The write between two runs: CPU time of one Store.add_run on SQLite, beside another commit's.

The runs of one experiment stored as `cutaway run` stores them: 11 metrics a run (those of a
probe-less run), no probe data, the experiment's lease held (so the WAL is checkpointed by time,
as while an experiment runs). Timed in blocks of 100 runs, CPU time (time.process_time) per
run; for a new experiment (``replace=False``, what the runner passes when nothing stored can be
replaced) and for a resumed one (``replace=True``: a DELETE before each INSERT).

With ``--before REF``, that commit's ``src/cutaway`` is exported (git archive) and loaded in the
same process under another name (``cutaway_before``, its imports rewritten), each with its own
file, and their blocks alternate: the shared machine's load drifts for both alike. Medians and
20th percentiles of the blocks.

Usage: ``python bench/store_write.py [--blocks 40] [--before REF]``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from cutaway.model.metrics import PROCESS_METRICS

BENCH_DIR = Path(__file__).resolve().parent
RUNS_PER_BLOCK = 100
METRICS = tuple(metric.name for metric in PROCESS_METRICS)  # what every run stores


def export_before(ref: str, directory: Path) -> Path:
    """``ref``'s cutaway package as ``cutaway_before`` in ``directory``; its path entry."""
    archive = directory / "before.tar"
    with archive.open("wb") as out:
        subprocess.run(
            ["git", "archive", ref, "src/cutaway"], cwd=BENCH_DIR.parent, stdout=out, check=True
        )
    with tarfile.open(archive) as tar:
        tar.extractall(directory, filter="data")
    package = directory / "cutaway_before"
    (directory / "src" / "cutaway").rename(package)
    for source in package.rglob("*.py"):
        text = source.read_text()
        text = re.sub(r"\b(from|import) cutaway\b", r"\1 cutaway_before", text)
        source.write_text(text.replace('"cutaway.', '"cutaway_before.'))
    return directory


def writer(package: str, path: Path, replace: bool, blocks: int) -> Callable[[], float]:
    """A function that stores the next block of runs and returns its CPU seconds per run."""
    model: ModuleType = importlib.import_module(f"{package}.model")
    store = importlib.import_module(f"{package}.store").Store(path)
    spec = model.Spec("store-write", (model.Variant("a", ("true",)),), "a", rounds=10)
    experiment_id = store.create_experiment(spec, {}, None, "bench")
    store._engine.hold_reserve()  # what an owned experiment does: checkpoints by time
    metrics = {name: 1.0 + index for index, name in enumerate(METRICS)}
    runs = iter(
        [
            model.Run("a", index, 0, model.RunStatus.OK, 0, None, metrics, 0.0)
            for index in range(blocks * RUNS_PER_BLOCK)
        ]
    )

    def block() -> float:
        started = time.process_time()
        for _ in range(RUNS_PER_BLOCK):
            store.add_run(experiment_id, next(runs), replace=replace)
        return (time.process_time() - started) / RUNS_PER_BLOCK

    return block


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--before", help="a git commit to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cutaway-store-write-") as temporary:
        directory = Path(temporary)
        packages = {"this tree": "cutaway"}
        if args.before:
            sys.path.insert(0, str(export_before(args.before, directory)))
            packages[args.before] = "cutaway_before"
        print(f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {_load()}")
        print("| code | replace | median us/run | p20 us/run |")
        print("|---|---|---:|---:|")
        for replace in (False, True):
            blocks = {
                label: writer(package, directory / f"{package}-{replace}.db", replace, args.blocks)
                for label, package in packages.items()
            }
            times: dict[str, list[float]] = {label: [] for label in blocks}
            for index in range(args.blocks):
                order = list(blocks) if index % 2 else list(reversed(blocks))
                for label in order:
                    times[label].append(blocks[label]())
            for label, found in times.items():
                found.sort()
                median, p20 = found[len(found) // 2], found[len(found) // 5]
                print(f"| {label} | {replace} | {median * 1e6:.1f} | {p20 * 1e6:.1f} |")
        print(f"load average after: {_load()}")


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    main()
