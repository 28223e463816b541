"""What the path after the runs costs per stored run: the analysis that `cutaway run` ends with
(the kept analysis's digest, the analysis, the kept file written), the kept analysis that
`cutaway report` reads, and `cutaway report` itself.

Four experiments are run once, with this tree's cutaway: ``-c true`` with 2 and with 2,002
rounds, and ``true`` against ``/bin/true`` with 1 and with 1,001 rounds (2 and 2,002 runs).
Each repetition then times, for each code (this tree, and ``--before GIT_REF``'s, interleaved),
each experiment's post-run path in a fresh process: CPU time (``time.process_time``) of
``analysis_of`` with an empty cache (as `run` does) and again with the file it kept (as
`report` does), and the wall and CPU time of the whole ``cutaway report`` command. The cost per
run is (cost at 2,002 runs - cost at 2 runs) / 2,000, a median over the repetitions.

``python bench/analysis_cost.py [--repetitions 7] [--before GIT_REF]``; the summary in
Markdown on standard output, the raw figures in bench/results/analysis_cost.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
sys.path.insert(0, str(BENCH_DIR))

from session import built_before  # noqa: E402  (a sibling script: bench/ is not a package)

FEW_RUNS, MANY_RUNS = 2, 2_002
EXPERIMENTS = {  # name: (arguments of `cutaway run`, stored runs)
    "one variant, 2 runs": (["-c", "true", "--rounds", "2"], FEW_RUNS),
    "one variant, 2,002 runs": (["-c", "true", "--rounds", "2002"], MANY_RUNS),
    "two variants, 2 runs": (["true", "/bin/true", "--rounds", "1"], FEW_RUNS),
    "two variants, 2,002 runs": (["true", "/bin/true", "--rounds", "1001"], MANY_RUNS),
}
PAIRS = {"one variant": ("one variant, 2 runs", "one variant, 2,002 runs")}
PAIRS["two variants"] = ("two variants, 2 runs", "two variants, 2,002 runs")

# Run in a fresh interpreter with the code under test on its path: the CPU seconds of the
# analysis with an empty cache, then of the kept one (the cache as that left it).
DRIVER = """
import json, sys, time
import cutaway.api
from cutaway.kept_analysis import analysis_of
from cutaway.store import Store
with Store(sys.argv[1]) as store:
    started = time.process_time()
    analysis_of(store, int(sys.argv[2]))
    analysed = time.process_time() - started
    started = time.process_time()
    analysis_of(store, int(sys.argv[2]))
    print(json.dumps([analysed, time.process_time() - started]))
"""


def children_cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed_report(db: Path, experiment_id: int, environment: dict[str, str]) -> tuple[float, ...]:
    """(analysis CPU with an empty cache, kept analysis CPU, report wall, report CPU)."""
    cache = Path(environment["CUTAWAY_CACHE_DIR"])
    for kept in cache.glob("analyses/*.json"):
        kept.unlink()
    driver = [sys.executable, "-c", DRIVER, str(db), str(experiment_id)]
    done = subprocess.run(driver, env=environment, capture_output=True, text=True, check=True)
    analysed, kept_read = json.loads(done.stdout)
    report = [sys.executable, "-m", "cutaway", "report", str(experiment_id), "--db", str(db)]
    cpu_before, wall_before = children_cpu_seconds(), time.perf_counter()
    subprocess.run(report, env=environment, stdout=subprocess.DEVNULL, check=True)
    wall, cpu = time.perf_counter() - wall_before, children_cpu_seconds() - cpu_before
    return analysed, kept_read, wall, cpu


def stored_experiments(scratch: Path) -> dict[str, int]:
    """The four experiments, run once with this tree's cutaway, by name: their ids."""
    ids = {}
    for name, (arguments, _) in EXPERIMENTS.items():
        command = [sys.executable, "-m", "cutaway", "run", *arguments, "-q"]
        db = ["--db", str(scratch / "store.db")]
        subprocess.run([*command, *db], check=True, stdout=subprocess.DEVNULL)
        ids[name] = len(ids) + 1
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--before", help="a git ref whose post-run path is timed as well")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="cutaway-analysis-cost-") as directory:
        scratch = Path(directory)
        base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        codes = {"this tree": dict(base, CUTAWAY_CACHE_DIR=str(scratch / "cache-this"))}
        codes["this tree"]["PYTHONPATH"] = str(BENCH_DIR.parent / "src")
        if args.before:
            library = built_before(args.before, scratch)
            codes[args.before] = dict(base, CUTAWAY_CACHE_DIR=str(scratch / "cache-before"))
            codes[args.before]["PYTHONPATH"] = str(library)
        ids = stored_experiments(scratch)
        figures: dict[str, dict[str, list[tuple[float, ...]]]] = {code: {} for code in codes}
        for repetition in range(args.repetitions):
            print(f"repetition {repetition + 1} of {args.repetitions}", file=sys.stderr)
            for code, environment in codes.items():  # interleaved: the same load for each
                for name, experiment_id in ids.items():
                    found = timed_report(scratch / "store.db", experiment_id, environment)
                    figures[code].setdefault(name, []).append(found)
    load_after = os.getloadavg()
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "analysis_cost.json").write_text(json.dumps(figures, indent=1))
    print_table(figures)
    print(
        f"\nload average (1, 5, 15 min): before {', '.join(f'{x:.2f}' for x in load_before)};"
        f" after {', '.join(f'{x:.2f}' for x in load_after)}"
    )


def print_table(figures: dict[str, dict[str, list[tuple[float, ...]]]]) -> None:
    columns = ("analysis in `run`, CPU", "kept analysis, CPU", "`report`, wall", "`report`, CPU")
    print(f"| code | experiment | {' | '.join(columns)} |")
    print(f"|---|---|{'---:|' * len(columns)}")
    for code, by_name in figures.items():
        for pair, (few, many) in PAIRS.items():
            cells = []
            for index in range(len(columns)):
                small = statistics.median(found[index] for found in by_name[few])
                large = statistics.median(found[index] for found in by_name[many])
                per_run = (large - small) / (MANY_RUNS - FEW_RUNS)
                cells.append(f"{per_run * 1e6:.0f} µs ({small * 1e3:.0f} -> {large * 1e3:.0f} ms)")
            print(f"| {code} | {pair} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
