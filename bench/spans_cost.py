"""What one span costs: cutaway's span SDK in C (native/include/cutaway/span.h) and in Python
(cutaway.spans), each beside the nearest alternative a user would pick.

C (bench/spans_cost.c, built here with gcc -O2): every mode runs N iterations in 7 batches and
prints the fastest batch's nanoseconds per iteration; a span is a begin and an end around a
compiler barrier. Modes:
- plain: the loop alone;
- span.h, off: not under cutaway (the one branch per begin and per end);
- span.h, on: under the spans probe's environment, records in /dev/shm, on the TSC as the probe
  sets it up where the kernel trusts the TSC, and on CLOCK_MONOTONIC;
- by hand: two clock_gettime(CLOCK_MONOTONIC) and the difference stored in a ring, as seed
  001's author instrumented slapd;
- uftrace: `uftrace record -F bench_function` on an empty function of a -pg build, against the
  same build without uftrace (the function-tracing alternative: no source change).
Python (python -c loops, best of 7 batches): a `with span(...)` block of cutaway.spans off and
on (under the probe's environment, which names the C writer: cutaway._cwspans hands each span
to it; and with the directory alone: cutaway.spans's own writer, in Python), against
opentelemetry-sdk's `tracer.start_as_current_span` with no processor (a recording span that
goes nowhere: the SDK's floor) and with a BatchSpanProcessor whose exporter drops everything
(what a traced service pays before the network).

The machine's speed drifts (a shared host), so each mode is compared with the plain mode of its
own round (C: the plain loop; Python: an empty `with nullcontext()` block) and the table gives
the median and the range of the differences over the rounds.

Usage: python bench/spans_cost.py [--spans N] [--repeats K]   (prints Markdown tables)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from cutaway.probes.interposer import records_directory, tsc_hz
from cutaway.probes.spans.records import DIRECTORY_VARIABLE, environment_for

ROOT = Path(__file__).resolve().parents[1]

PYTHON_LOOP = """
import sys, time
from contextlib import nullcontext
mode, n = sys.argv[1], int(sys.argv[2])
if mode.startswith("otel"):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    class Drop(SpanExporter):
        def export(self, spans): return SpanExportResult.SUCCESS
    provider = TracerProvider()
    if mode == "otel-batch":
        provider.add_span_processor(BatchSpanProcessor(Drop()))
    tracer = provider.get_tracer("bench")
    make = lambda: tracer.start_as_current_span("bench")
elif mode == "plain":
    make = nullcontext
else:
    from cutaway import spans
    make = lambda: spans.span("bench")
best = None
for _ in range(7):
    start = time.perf_counter_ns()
    for _ in range(n):
        with make():
            pass
    per = (time.perf_counter_ns() - start) / n
    best = per if best is None else min(best, per)
print(best)
"""


def nanoseconds(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Run in `cwd`: a -pg build leaves gmon.out where it runs."""
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=True)
    return float(result.stdout.strip().splitlines()[-1])


def build(directory: Path) -> tuple[str, str]:
    source, include = ROOT / "bench" / "spans_cost.c", ROOT / "native" / "include"
    plain, profiled = directory / "spans_cost", directory / "spans_cost_pg"
    for output, flags in ((plain, []), (profiled, ["-pg"])):
        subprocess.run(
            ["gcc", "-O2", "-Wall", "-Wextra", "-Werror", *flags, f"-I{include}", "-o",
             str(output), str(source)],
            check=True,
        )  # fmt: skip
    return str(plain), str(profiled)


def c_modes(
    binary: str, profiled: str, spans: int, records: Path
) -> dict[str, tuple[list[str], dict[str, str]]]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CUTAWAY_SPANS")}
    rate = tsc_hz()
    count = str(spans)
    modes = {
        "plain (the loop alone)": ([binary, "plain", count], base),
        "span.h, off (not under cutaway)": ([binary, "span", count], base),
        "span.h, on, CLOCK_MONOTONIC": (
            [binary, "span", count], {**base, **environment_for(records)}
        ),
        "by hand: two clock_gettime and a store": ([binary, "clock", count], base),
        "an empty function, -pg build": ([profiled, "function", count], base),
    }  # fmt: skip
    if rate:
        modes["**span.h, on** (TSC, as the probe sets it up)"] = (
            [binary, "span", count], {**base, **environment_for(records, tsc_hz=rate)}
        )  # fmt: skip
    if shutil.which("uftrace"):
        data = str(records / "uftrace.data")
        modes["uftrace record -F on that function"] = (
            ["uftrace", "record", "-d", data, "--no-libcall", "-F", "bench_function",
             profiled, "function", count],
            base,
        )  # fmt: skip
    return modes


def python_modes(spans: int, records: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CUTAWAY_SPANS")}
    loop = [sys.executable, "-c", PYTHON_LOOP]
    count = str(spans)
    modes = {
        "plain (an empty `with nullcontext()`)": ([*loop, "plain", count], base),
        "cutaway.spans, off": ([*loop, "cutaway", count], base),
        "**cutaway.spans, on**": ([*loop, "cutaway", count], {**base, **environment_for(records)}),
        # Without the C writer in the environment: cutaway.spans's own writer, in Python.
        "cutaway.spans, on, its Python writer": (
            [*loop, "cutaway", count], {**base, DIRECTORY_VARIABLE: str(records)}
        ),
    }  # fmt: skip
    try:
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        print("opentelemetry-sdk is not installed: its rows are left out", file=sys.stderr)
        return modes
    modes["opentelemetry-sdk span, no processor"] = ([*loop, "otel", count], base)
    modes["opentelemetry-sdk span, BatchSpanProcessor"] = ([*loop, "otel-batch", count], base)
    return modes


def measure(
    modes: dict[str, tuple[list[str], dict[str, str]]], repeats: int, records: Path
) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {name: [] for name in modes}
    for _ in range(repeats):
        for name, (argv, env) in modes.items():
            results[name].append(nanoseconds(argv, env, records))
            for leftover in records.iterdir():  # a run's records: not the next one's memory
                shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
    return results


def table(results: dict[str, list[float]], reference: str, title: str) -> None:
    print(f"\n{title}\n")
    print("| mode | ns per span, median | added per span, median | added, range |")
    print("|---|---:|---:|---:|")
    plain = results[reference]
    for name, values in results.items():
        if name == reference:
            print(f"| {name} | {statistics.median(values):.2f} | - | - |")
            continue
        base = plain if "uftrace" not in name else results["an empty function, -pg build"]
        added = [value - p for value, p in zip(values, base, strict=True)]
        print(
            f"| {name} | {statistics.median(values):.2f} | {statistics.median(added):+.2f} ns "
            f"| {min(added):+.2f} to {max(added):+.2f} ns |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=200_000, help="spans per batch (C)")
    parser.add_argument("--python-spans", type=int, default=50_000, help="spans per batch")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    records = records_directory()
    try:
        with tempfile.TemporaryDirectory() as directory:
            binary, profiled = build(Path(directory))
            c = measure(c_modes(binary, profiled, args.spans, records), args.repeats, records)
        table(c, "plain (the loop alone)", f"C, {args.repeats} rounds")
        python = measure(python_modes(args.python_spans, records), args.repeats, records)
        table(python, "plain (an empty `with nullcontext()`)", f"Python, {args.repeats} rounds")
    finally:
        shutil.rmtree(records, ignore_errors=True)


if __name__ == "__main__":
    main()
