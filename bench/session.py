"""Whole-session benchmark: what cutaway costs a hyperfine user beyond the runs, in one run.

Timed from the outside (spawn of the tool to its exit), interleaved, the order rotating by one
place each repetition, so that both tools see the same moments of a shared machine:

- **fixed cost**: ``hyperfine -N --runs 2 true`` against ``cutaway run -c true --rounds 2``
  (start-up, calibration or its reuse, the warmup round, two runs, analysis, report);
- **per run**: the same with 202 runs; (wall of 202 - wall of 2) / 200 is the cost of one more
  run, spawn to spawn. Minus the tool's own median of `true` (hyperfine's JSON, cutaway's
  store), what remains is its bookkeeping per run beyond the run itself;
- **report**: ``cutaway report`` of the 2-round experiment (hyperfine has no such command);
- **quick session**: ``hyperfine -N --runs 20 'sleep 0.01' 'sleep 0.012'`` against ``cutaway
  run 'sleep 0.01' 'sleep 0.012' --rounds 20``, as earlier versions of this benchmark timed;
- **harness figure**: the calibration measured afresh (an empty calibration cache) once per
  repetition, against cutaway's own median of `true` in the 202-run experiments: how much the
  figure moves from one measurement to the next on this machine (not timed).

Every command's CPU time (user + system, with its children) is recorded too. Ratios are of
medians measured in this same run. The commands run with Python's bytecode cache on (without
PYTHONDONTWRITEBYTECODE), as on a user's machine, and with cutaway's calibration cache in a
directory of the benchmark's own, filled by one uncounted pass (a user's first session on a
machine measures it; every later one reuses it). Prints a Markdown table and the load average;
raw times go to bench/results/session-<date>.json. Usage:
``python bench/session.py [--repetitions 15] [--before GIT_REF]``;
``PYTHONPATH=/other/src python bench/session.py`` times another version's code (``python -m
cutaway`` is then used, so that it is that code). ``--before GIT_REF`` also times that commit's
2-run and 202-run sessions in the same repetitions (built with its native parts by ``pip install
--target`` from a worktree of it, its calibration cache apart), and prints the fixed cost and
the per-run figures of both, wall and CPU (for the same launch on both sides, run this tree's
code built the same way: ``PYTHONPATH=DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
FEW_RUNS = 2
MANY_RUNS = 202
SLEEPS = ("sleep 0.01", "sleep 0.012")
SLEEP_RUNS = 20


def cutaway_command() -> list[str]:
    """The ``cutaway`` script next to this interpreter (else on PATH); ``python -m cutaway``
    when PYTHONPATH names other code, or when there is no script."""
    if os.environ.get("PYTHONPATH"):
        return [sys.executable, "-m", "cutaway"]
    beside = Path(sys.executable).parent / "cutaway"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("cutaway")
    return [found] if found else [sys.executable, "-m", "cutaway"]


def before_commands(scratch: Path) -> dict[str, list[str]]:
    """The per-run sessions of --before's code (its library on PYTHONPATH: built_before)."""
    cutaway = [sys.executable, "-m", "cutaway"]

    def run(db: str, rounds: int) -> list[str]:
        return [*cutaway, "run", "-c", "true", "--rounds", str(rounds), "--db", str(scratch / db)]

    return {
        "before, 2 runs": run("before-few.db", FEW_RUNS),
        "before, 202 runs": run("before-many.db", MANY_RUNS),
    }


def built_before(ref: str, scratch: Path) -> Path:
    """``ref`` checked out in a worktree and installed, native parts built, into a directory
    of its own (for PYTHONPATH); that directory."""
    tree, library = scratch / "before-tree", scratch / "before-lib"
    subprocess.run(
        ["git", "-C", str(BENCH_DIR.parent), "worktree", "add", "--detach", str(tree), ref],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
             str(library), str(tree)], check=True,
        )  # fmt: skip
    finally:
        subprocess.run(
            ["git", "-C", str(BENCH_DIR.parent), "worktree", "remove", "--force", str(tree)],
            check=False, capture_output=True,
        )  # fmt: skip
    return library


