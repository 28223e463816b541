"""What the spans probe costs to analyse as spans pile up: time and peak memory of one run's
spans read from their files into its phase table (what the probe does after each run: its own
reading code, SpansProbe's) and the dissection computed from the stored tables (what
`cutaway report` does), for

- many distinct names: N OpenTelemetry traces whose outermost span is named after its URL
  (`GET /item/<i>`, each with one `db query` child), one OTLP JSON line each, 3 runs;
- many spans in one run, through each reader: N spans written by the span SDK (a Python program
  using `cutaway.spans` with the C writer, as under the probe), and N spans in OTLP JSON (a
  trace of 10 spans per line); operations of 10 spans (a `request` with `parse`, `query` and
  its 3 `fetch`, `render`, ...).

The input files are written once, by this tree's writer, into a scratch directory. Each case
runs in a child Python process: wall seconds of the two steps, the child's CPU seconds (user +
system: steadier than wall on a shared machine), its ru_maxrss (the peak memory) and the
dissection's rows. It runs under a time limit and an address-space limit (a case past either
is shown as stopped). With --before GIT_REF the same cases run against that commit's Python
sources too (checked out in a temporary git worktree, put first on PYTHONPATH), side by side.

Usage: python bench/spans_volume.py [--names N] [--spans [N ...]] [--readers sdk otlp]
       [--before 73cfab0] [--limit-seconds S] [--before-limit-seconds S] [--limit-gib G]
       (a Markdown table; --names 0 or --spans alone leave those cases out)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, shutil, sys, time
from pathlib import Path
from cutaway.probes import phase_tables as phases
from cutaway.probes.spans import capture
from cutaway.probes.spans.settings import SpansSpec
from cutaway.probes.spans.analysis import phase_stats

case, directory = sys.argv[1], Path(sys.argv[2])
runs = 3 if case == "names" else 1
source = "sdk" if case == "sdk" else "otlp"
started = time.perf_counter()
tables = []
for _ in range(runs):
    probe = capture.SpansProbe(SpansSpec())
    shutil.rmtree(probe.directory)
    probe.directory = directory  # the run's files, as the probe finds them after a run
    problems = []
    if hasattr(probe, "_sdk_table"):  # nests as it reads
        table = probe._sdk_table(problems).table if case == "sdk" else probe._otlp_table(problems)
        data, metrics = phases.table_data(source, table, problems)
    else:  # reads a run's spans, then nests them
        spans = probe._sdk_spans(problems) if case == "sdk" else probe._otlp_spans(problems)
        data, metrics = phases.phase_data(source, spans, problems)
        del spans
    tables.append(phases.decode(data.data))
captured = time.perf_counter()
stats = phase_stats({("a", None, source): tables}, ["a"], 0.95)
finished = time.perf_counter()
print(json.dumps({
    "capture_seconds": captured - started,
    "analysis_seconds": finished - captured,
    "phases": len(stats),
    "peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    "cpu_seconds": sum(resource.getrusage(resource.RUSAGE_SELF)[:2]),
    "problems": problems[:3],
}))
"""

# (name, depth, parent) of an operation's 10 spans, in the order they start
SHAPE = [("request", 0, None), ("parse", 1, "request"), ("query", 1, "request"),
         ("fetch", 2, "query"), ("fetch", 2, "query"), ("fetch", 2, "query"),
         ("render", 1, "request"), ("template", 2, "render"), ("escape", 2, "render"),
         ("send", 1, "request")]  # fmt: skip

SDK_WRITER = r"""
import sys
from cutaway import spans
span = spans.span
for _ in range(int(sys.argv[1]) // 10):
    with span("request"):
        with span("parse"):
            pass
        with span("query"):
            for _ in range(3):
                with span("fetch"):
                    pass
        with span("render"):
            with span("template"):
                pass
            with span("escape"):
                pass
        with span("send"):
            pass
"""


def write_sdk_files(directory: Path, count: int) -> None:
    """`count` spans by a Python program through the span SDK, under the probe's environment
    (this tree's C writer)."""
    from cutaway.probes.spans.records import environment_for

    directory.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUTAWAY_")}
    env.update(environment_for(directory))
    subprocess.run([sys.executable, "-c", SDK_WRITER, str(count)], env=env, check=True)


