"""Ingesting ten million call records and printing the position table.

A real process makes the records: cutaway's calibrator calls close(-1) 10,000,004 times under
the interposer (7 batches of 1,428,572). Then, timed separately, what `cutaway run` does after
such a run: decode the record files and build the per-function blobs (the probe's after_run),
store them with the run (one SQLite transaction), analyse the experiment (positions, summaries)
and render the terminal report with the seed-000 table. Target: at most 5 s for all of it.

Usage: python bench/calls_ingest.py [--batch-calls 1428572]   (prints a Markdown table)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cutaway.api import use_registered_probes
from cutaway.compare import analyze
from cutaway.model import ProbeSpec, Run, RunStatus, Spec, Variant
from cutaway.probes.calls.capture import CallsProbe
from cutaway.probes.calls.settings import with_calls
from cutaway.probes.interposer import CALIBRATOR_NAME, library_path
from cutaway.report import render_terminal
from cutaway.store import Store


def main() -> int:
    use_registered_probes()  # compare.analyze runs the calls probe's analysis from its plugin
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-calls", type=int, default=1_428_572)
    args = parser.parse_args()
    calibrator = str(Path(library_path()).parent / CALIBRATOR_NAME)
    probe = CallsProbe(["close"])
    spec = Spec(
        name="ingest",
        variants=(Variant("close", (calibrator,)),),
        baseline="close",
        rounds=1,
        warmup_rounds=0,
        probes=with_calls(ProbeSpec(), ("close",)),
    )
    with tempfile.TemporaryDirectory(prefix="cutaway-ingest-") as directory:
        store = Store(Path(directory) / "ingest.db")
        experiment_id = store.create_experiment(spec, {}, None, "bench")
        env = {**os.environ, **probe.before_run(dict(os.environ)).env}
        start = time.perf_counter()
        subprocess.run(
            [calibrator, str(args.batch_calls)], env=env, check=True, capture_output=True
        )
        produced = time.perf_counter() - start
        size = sum(p.stat().st_size for p in probe.directory.iterdir())

        timings: dict[str, float] = {}
        start = time.perf_counter()
        data = probe.after_run()
        timings["decode the record files, build the blobs"] = time.perf_counter() - start
        records = sum(d.count for d in data if d.kind == "calls")
        stored = sum(len(d.data) for d in data)

        start = time.perf_counter()
        run = Run("close", 0, 0, RunStatus.OK, 0, None, {"wall": produced}, time.time())
        store.add_run(experiment_id, run, data)
        store.finish_experiment(experiment_id, "complete", None)
        timings["store them with the run"] = time.perf_counter() - start

        start = time.perf_counter()
        analysis = analyze(store, experiment_id, resamples=1000)
        timings["analyse (positions, summaries)"] = time.perf_counter() - start

        start = time.perf_counter()
        text = render_terminal(analysis, color=False)
        timings["render the report"] = time.perf_counter() - start
        probe.close()
    assert "close calls 3+" in text  # the calls probe's rows reached the report
    print(
        f"{records:,} records ({size / 2**20:.0f} MiB of record files) made in {produced:.1f} s "
        f"by one process, stored as {stored / 2**20:.0f} MiB of blobs\n"
    )
    print("| step | seconds |")
    print("|---|---:|")
    for step, seconds in timings.items():
        print(f"| {step} | {seconds:.2f} |")
    print(f"| **total, records on disk to table printed** | **{sum(timings.values()):.2f}** |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