def commands(scratch: Path) -> dict[str, list[str]]:
    cutaway = cutaway_command()

    def run(db: str, *arguments: str) -> list[str]:
        return [*cutaway, "run", *arguments, "--db", str(scratch / db)]

    return {
        "hyperfine, 2 runs": ["hyperfine", "-N", "--runs", str(FEW_RUNS), "true"],
        "cutaway, 2 runs": run("few.db", "-c", "true", "--rounds", str(FEW_RUNS)),
        "hyperfine, 202 runs": [
            *("hyperfine", "-N", "--runs", str(MANY_RUNS), "true"),
            *("--export-json", str(scratch / "hyperfine-many.json")),
        ],
        "cutaway, 202 runs": run("many.db", "-c", "true", "--rounds", str(MANY_RUNS)),
        "cutaway report": [*cutaway, "report", "--db", str(scratch / "few.db")],
        "hyperfine, quick session": ["hyperfine", "-N", "--runs", str(SLEEP_RUNS), *SLEEPS],
        "cutaway, quick session": run("sleeps.db", *SLEEPS, "--rounds", str(SLEEP_RUNS)),
    }


def fresh_calibration_seconds(scratch: Path, environment: dict[str, str], index: int) -> float:
    """The harness figure measured now: a 2-round experiment with an empty calibration
    cache, its calibration read back from the JSON export."""
    fresh = {**environment, "CUTAWAY_CACHE_DIR": str(scratch / f"fresh-cache-{index}")}
    db = str(scratch / "calibrations.db")
    command = cutaway_command()
    subprocess.run(
        [*command, "run", "-c", "true", "--rounds", "2", "--db", db, "-q"],
        stdout=subprocess.DEVNULL,
        check=True,
        env=fresh,
    )
    exported = subprocess.run(
        [*command, "export", "--format", "json", "--db", db],
        capture_output=True,
        text=True,
        check=True,
        env=fresh,
    )
    return float(json.loads(exported.stdout)["calibration"]["median_wall_seconds"])


def timed_environment(cache: Path) -> dict[str, str]:
    """This environment without PYTHONDONTWRITEBYTECODE (see bench/startup.py), with the
    calibration cache in the benchmark's own directory."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**environment, "CUTAWAY_CACHE_DIR": str(cache)}


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall_and_cpu_seconds(argv: list[str], environment: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawning the tool to its exit, and the CPU seconds it and its children
    used; its output is read and discarded."""
    cpu = children_cpu_seconds()
    started = time.perf_counter()
    subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=environment
    )
    return time.perf_counter() - started, children_cpu_seconds() - cpu


def hyperfine_median_seconds(path: Path) -> float:
    """hyperfine's median of its last export (the many-runs command)."""
    result = json.loads(path.read_text())["results"][0]
    return float(result["median"])


