"""Precision benchmark: does cutaway catch a 1 % change and stay quiet when there is none?

Each repetition runs four experiments on the same time budget, interleaved so that both tools
see the same machine conditions:

- cutaway A vs B, where B (``spin 1.01*N``) does 1 % more CPU work than A (``spin N``);
- hyperfine A vs B, read with a Welch t-test on its exported times;
- cutaway A vs A (any "regressed" or "improved" is a false alarm);
- hyperfine A vs A.

Every finished experiment is appended to a JSON-lines file in bench/results/ at once, so a crash
keeps what was done. At the end a Markdown summary is printed; ``--summarize FILE`` prints it
again from a results file. Usage: ``python bench/precision.py --repetitions 20 --budget 60``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scipy import stats

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
TARGET_RUN_SECONDS = 0.1
EXTRA_WORK_FRACTION = 0.01
ALPHA = 0.05
CUTAWAY_VERDICTS = ("regressed", "improved", "equivalent", "inconclusive", "error")
HYPERFINE_VERDICTS = ("regressed", "improved", "no difference", "error")

Record = dict[str, Any]


@dataclass(frozen=True)
class Workload:
    """The calibrated pair of commands: A does ``iterations_a``, B 1 % more."""

    spin_path: Path
    iterations_a: int
    iterations_b: int
    mean_run_seconds: float

    def command(self, iterations: int) -> str:
        return f"{shlex.quote(str(self.spin_path))} {iterations}"


def compile_spin(results_dir: Path) -> Path:
    spin_path = results_dir / "spin"
    source_path = BENCH_DIR / "spin.c"
    subprocess.run(["gcc", "-O2", "-o", str(spin_path), str(source_path)], check=True)
    return spin_path


def time_runs(spin_path: Path, iterations: int, runs: int) -> list[float]:
    """Wall seconds of ``runs`` runs of spin, output discarded."""
    wall_seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([str(spin_path), str(iterations)], check=True, stdout=subprocess.DEVNULL)
        wall_seconds.append(time.perf_counter() - started)
    return wall_seconds


def calibrate(spin_path: Path, target_seconds: float) -> Workload:
    """Scale N until ``spin N`` takes about ``target_seconds`` (two refinements are plenty:
    the work is linear in N), then measure the mean time per run for hyperfine's run count."""
    iterations = 10_000_000
    for runs in (3, 7):
        median_seconds = statistics.median(time_runs(spin_path, iterations, runs))
        iterations = max(1, round(iterations * target_seconds / median_seconds))
    iterations_b = round((1.0 + EXTRA_WORK_FRACTION) * iterations)
    mean_a = statistics.fmean(time_runs(spin_path, iterations, 10))
    mean_b = statistics.fmean(time_runs(spin_path, iterations_b, 10))
    return Workload(spin_path, iterations, iterations_b, (mean_a + mean_b) / 2.0)


def cutaway_command() -> list[str]:
    found = shutil.which("cutaway")
    return [found] if found else [sys.executable, "-m", "cutaway"]


def run_cutaway(
    workload: Workload, kind: str, seed: int, budget_seconds: float, paths: dict[str, Path]
) -> Record:
    """One cutaway experiment; its verdict is that of the ``wall`` comparison."""
    second = workload.iterations_b if kind == "ab" else workload.iterations_a
    second_name = "B" if kind == "ab" else "A2"
    report_path = paths["raw"] / f"cutaway-{kind}-seed{seed}.json"
    options = {
        "--rounds": "100000",
        "--warmup": "2",
        "--max-time": f"{budget_seconds:g}s",
        "--db": str(paths["db"]),
        "--seed": str(seed),
        "--color": "never",
        "--export-json": str(report_path),
    }
    argv = [*cutaway_command(), "run", "-c", workload.command(workload.iterations_a)]
    argv += ["-c", workload.command(second), "-n", "A", "-n", second_name]
    argv += [word for option in options.items() for word in option]
    completed = subprocess.run(argv, capture_output=True, text=True)
    if completed.returncode != 0 or not report_path.exists():
        # The runs may well be stored even when the report failed: keep the experiment's id so
        # it can be exported again (`cutaway export ID --format json --db ...`).
        stored_as = re.search(r"experiment #(\d+)", completed.stderr)
        return {
            "verdict": "error",
            "returncode": completed.returncode,
            "stderr": completed.stderr[-2000:],
            "experiment_id": int(stored_as.group(1)) if stored_as else None,
        }
    report = json.loads(report_path.read_text())
    wall = next(c for c in report["comparisons"] if c["metric"] == "wall")
    summary_a = next(
        s for s in report["summaries"] if s["metric"] == "wall" and s["variant"] == "A"
    )
    return {
        "verdict": wall["verdict"],
        "ratio": wall["ratio"],
        "ci_low": wall["ci_low"],
        "ci_high": wall["ci_high"],
        "p_value": wall["p_value"],
        "n_pairs": wall["n_pairs"],
        "mean_a_seconds": summary_a["mean"],
        "sd_a_seconds": summary_a["sd"],
        "experiment_id": report["experiments"][0]["id"],
        "report_path": str(report_path),
    }


