"""What the spans probe costs to analyse as spans pile up: time and peak memory of one run's
spans turned into its phase table (what the probe does after each run) and the dissection
computed from the stored tables (what `cutaway report` does), for

- many distinct names: N OpenTelemetry traces whose outermost span is named after its URL
  (`GET /item/<i>`, each with one `db query` child), parsed from OTLP JSON lines, 3 runs;
- many spans: one run of N spans, operations of 10 spans (a `request` with `parse`, `query`
  and its 3 `fetch`, `render`, ...), fed to the phase table as the spans come.

Each case runs in a child Python process: wall seconds of the two steps, the child's CPU
seconds (user + system: steadier than wall on a shared machine), its ru_maxrss (the peak
memory) and the dissection's rows. It runs under a time
limit and an address-space limit (a case past either is shown as stopped). With --before
GIT_REF the same cases run against that commit's Python sources too (checked out in a
temporary git worktree, put first on PYTHONPATH), side by side.

Usage: python bench/spans_volume.py [--names N] [--spans N] [--before c8bd54b]
       [--limit-seconds S] [--before-limit-seconds S] [--limit-gib G]   (a Markdown table)
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
import json, resource, sys, time
from cutaway.probes.spans import phases
from cutaway.probes.spans.analysis import phase_stats
from cutaway.probes.spans.capture import phase_data
from cutaway.probes.spans.model import Span
from cutaway.probes.spans.otlp import parse_otlp

case, count = sys.argv[1], int(sys.argv[2])
streaming = hasattr(phases, "PhaseAccumulator")  # the code after the change takes an iterable


def otlp_lines(traces):
    for i in range(traces):
        trace, start = f"{i:032x}", 1_000_000 * i
        spans = [
            {"traceId": trace, "spanId": "a" * 16, "name": f"GET /item/{i}",
             "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 5000 + i % 977)},
            {"traceId": trace, "spanId": "b" * 16, "parentSpanId": "a" * 16, "name": "db query",
             "startTimeUnixNano": str(start + 100), "endTimeUnixNano": str(start + 900)},
        ]
        yield json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


SHAPE = [("request", 0, None), ("parse", 1, "request"), ("query", 1, "request"),
         ("fetch", 2, "query"), ("fetch", 2, "query"), ("fetch", 2, "query"),
         ("render", 1, "request"), ("template", 2, "render"), ("escape", 2, "render"),
         ("send", 1, "request")]


def many_spans(total):
    for operation in range(total // len(SHAPE)):
        start = operation * 100_000
        for offset, (name, depth, parent) in enumerate(SHAPE):
            begin = start + offset * 1000
            end = start + 90_000 - offset if depth == 0 else begin + 500 + operation % 311
            yield Span(name, 1, 1, begin, end, depth, parent, operation)


started = time.perf_counter()
tables = []
runs = 3 if case == "names" else 1
for _ in range(runs):
    if case == "names":
        spans = parse_otlp(otlp_lines(count), "bench.jsonl").spans
    else:
        spans = many_spans(count) if streaming else list(many_spans(count))
    data, metrics = phase_data("otlp", spans)
    del spans
    tables.append(phases.decode(data.data))
captured = time.perf_counter()
stats = phase_stats({("a", None, "otlp"): tables}, ["a"], 0.95)
finished = time.perf_counter()
print(json.dumps({
    "capture_seconds": captured - started,
    "analysis_seconds": finished - captured,
    "phases": len(stats),
    "peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    "cpu_seconds": sum(resource.getrusage(resource.RUSAGE_SELF)[:2]),
}))
"""


def run_case(
    source: Path, case: str, count: int, limit_seconds: float, limit_bytes: int
) -> dict[str, object]:
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = {**os.environ, "PYTHONPATH": str(source / "src")}
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHILD, case, str(count)],
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
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--before", help="a git ref to measure beside the working tree")
    parser.add_argument("--limit-seconds", type=float, default=900.0)
    parser.add_argument(
        "--before-limit-seconds", type=float, default=150.0, help="the time limit of --before"
    )
    parser.add_argument("--limit-gib", type=float, default=8.0)
    options = parser.parse_args()
    limit_bytes = int(options.limit_gib * 2**30)
    cases = [("names", options.names, f"{options.names:,} distinct names (OTLP, 3 runs)"),
             ("spans", options.spans, f"{options.spans:,} spans (1 run)")]  # fmt: skip
    with open("/proc/loadavg") as loadavg:
        print(f"load average before: {loadavg.read().split()[:3]}", file=sys.stderr)
    print("| case | code | runs to phase tables | analysis | CPU | peak memory | rows |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="spans-volume-") as scratch:
        sources = [("this tree", ROOT)]
        if options.before:
            before = Path(scratch) / "before"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before),
                 options.before], check=True, capture_output=True,
            )  # fmt: skip
            sources.append((options.before, before))
        try:
            for case, count, label in cases:
                for code, source in sources:
                    print(f"{label}: {code}...", file=sys.stderr)
                    limit = (
                        options.limit_seconds if source == ROOT else options.before_limit_seconds
                    )
                    measured = run_case(source, case, count, limit, limit_bytes)
                    print(_row(label, code, measured), flush=True)
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