def cutaway_median_seconds(db: Path, environment: dict[str, str]) -> float:
    """cutaway's median wall time of `true` in the newest experiment of ``db`` (read by this
    tree's cutaway, whichever wrote it)."""
    exported = subprocess.run(
        [*cutaway_command(), "export", "--format", "json", "--db", str(db)],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    result = json.loads(exported.stdout)["results"][0]
    return float(result["median"])


def quartiles(values: list[float]) -> tuple[float, float, float]:
    first, median, third = statistics.quantiles(values, n=4, method="inclusive")
    return first, median, third


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=15)
    parser.add_argument("--before", help="a git ref whose per-run figures are timed as well")
    args = parser.parse_args()
    if shutil.which("hyperfine") is None:
        sys.exit("needs hyperfine (apt-get install hyperfine)")
    walls: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    medians: dict[str, list[float]] = {"hyperfine": [], "cutaway": [], "before": []}
    calibrations: list[float] = []
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        environment = timed_environment(scratch / "cache")
        argvs = commands(scratch)
        environments = dict.fromkeys(argvs, environment)
        if args.before:
            library = built_before(args.before, scratch)
            before = before_commands(scratch)
            argvs.update(before)
            before_environment = timed_environment(scratch / "before-cache")
            before_environment["PYTHONPATH"] = str(library)
            environments.update(dict.fromkeys(before, before_environment))  # never changed
        names = list(argvs)
        # One uncounted pass: creates the stores, the bytecode cache and the calibration cache,
        # as a user's first session on this machine would.
        for name in names:
            wall_and_cpu_seconds(argvs[name], environments[name])
        for repetition in range(args.repetitions):
            shift = repetition % len(names)
            for name in names[shift:] + names[:shift]:
                wall, cpu = wall_and_cpu_seconds(argvs[name], environments[name])
                walls.setdefault(name, []).append(wall)
                cpus.setdefault(name, []).append(cpu)
                if name == "hyperfine, 202 runs":
                    medians["hyperfine"].append(
                        hyperfine_median_seconds(scratch / "hyperfine-many.json")
                    )
                elif name == "cutaway, 202 runs":
                    medians["cutaway"].append(
                        cutaway_median_seconds(scratch / "many.db", environment)
                    )
                elif name == "before, 202 runs":
                    medians["before"].append(
                        cutaway_median_seconds(scratch / "before-many.db", environment)
                    )
            calibrations.append(fresh_calibration_seconds(scratch, environment, repetition))
            print(f"repetition {repetition + 1}/{args.repetitions}", file=sys.stderr)
    load_after = os.getloadavg()
    RESULTS_DIR.mkdir(exist_ok=True)
    raw = RESULTS_DIR / f"session-{time.strftime('%Y%m%d-%H%M%S')}.json"
    record = {
        "started": started,
        "before": args.before,
        "commands": argvs,
        "walls": walls,
        "cpu_times": cpus,
        "medians_of_true": medians,
        "fresh_calibrations": calibrations,
        "load_average_before": load_before,
        "load_average_after": load_after,
    }
    raw.write_text(json.dumps(record, indent=1))
    print_table(walls, cpus, medians, args.repetitions)
    if args.before:
        print_before_table(walls, cpus, medians, args.before)
    print(
        f"\nharness figure measured afresh {len(calibrations)} times: median "
        f"{statistics.median(calibrations) * 1e3:.3f} ms, range {min(calibrations) * 1e3:.3f}-"
        f"{max(calibrations) * 1e3:.3f} ms; cutaway's median of `true` in its 202-run "
        f"experiments: {min(medians['cutaway']) * 1e3:.3f}-{max(medians['cutaway']) * 1e3:.3f} ms"
    )
    print(
        f"\nstarted {started}; load average (1, 5, 15 min): before "
        f"{', '.join(f'{x:.2f}' for x in load_before)}; after "
        f"{', '.join(f'{x:.2f}' for x in load_after)}"
    )
    print(f"\nraw times: {raw}", file=sys.stderr)