def welch_reading(times_a: list[float], times_b: list[float]) -> Record:
    """Welch's t-test on hyperfine's times, and an approximate 95 % interval of B/A (the
    interval of the difference of means divided by mean A, ignoring the error of mean A)."""
    test = stats.ttest_ind(times_b, times_a, equal_var=False)
    mean_a, mean_b = statistics.fmean(times_a), statistics.fmean(times_b)
    p_value = float(test.pvalue)
    verdict = "no difference"
    if p_value < ALPHA:
        verdict = "regressed" if mean_b > mean_a else "improved"
    interval = test.confidence_interval(1.0 - ALPHA)
    return {
        "verdict": verdict,
        "ratio": mean_b / mean_a,
        "ci_low": 1.0 + float(interval.low) / mean_a,
        "ci_high": 1.0 + float(interval.high) / mean_a,
        "p_value": p_value,
        "mean_a_seconds": mean_a,
        "sd_a_seconds": statistics.stdev(times_a),
        "mean_b_seconds": mean_b,
        "sd_b_seconds": statistics.stdev(times_b),
        "n_a": len(times_a),
        "n_b": len(times_b),
    }


def run_hyperfine(
    workload: Workload, kind: str, seed: int, budget_seconds: float, paths: dict[str, Path]
) -> Record:
    """One hyperfine run of both commands, with as many runs as fit in the budget."""
    second = workload.iterations_b if kind == "ab" else workload.iterations_a
    runs = max(2, round(budget_seconds / (2.0 * workload.mean_run_seconds)))
    export_path = paths["raw"] / f"hyperfine-{kind}-seed{seed}.json"
    command_a = workload.command(workload.iterations_a)
    command_b = workload.command(second)
    argv = [
        "hyperfine",
        "-N",
        "--style",
        "none",
        "--warmup",
        "2",
        "--runs",
        str(runs),
        "--export-json",
        str(export_path),
        command_a,
        command_b,
    ]
    completed = subprocess.run(argv, capture_output=True, text=True)
    if completed.returncode != 0 or not export_path.exists():
        return {
            "verdict": "error",
            "returncode": completed.returncode,
            "stderr": completed.stderr[-2000:],
        }
    results = json.loads(export_path.read_text())["results"]
    record = welch_reading(results[0]["times"], results[1]["times"])
    record["runs"] = runs
    record["export_path"] = str(export_path)
    return record


Experiment = Callable[[Workload, str, int, float, dict[str, Path]], Record]
EXPERIMENTS: tuple[tuple[str, str, Experiment], ...] = (
    ("cutaway", "ab", run_cutaway),
    ("hyperfine", "ab", run_hyperfine),
    ("cutaway", "aa", run_cutaway),
    ("hyperfine", "aa", run_hyperfine),
)


def run_repetition(
    repetition: int, workload: Workload, budget_seconds: float, paths: dict[str, Path]
) -> Iterable[Record]:
    """The four experiments, the starting one rotating with the repetition."""
    shift = repetition % len(EXPERIMENTS)
    for position, (tool, kind, experiment) in enumerate(EXPERIMENTS[shift:] + EXPERIMENTS[:shift]):
        loadavg_start = os.getloadavg()
        started = time.monotonic()
        record = experiment(workload, kind, repetition, budget_seconds, paths)
        yield {
            "type": "experiment",
            "repetition": repetition,
            "position": position,
            "tool": tool,
            "kind": kind,
            "elapsed_seconds": time.monotonic() - started,
            "loadavg_start": list(loadavg_start),
            **record,
        }


