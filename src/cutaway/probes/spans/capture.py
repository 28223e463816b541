"""The ``spans`` probe: named phases of every measured run, from the span SDK's record files
(C ``span.h`` through libcwspans.so, Python ``cutaway.spans``) and from OpenTelemetry.

Every measured run gets, in its environment, the span writer and a fresh directory for its
per-process files (in memory where possible, as the calls probe's), and ``CUTAWAY_OTLP_FILE``,
a path where the workload may write OTLP JSON traces (one object per line). With
``otlp_file`` set, the lines a collector's file exporter appended to that file during the run
are read too. After the run, the records and lines are read in chunks and nested as they
come (stream.py, otlp.stream_otlp), summed per phase (phases.PhaseAccumulator) and stored as
one table per source (``spans`` / ``sdk`` and ``otlp``), with the run's metrics
``phase:<path>`` (a phase by its place in the tree); what was wrong (unbalanced begin/end,
damaged records, malformed OTLP) is stored as the run's
problems, never raised."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cutaway.model import RunData
from cutaway.probes import phase_tables as phases
from cutaway.probes.base import Attachment, Launch, Overhead, ProbeError, process_cost
from cutaway.probes.interposer import records_directory, tsc_hz
from cutaway.probes.phase_tables import MAX_PROBLEMS, PROBLEMS_KIND, table_data
from cutaway.probes.span_model import DEEPEST_LEVEL
from cutaway.probes.spans.otlp import stream_otlp
from cutaway.probes.spans.records import (
    SpanFileError,
    Unbalanced,
    environment_for,
    library_path,
    span_files,
    stream_span_files,
)
from cutaway.probes.spans.settings import SpansSpec

OTLP_VARIABLE = "CUTAWAY_OTLP_FILE"
OTLP_NAME = "otlp.jsonl"
CALIBRATION_SPANS = 20_000  # per batch, 5 batches: a second or two before the first round
# Times spans through the Python SDK: the per-span cost of cutaway.spans, with and without a
# directory (recording vs the untimed branch). Prints nanoseconds per span.
_PYTHON_CALIBRATOR = """
import sys, time
from cutaway import spans
n = int(sys.argv[1])
best = None
for _ in range(5):
    start = time.perf_counter_ns()
    for _ in range(n):
        spans.begin("calibrate")
        spans.end("calibrate")
    elapsed = time.perf_counter_ns() - start
    best = elapsed if best is None else min(best, elapsed)
