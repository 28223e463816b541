"""Harness overhead benchmark: what does measuring one run of ``true`` cost, cutaway vs hyperfine?

Both tools time 1000 runs of ``/bin/true`` (after 10 warmup runs), alternating which goes first,
three times. For cutaway the figure is the median wall time of its counted runs (from
``cutaway export --format runs-csv``) and its own calibration figure; for hyperfine
(``-N``, no shell) the median of its exported times. Memory: the median ``max_rss`` cutaway records
for ``true``, against GNU time's ``%M`` when /usr/bin/time is installed (hyperfine 1.15 does not
report memory). Raw results go to bench/results/overhead-<date>/; a Markdown summary is printed.
Usage: ``python bench/overhead.py``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
GNU_TIME = Path("/usr/bin/time")
BYTES_PER_KIB = 1024.0

Record = dict[str, Any]


def cutaway_command() -> list[str]:
    found = shutil.which("cutaway")
    return [found] if found else [sys.executable, "-m", "cutaway"]


def run_cutaway(runs: int, warmup: int, raw_dir: Path, attempt: int) -> Record:
    """One cutaway experiment of ``true``: median wall and max_rss of its counted runs."""
    report_path = raw_dir / f"cutaway-{attempt}.json"
    db_path = raw_dir / "overhead.db"
    base = cutaway_command()
    subprocess.run(
        [
            *base,
            "run",
            "-c",
            "true",
            "--rounds",
            str(runs),
            "--warmup",
            str(warmup),
            "--db",
            str(db_path),
            "--color",
            "never",
            "--export-json",
            str(report_path),
        ],
        check=True,
        capture_output=True,
    )
    report = json.loads(report_path.read_text())
    experiment_id = str(report["experiments"][0]["id"])
    exported = subprocess.run(
        [*base, "export", experiment_id, "--format", "runs-csv", "--db", str(db_path)],
        check=True,
        capture_output=True,
        text=True,
    )
    (raw_dir / f"cutaway-{attempt}-runs.csv").write_text(exported.stdout)
    counted = [
        row
        for row in csv.DictReader(io.StringIO(exported.stdout))
        if int(row["round_index"]) >= 0 and row["status"] == "ok"
    ]
    return {
        "runs": len(counted),
        "median_wall_seconds": statistics.median(float(row["wall"]) for row in counted),
        "calibration_median_wall_seconds": report["calibration"]["median_wall_seconds"],
        "calibration_runs": report["calibration"]["n"],
        "median_max_rss_bytes": statistics.median(float(row["max_rss"]) for row in counted),
    }


def run_hyperfine(runs: int, warmup: int, raw_dir: Path, attempt: int) -> Record:
    export_path = raw_dir / f"hyperfine-{attempt}.json"
    subprocess.run(
        [
            "hyperfine",
            "-N",
            "--style",
            "none",
            "--runs",
            str(runs),
            "--warmup",
            str(warmup),
            "--export-json",
            str(export_path),
            "true",
        ],
        check=True,
        capture_output=True,
    )
    times = json.loads(export_path.read_text())["results"][0]["times"]
    return {"runs": len(times), "median_wall_seconds": statistics.median(times)}


def gnu_time_max_rss_bytes(runs: int) -> float | None:
    """Median of GNU time's %M (KiB) for ``true``; None when GNU time is not installed."""
    if not GNU_TIME.exists():
        return None
    kibibytes = []
    for _ in range(runs):
        completed = subprocess.run(
            [str(GNU_TIME), "-f", "%M", "true"], check=True, capture_output=True, text=True
        )
        kibibytes.append(float(completed.stderr.strip().splitlines()[-1]))
    return statistics.median(kibibytes) * BYTES_PER_KIB


def measure(alternations: int, runs: int, warmup: int, raw_dir: Path) -> list[Record]:
    """Alternate the tools, the first one switching every time, so drift hits both alike."""
    records = []
    for attempt in range(alternations):
        cutaway_first = attempt % 2 == 0
        results: Record = {}
        for tool in ("cutaway", "hyperfine") if cutaway_first else ("hyperfine", "cutaway"):
            runner = run_cutaway if tool == "cutaway" else run_hyperfine
            results[tool] = runner(runs, warmup, raw_dir, attempt)
        records.append({"attempt": attempt, "cutaway_first": cutaway_first, **results})
        print(f"attempt {attempt}: {json.dumps(results)}", file=sys.stderr, flush=True)
    return records


def microseconds(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs"


def wall_table(records: list[Record]) -> list[str]:
    lines = [
        "| attempt | first | cutaway median wall | cutaway calibration | hyperfine median "
        "| cutaway / hyperfine |",
        "|---|---|---|---|---|---|",
    ]
    ratios = []
    for record in records:
        cutaway, hyperfine = record["cutaway"], record["hyperfine"]
        ratio = cutaway["median_wall_seconds"] / hyperfine["median_wall_seconds"]
        ratios.append(ratio)
        lines.append(
            f"| {record['attempt'] + 1} | {'cutaway' if record['cutaway_first'] else 'hyperfine'} "
            f"| {microseconds(cutaway['median_wall_seconds'])} "
            f"| {microseconds(cutaway['calibration_median_wall_seconds'])} "
            f"| {microseconds(hyperfine['median_wall_seconds'])} | {ratio:.2f} |"
        )
    lines.append(f"| median | | | | | {statistics.median(ratios):.2f} |")
    return lines


def memory_table(records: list[Record], gnu_time_bytes: float | None) -> list[str]:
    rss = statistics.median(r["cutaway"]["median_max_rss_bytes"] for r in records)
    gnu = "not installed" if gnu_time_bytes is None else f"{gnu_time_bytes / 1024:.0f} KiB"
    return [
        "| max_rss of `true` | median |",
        "|---|---|",
        f"| cutaway (fork server, wait4) | {rss / BYTES_PER_KIB:.0f} KiB |",
        f"| GNU time `-f %M` | {gnu} |",
        "| hyperfine 1.15 | not reported |",
    ]


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--alternations", type=int, default=3, help="default 3")
    parser.add_argument("--runs", type=int, default=1000, help="runs per tool (default 1000)")
    parser.add_argument("--warmup", type=int, default=10, help="warmup runs (default 10)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    return parser.parse_args()


def main() -> int:
    arguments = parse_arguments()
    raw_dir: Path = arguments.results_dir / f"overhead-{time.strftime('%Y%m%d-%H%M%S')}"
    raw_dir.mkdir(parents=True, exist_ok=True)
    records = measure(arguments.alternations, arguments.runs, arguments.warmup, raw_dir)
    gnu_time_bytes = gnu_time_max_rss_bytes(runs=51)
    summary = {"records": records, "gnu_time_max_rss_bytes": gnu_time_bytes}
    (raw_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"raw results: {raw_dir}", file=sys.stderr)
    print("\n".join([*wall_table(records), "", *memory_table(records, gnu_time_bytes)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