def machine_description() -> Record:
    cpu_model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu_model = line.split(":", 1)[1].strip()
            break
    hyperfine = subprocess.run(["hyperfine", "--version"], capture_output=True, text=True)
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cores": os.cpu_count(),
        "cpu_model": cpu_model,
        "kernel": os.uname().release,
        "hyperfine": hyperfine.stdout.strip(),
        "python": sys.version.split()[0],
    }


def share(records: list[Record], verdicts: tuple[str, ...]) -> str:
    """ "k/n (p %)" of the records, errors left out, whose verdict is one of ``verdicts``."""
    valid = [r for r in records if r["verdict"] != "error"]
    if not valid:
        return "n/a"
    hits = sum(r["verdict"] in verdicts for r in valid)
    return f"{hits}/{len(valid)} ({100.0 * hits / len(valid):.0f} %)"


def median_of(records: list[Record], value: Callable[[Record], float], digits: int) -> str:
    values = [value(r) for r in records if r["verdict"] != "error" and r.get("ci_low") is not None]
    return f"{statistics.median(values):.{digits}f}" if values else "n/a"


def headline_table(experiments: list[Record]) -> list[str]:
    lines = [
        "| tool | A/B says regressed (target >= 90 %) | A/A false alarms (target <= 5 %) "
        "| median A/B ratio | median A/B CI width | median A/A ratio | median A/A CI width |",
        "|---|---|---|---|---|---|---|",
    ]
    for tool in ("cutaway", "hyperfine"):
        ab = [r for r in experiments if r["tool"] == tool and r["kind"] == "ab"]
        aa = [r for r in experiments if r["tool"] == tool and r["kind"] == "aa"]
        name = "cutaway" if tool == "cutaway" else "hyperfine + Welch t-test"
        lines.append(
            f"| {name} | {share(ab, ('regressed',))} | {share(aa, ('regressed', 'improved'))} "
            f"| {median_of(ab, lambda r: r['ratio'], 4)} "
            f"| {median_of(ab, lambda r: 100.0 * (r['ci_high'] - r['ci_low']), 2)} % "
            f"| {median_of(aa, lambda r: r['ratio'], 4)} "
            f"| {median_of(aa, lambda r: 100.0 * (r['ci_high'] - r['ci_low']), 2)} % |"
        )
    return lines