def print_table(
    walls: dict[str, list[float]],
    cpus: dict[str, list[float]],
    medians: dict[str, list[float]],
    repetitions: int,
) -> None:
    def median(name: str) -> float:
        return statistics.median(walls[name])

    def cpu(name: str) -> float:
        return statistics.median(cpus[name])

    per_run = {tool: one_more_run(walls, tool) for tool in ("hyperfine", "cutaway")}
    cpu_per_run = {tool: one_more_run(cpus, tool) for tool in per_run}
    beyond = {
        tool: [cost - true for cost, true in zip(per_run[tool], medians[tool], strict=True)]
        for tool in per_run
    }
    print(f"{repetitions} repetitions, medians (quartiles):\n")
    print("| figure | hyperfine | cutaway | cutaway / hyperfine |")
    print("|---|---:|---:|---:|")

    def row(label: str, first: list[float], second: list[float] | None, unit: float) -> None:
        if second is None:
            print(f"| {label} | | {cell(first, unit)} | |")
            return
        ratio = statistics.median(second) / statistics.median(first)
        print(f"| {label} | {cell(first, unit)} | {cell(second, unit)} | {ratio:.1f} |")

    row(
        "session with 2 runs of `true`, wall (s)",
        walls["hyperfine, 2 runs"],
        walls["cutaway, 2 runs"],
        1,
    )
    row("the same, CPU (s)", cpus["hyperfine, 2 runs"], cpus["cutaway, 2 runs"], 1)
    row("one more run, spawn to spawn (ms)", per_run["hyperfine"], per_run["cutaway"], 1e3)
    row("the tool's median of `true` (ms)", medians["hyperfine"], medians["cutaway"], 1e3)
    row("bookkeeping per run beyond it (ms)", beyond["hyperfine"], beyond["cutaway"], 1e3)
    row("CPU of one more run (ms)", cpu_per_run["hyperfine"], cpu_per_run["cutaway"], 1e3)
    row("`cutaway report` of the 2-run experiment (s)", walls["cutaway report"], None, 1)
    row(
        f"quick session, 2 x {SLEEP_RUNS} sleeps, wall (s)",
        walls["hyperfine, quick session"],
        walls["cutaway, quick session"],
        1,
    )
    row(
        "the same, CPU (s)",
        cpus["hyperfine, quick session"],
        cpus["cutaway, quick session"],
        1,
    )
    print(
        f"\nCPU medians: hyperfine 202 runs {cpu('hyperfine, 202 runs'):.3f} s, "
        f"cutaway 202 runs {cpu('cutaway, 202 runs'):.3f} s; report {cpu('cutaway report'):.3f} s; "
        f"walls: hyperfine 202 runs {median('hyperfine, 202 runs'):.3f} s, cutaway "
        f"{median('cutaway, 202 runs'):.3f} s"
    )


def one_more_run(values: dict[str, list[float]], tool: str) -> list[float]:
    """(202-run session - 2-run session) / 200, per repetition: one more run's cost."""
    few, many = values[f"{tool}, 2 runs"], values[f"{tool}, {MANY_RUNS} runs"]
    return [(b - a) / (MANY_RUNS - FEW_RUNS) for a, b in zip(few, many, strict=True)]


def cell(values: list[float], unit: float) -> str:
    low, middle, high = quartiles(values)
    return f"{middle * unit:.3g} ({low * unit:.3g}-{high * unit:.3g})"


def print_before_table(
    walls: dict[str, list[float]],
    cpus: dict[str, list[float]],
    medians: dict[str, list[float]],
    ref: str,
) -> None:
    """The fixed cost and per-run figures of --before's commit beside this tree's, from the
    same repetitions."""
    print(f"\n{ref} against this tree (same repetitions), medians (quartiles):\n")
    print(f"| figure | {ref} | this tree | change |")
    print("|---|---:|---:|---:|")
    figures = {}
    for tool in ("before", "cutaway"):
        spawn_to_spawn = one_more_run(walls, tool)
        figures[tool] = {
            f"session with {FEW_RUNS} runs of `true`, wall (ms)": walls[f"{tool}, {FEW_RUNS} runs"],
            "the same, CPU (ms)": cpus[f"{tool}, {FEW_RUNS} runs"],
            "one more run, spawn to spawn (ms)": spawn_to_spawn,
            "the tool's median of `true` (ms)": medians[tool],
            "bookkeeping per run beyond it (ms)": [
                cost - true for cost, true in zip(spawn_to_spawn, medians[tool], strict=True)
            ],
            "CPU of one more run (ms)": one_more_run(cpus, tool),
        }
    for label, before in figures["before"].items():
        after = figures["cutaway"][label]
        change = statistics.median(after) / statistics.median(before) - 1
        print(f"| {label} | {cell(before, 1e3)} | {cell(after, 1e3)} | {change:+.0%} |")


if __name__ == "__main__":
    main()