def write_otlp_spans(directory: Path, count: int) -> None:
    """`count` spans as OTLP JSON, a trace of 10 spans per line."""
    directory.mkdir()
    with open(directory / "otlp.jsonl", "w") as file:
        for operation in range(count // len(SHAPE)):
            trace, start = f"{operation:032x}", operation * 100_000
            ids = {}
            spans = []
            for offset, (name, depth, parent) in enumerate(SHAPE):
                ids[name] = f"{offset + 1:016x}"
                begin = start + offset * 1000
                end = start + 90_000 - offset if depth == 0 else begin + 500 + operation % 311
                spans.append({
                    "traceId": trace, "spanId": ids[name], "parentSpanId": ids.get(parent, ""),
                    "name": name, "startTimeUnixNano": str(begin), "endTimeUnixNano": str(end),
                })  # fmt: skip
            file.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
            file.write("\n")


def write_otlp_names(directory: Path, traces: int) -> None:
    """`traces` traces, each named after its own URL, with a `db query` child: one line each."""
    directory.mkdir()
    with open(directory / "otlp.jsonl", "w") as file:
        for i in range(traces):
            trace, start = f"{i:032x}", 1_000_000 * i
            spans = [
                {"traceId": trace, "spanId": "a" * 16, "name": f"GET /item/{i}",
                 "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 5000 + i % 977)},
                {"traceId": trace, "spanId": "b" * 16, "parentSpanId": "a" * 16,
                 "name": "db query", "startTimeUnixNano": str(start + 100),
                 "endTimeUnixNano": str(start + 900)},
            ]  # fmt: skip
            file.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
            file.write("\n")


def run_case(
    source: Path, case: str, directory: Path, limit_seconds: float, limit_bytes: int
) -> dict[str, object]:
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = {**os.environ, "PYTHONPATH": str(source / "src")}
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHILD, case, str(directory)],
            env=env, capture_output=True, text=True, timeout=limit_seconds,
            preexec_fn=limits, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"stopped": f"still running after {limit_seconds:.0f} s"}
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["?"])[-1]
        return {"stopped": f"failed: {last[:80]}"}
    measured: dict[str, object] = json.loads(result.stdout)
    return measured


def _row(label: str, code: str, measured: dict[str, object]) -> str:
    if "stopped" in measured:
        return f"| {label} | {code} | {measured['stopped']} | | | | |"
    capture = float(measured["capture_seconds"])  # type: ignore[arg-type]
    analysis = float(measured["analysis_seconds"])  # type: ignore[arg-type]
    peak = int(measured["peak_bytes"]) / 2**20  # type: ignore[call-overload]
    cpu = float(measured["cpu_seconds"])  # type: ignore[arg-type]
    return (
        f"| {label} | {code} | {capture:.1f} s | {analysis:.2f} s "
        f"| {cpu:.1f} s | {peak:,.0f} MiB | {measured['phases']} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--names", type=int, default=100_000)
    parser.add_argument("--spans", type=int, nargs="*", default=[1_000_000, 10_000_000])
    parser.add_argument(
        "--readers", nargs="+", choices=["sdk", "otlp"], default=["sdk", "otlp"],
        help="the readers of the --spans cases",
    )  # fmt: skip
    parser.add_argument("--before", help="a git ref to measure beside the working tree")
    parser.add_argument("--limit-seconds", type=float, default=900.0)
    parser.add_argument(
        "--before-limit-seconds", type=float, default=300.0, help="the time limit of --before"
    )
    parser.add_argument("--limit-gib", type=float, default=4.0)
    options = parser.parse_args()
    limit_bytes = int(options.limit_gib * 2**30)
    with open("/proc/loadavg") as loadavg:
        print(f"load average before: {loadavg.read().split()[:3]}", file=sys.stderr)
    print("| case | code | runs to phase tables | analysis | CPU | peak memory | rows |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="spans-volume-") as scratch:
        cases = []
        if options.names:
            cases.append(
                ("names", options.names, f"{options.names:,} distinct names (OTLP, 3 runs)")
            )
        readers = {"sdk": "span SDK", "otlp": "OTLP"}
        for count in options.spans:
            cases += [
                (reader, count, f"{count:,} spans, {readers[reader]} (1 run)")
                for reader in options.readers
            ]
        sources = [("this tree", ROOT)]
        if options.before:
            before = Path(scratch) / "before"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before),
                 options.before], check=True, capture_output=True,
            )  # fmt: skip
            sources.append((options.before, before))
        writers = {"names": write_otlp_names, "sdk": write_sdk_files, "otlp": write_otlp_spans}
        try:
            for case, count, label in cases:
                directory = Path(scratch) / f"{case}-{count}"
                print(f"{label}: writing the input...", file=sys.stderr)
                writers[case](directory, count)
                for code, source in sources:
                    print(f"{label}: {code}...", file=sys.stderr)
                    limit = (
                        options.limit_seconds if source == ROOT else options.before_limit_seconds
                    )
                    measured = run_case(source, case, directory, limit, limit_bytes)
                    print(_row(label, code, measured), flush=True)
                subprocess.run(["rm", "-rf", str(directory)], check=True)
        finally:
            if options.before:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force",
                     str(Path(scratch) / "before")], check=False, capture_output=True,
                )  # fmt: skip
    with open("/proc/loadavg") as loadavg:
        print(f"load average after: {loadavg.read().split()[:3]}", file=sys.stderr)


if __name__ == "__main__":
    main()