def distribution_table(experiments: list[Record]) -> list[str]:
    columns = ("regressed", "improved", "equivalent", "inconclusive", "no difference", "error")
    lines = [
        "| tool | comparison | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for tool, verdicts in (("cutaway", CUTAWAY_VERDICTS), ("hyperfine", HYPERFINE_VERDICTS)):
        for kind, label in (("ab", "A vs B (+1 %)"), ("aa", "A vs A")):
            counts = Counter(
                r["verdict"] for r in experiments if r["tool"] == tool and r["kind"] == kind
            )
            cells = [str(counts[c]) if c in verdicts else "-" for c in columns]
            lines.append(f"| {tool} | {label} | " + " | ".join(cells) + " |")
    return lines


def noise_table(experiments: list[Record]) -> list[str]:
    """Medians over experiments of what each tool saw of A: the spread of single runs."""
    lines = [
        "| tool | comparison | median runs (pairs) per command | median mean of A | "
        "median sd of A | median sd / mean |",
        "|---|---|---|---|---|---|",
    ]
    for tool in ("cutaway", "hyperfine"):
        for kind in ("ab", "aa"):
            done = [
                r
                for r in experiments
                if r["tool"] == tool and r["kind"] == kind and r["verdict"] != "error"
            ]
            if not done:
                continue
            runs = statistics.median(int(r.get("n_pairs") or r.get("n_a") or 0) for r in done)
            mean_ms = statistics.median(1000.0 * r["mean_a_seconds"] for r in done)
            sd_ms = statistics.median(1000.0 * r["sd_a_seconds"] for r in done)
            cv = statistics.median(r["sd_a_seconds"] / r["mean_a_seconds"] for r in done)
            lines.append(
                f"| {tool} | {kind.upper()[0]}/{kind.upper()[1]} | {runs:.0f} | {mean_ms:.2f} ms "
                f"| {sd_ms:.2f} ms | {100.0 * cv:.2f} % |"
            )
    return lines


def details_table(experiments: list[Record]) -> list[str]:
    """One row per experiment, in the order they ran."""
    lines = [
        "| repetition | order | tool | comparison | verdict | ratio | 95 % CI | p | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in experiments:
        if r["verdict"] == "error":
            cells = "error | | | |"
        else:
            cells = (
                f"{r['verdict']} | {r['ratio']:.4f} | [{r['ci_low']:.4f}, {r['ci_high']:.4f}] "
                f"| {r['p_value']:.2g} |"
            )
        lines.append(
            f"| {r['repetition']} | {r['position'] + 1} | {r['tool']} | {r['kind']} | {cells} "
            f"{r['loadavg_start'][0]:.2f} |"
        )
    return lines


def summarize(records: list[Record], details: bool = False) -> str:
    setups = [r for r in records if r["type"] == "setup"]
    experiments = [r for r in records if r["type"] == "experiment"]
    repetitions = sorted({r["repetition"] for r in experiments})
    header = []
    if setups:
        setup = setups[0]
        header = [
            f"Workload: A = `spin {setup['iterations_a']}`, B = `spin {setup['iterations_b']}` "
            f"(mean {1000.0 * setup['mean_run_seconds']:.1f} ms per run at calibration); "
            f"budget {setup['budget_seconds']:g} s per experiment; "
            f"{len(repetitions)} repetition(s) with results, {len(experiments)} experiments.",
            "",
        ]
    more = ["", "Every experiment:", "", *details_table(experiments)] if details else []
    return "\n".join(
        [
            *header,
            *headline_table(experiments),
            "",
            "Verdicts:",
            "",
            *distribution_table(experiments),
            "",
            "Noise seen:",
            "",
            *noise_table(experiments),
            *more,
        ]
    )


def progress_line(record: Record) -> str:
    return (
        f"repetition {record['repetition']} {record['tool']} {record['kind']}: "
        f"{record['verdict']} ratio={record.get('ratio')} ({record['elapsed_seconds']:.0f} s)"
    )


def read_records(path: Path) -> list[Record]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repetitions", type=int, default=20, help="repetitions (default 20)")
    parser.add_argument(
        "--budget", type=float, default=60.0, help="seconds per experiment (default 60)"
    )
    parser.add_argument(
        "--target-seconds", type=float, default=TARGET_RUN_SECONDS, help="duration of spin N"
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--summarize", type=Path, help="only print the summary of a results file")
    parser.add_argument(
        "--details", action="store_true", help="with --summarize, also list every experiment"
    )
    return parser.parse_args()


def main() -> int:
    arguments = parse_arguments()
    if arguments.summarize is not None:
        print(summarize(read_records(arguments.summarize), arguments.details))
        return 0
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results_dir: Path = arguments.results_dir
    paths = {"raw": results_dir / f"precision-{stamp}", "db": results_dir / "precision.db"}
    paths["raw"].mkdir(parents=True, exist_ok=True)
    lines_path = results_dir / f"precision-{stamp}.jsonl"
    workload = calibrate(compile_spin(results_dir), arguments.target_seconds)
    setup = {
        "type": "setup",
        "iterations_a": workload.iterations_a,
        "iterations_b": workload.iterations_b,
        "mean_run_seconds": workload.mean_run_seconds,
        "budget_seconds": arguments.budget,
        "repetitions": arguments.repetitions,
        **machine_description(),
    }
    records: list[Record] = [setup]
    with lines_path.open("a") as lines:
        print(json.dumps(setup), file=lines, flush=True)
        print(f"results: {lines_path}", file=sys.stderr)
        for repetition in range(arguments.repetitions):
            for record in run_repetition(repetition, workload, arguments.budget, paths):
                records.append(record)
                print(json.dumps(record), file=lines, flush=True)
                print(progress_line(record), file=sys.stderr, flush=True)
    print(summarize(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