print(best / n)
"""


@dataclass(frozen=True)
class _Counted:
    table: phases.OperationTable
    left_out: int  # problems counted but not in words


class SpansProbe:
    """Records the phases of every measured run (see the module)."""

    name = "spans"
    own_runs = False

    def __init__(self, spec: SpansSpec) -> None:
        self.spec = spec
        self.directory = records_directory()
        self.tsc_hz: int | None = None
        self.otlp_offset = 0
        self.run_metrics_now: dict[str, float] = {}

    def check(self) -> str:
        try:
            library = library_path()
        except FileNotFoundError as error:
            raise ProbeError(str(error)) from None
        self.tsc_hz = tsc_hz()
        clock = f"TSC at {self.tsc_hz / 1e9:.6f} GHz" if self.tsc_hz else "CLOCK_MONOTONIC"
        otlp = f"; OTLP lines appended to {self.spec.otlp_file}" if self.spec.otlp_file else ""
        return (
            f"span SDK records through {library} ({clock}) and OTLP JSON in "
            f"${OTLP_VARIABLE}{otlp}; records in {self.directory}"
        )

    def overhead(self) -> Overhead:
        """Per span (a begin and an end) through the Python SDK, recording against not
        recording (best of 5 batches each); per process, a Python program making one span,
        with the probe's environment and without. The C SDK's cost is in docs/performance.md
        (bench/spans_c.c): a span there costs tens of nanoseconds, the Python one about a
        microsecond, so this is the upper bound of the two."""
        with tempfile.TemporaryDirectory(prefix="calibrate-", dir=self.directory) as directory:
            attached = {**os.environ, **environment_for(directory, tsc_hz=self.tsc_hz)}
            plain = {k: v for k, v in os.environ.items() if not k.startswith("CUTAWAY_SPANS")}
            try:
                per_span = _python_span_ns(attached) - _python_span_ns(plain)
            except (OSError, subprocess.SubprocessError, ValueError):
                return Overhead()
            argv = [sys.executable, "-c", _PYTHON_CALIBRATOR, "1"]
            per_process = process_cost(Launch(argv, attached), Launch(argv, plain), pairs=10)
        return Overhead(max(0.0, per_span) / 1e9, per_process)

    def check_program(self, program: str) -> str | None:
        return None

    def _clear(self) -> None:
        for path in self.directory.iterdir():
            if path.is_file():
                path.unlink()

    def before_run(self, environment: Mapping[str, str]) -> Attachment:
        self._clear()
        if self.spec.otlp_file is not None:
            try:
                self.otlp_offset = os.path.getsize(self.spec.otlp_file)
            except OSError:
                self.otlp_offset = 0  # not there yet: all its lines will be this run's
        env = environment_for(self.directory, tsc_hz=self.tsc_hz)
        env[OTLP_VARIABLE] = str(self.directory / OTLP_NAME)
        return Attachment(env=env)

    def after_run(self) -> list[RunData]:
        problems: list[str] = []
        data = []
        metrics: dict[str, float] = {}
        # One source at a time, each summed as its records are read: no span is kept.
        counted = self._sdk_table(problems)
        left_out = counted.left_out
        for key, table in (("sdk", counted.table), ("otlp", self._otlp_table(problems))):
            source_data, table_metrics = table_data(key, table, problems)
            if source_data is not None:
                data.append(source_data)
            for name, value in table_metrics.items():
                metrics.setdefault(name, value)  # one source per phase path: the SDK's first
        self._clear()
        self.run_metrics_now = metrics
        shown = problems[:MAX_PROBLEMS]
        if len(problems) + left_out > MAX_PROBLEMS:
            shown.append(f"and {len(problems) + left_out - MAX_PROBLEMS} more problems in this run")
        if shown:
            data.append(RunData(PROBLEMS_KIND, "problems", len(shown), json.dumps(shown).encode()))
        return data

    def _sdk_table(self, problems: list[str]) -> _Counted:
        """The span files' phase table, nested as their records are read; their problems,
        then each thread's unbalanced spans in words (by process, then thread, as nest()
        orders them), into `problems`, and how many of those were left out of it."""
        accumulator = phases.PhaseAccumulator()
        unbalanced: Unbalanced = {}
        for span_file in stream_span_files(span_files(self.directory), accumulator, unbalanced):
            if isinstance(span_file, SpanFileError):
                problems.append(str(span_file))
                continue
            problems += span_file.problems
            if span_file.dropped_records and span_file.nested_too_deep:
                problems.append(
                    f"process {span_file.pid}: {span_file.dropped_records} span events got no "
                    f"record: spans nested deeper than {DEEPEST_LEVEL + 1} levels in a thread "
                    "are dropped, with their ends"
                )
            elif span_file.dropped_records:
                problems.append(
                    f"process {span_file.pid}: {span_file.dropped_records} span events got no "
                    "record (a full disk, or an event from a signal handler during another)"
                )
        left_out = 0
        for thread in sorted(unbalanced):
            problems += unbalanced[thread].messages
            left_out += unbalanced[thread].count - len(unbalanced[thread].messages)
        return _Counted(accumulator.table(), left_out)

    def _otlp_table(self, problems: list[str]) -> phases.OperationTable:
        """The OTLP files' phase table, nested as their lines are read (otlp.stream_otlp)."""
        accumulator = phases.PhaseAccumulator()
        # The run's own file is named as the workload knows it: its directory is temporary.
        sources = [(self.directory / OTLP_NAME, 0, f"${OTLP_VARIABLE}")]
        if self.spec.otlp_file is not None:
            path = Path(self.spec.otlp_file)
            sources.append((path, self.otlp_offset, str(path)))
        for path, offset, name in sources:
            if not path.is_file():
                continue
            try:
                read = stream_otlp(path, accumulator, start_offset=offset, source=name)
            except OSError as error:
                problems.append(f"{name}: cannot read: {error.strerror}")
                continue
            problems += read.problems
        return accumulator.table()

    def run_metrics(self) -> Mapping[str, float]:
        return self.run_metrics_now

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _python_span_ns(environment: Mapping[str, str]) -> float:
    result = subprocess.run(
        [sys.executable, "-c", _PYTHON_CALIBRATOR, str(CALIBRATION_SPANS)],
        env=dict(environment),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return float(result.stdout)
