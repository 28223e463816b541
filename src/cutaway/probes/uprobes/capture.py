"""The ``uprobes`` probe: phases of unmodified binaries, timed from a function's entry to its
return by kernel uprobes, through bpftrace, as spans nested per thread by the call nesting.

One bpftrace holds every uprobe for the whole experiment (cutaway.probes.uprobes.tracer).
Around each measured run the probe notes the run's start and end on CLOCK_MONOTONIC; after
it, it waits until the tracer has printed everything up to the end (a marker), and, since a
server may still be finishing the operation a client already has its answer from, until every
operation that started during the run has returned (at most :data:`FINISH_SECONDS`). The
operations that started during the run are its spans (cutaway.probes.span_model), stored as
one blob (cutaway.probes.uprobes.records), with its calls per probed function
(cutaway.probes.uprobes.counts) and as the phase table every span source stores
(cutaway.probes.phase_tables: the dissection view and the ``phase:<path>`` metrics read
it). What cannot be nested (a return without its entry, an operation that never returned,
events bpftrace lost) is stored as the run's span problems, in words."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence

from cutaway.model import RunData
from cutaway.probes.base import Attachment, Launch, Overhead, ProbeError, process_cost
from cutaway.probes.phase_tables import MAX_PROBLEMS, PROBLEMS_KIND, phase_data
from cutaway.probes.span_model import NO_OPERATION, Edge, Span, SpanEvent, nest
from cutaway.probes.uprobes import counts, records
from cutaway.probes.uprobes.operations import Operation, Operations
from cutaway.probes.uprobes.settings import UprobeTarget
from cutaway.probes.uprobes.targets import (
    ResolvedTarget,
    check_names,
    check_system,
    merge_same_files,
    resolve_target,
)
from cutaway.probes.uprobes.tracer import TARGET_FUNCTION, Tracer, calibrator_path
from cutaway.processes import owned_directory

# The dissection's source of the operations that were the first of their kind after their
# process started (a server's first search): the split by position.
FIRST_SOURCE = "uprobes, first after start"
FINISH_SECONDS = 5.0  # how long an operation begun during a run may take to return after it
CALIBRATION_CALLS = 2000


class UprobesProbe:
    """Records the selected functions of unmodified binaries as spans, in every timed run."""

    name = "uprobes"
    own_runs = False

    def __init__(self, targets: Sequence[UprobeTarget]) -> None:
        check_names(targets)
        self.targets = tuple(targets)
        self.resolved: tuple[ResolvedTarget, ...] = ()
        self.bpftrace: str | None = None
        self.tracer: Tracer | None = None
        self.operations = Operations()
        self.run_start_ns = 0
        self.measured: dict[str, float] = {}

    def check(self) -> str:
        self.bpftrace = check_system()
        self.resolved = merge_same_files([resolve_target(target) for target in self.targets])
        self.tracer = Tracer(self.bpftrace, self.resolved)
        version = _version(self.bpftrace)
        where = "; ".join(f"{t.path}: {', '.join(t.functions)}" for t in self.resolved)
        return f"uprobes by {version} on {where}"

    def overhead(self) -> Overhead:
        """Per span: cw_uprobe_calibrate calling an empty function under a uprobe and a
        uretprobe printed like a measured function's, against a copy of itself (another inode,
        so not probed). Per process: starting and ending the probed calibrator (whose mapping
        gets its breakpoints put in) against the copy, in alternating pairs."""
        assert self.bpftrace is not None
        calibrator = calibrator_path()
        directory = owned_directory("cutaway-uprobes-cost-")
        try:
            plain = directory / "cw_uprobe_calibrate"
            shutil.copy2(calibrator, plain)
            target = ResolvedTarget(calibrator, calibrator, (TARGET_FUNCTION,))
            tracer = Tracer(self.bpftrace, [target])
            try:
                probed_ns = _per_call_ns(calibrator)
                plain_ns = _per_call_ns(str(plain))
                environment: dict[str, str] = {}
                per_process = process_cost(
                    Launch([calibrator, "0"], environment), Launch([str(plain), "0"], environment)
                )
            finally:
                tracer.stop()
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        return Overhead(max(0.0, (probed_ns - plain_ns) / 1e9), per_process)

    def check_program(self, program: str) -> str | None:
        return None

    def before_run(self, environment: Mapping[str, str]) -> Attachment:
        self.run_start_ns = time.monotonic_ns()
        return Attachment()

    def after_run(self) -> list[RunData]:
        end_ns = time.monotonic_ns()
        tracer = self.tracer
        assert tracer is not None
        problems: list[str] = []
        finished: list[Operation] = []
        lost = 0
        deadline = time.monotonic() + FINISH_SECONDS
        while True:
            caught_up = tracer.mark() and tracer.mark()
            events, lost_now = tracer.take()
            lost += lost_now
            finished += self.operations.add(events)
            if not caught_up or not self.operations.open_since(self.run_start_ns):
                break
            if time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        if not tracer.alive():
            problems.append(f"bpftrace stopped during the run: {tracer.error_text()}")
        elif not caught_up:
            problems.append("bpftrace did not catch up with the run: its last events may be lost")
        finished += self.operations.close_since(self.run_start_ns)
        ours = [op for op in finished if self.run_start_ns <= op.start_ns <= end_ns]
        spans, unbalanced = self.spans(ours)
        problems += unbalanced
        if lost:
            problems.append(f"bpftrace lost {lost} events (its ring buffer was full)")
        data = [records_data(spans), self.counts_data(ours)]
        # The dissection reads phase tables, whatever their source (cutaway.probes.spans).
        table, self.measured = phase_data(records.KIND, spans)
        if table is not None:
            data.append(table)
        # The split by position: the operations that were the first of their kind after their
        # process started, as a source of their own beside all of them.
        firsts = [op for op in ours if op.first]
        if firsts:
            first_table, _ = phase_data(FIRST_SOURCE, self.spans(firsts)[0])
            if first_table is not None:
                data.append(first_table)
        if problems:
            shown = problems[:MAX_PROBLEMS]
            if len(problems) > MAX_PROBLEMS:
                shown.append(f"and {len(problems) - MAX_PROBLEMS} more problems in this run")
            text = json.dumps([f"uprobes: {problem}" for problem in shown]).encode()
            data.append(RunData(PROBLEMS_KIND, records.KIND, len(shown), text))
        if lost:
            data.append(RunData(records.KIND, records.LOST_KEY, lost, b""))
        return data

    def counts_data(self, operations: Sequence[Operation]) -> RunData:
        """Calls per probed function (binary and function) in the run's operations."""
        tracer = self.tracer
        assert tracer is not None
        counted = counts.count_calls(operations, tracer.functions, tracer.binaries)
        return RunData(counts.KIND, counts.KEY, len(counted.calls), counts.encode(counted))

    def spans(self, operations: Sequence[Operation]) -> tuple[list[Span], list[str]]:
        """The operations' events nested into spans, with each operation's number since the
        tracer started; and what could not be nested, in words."""
        functions = self.tracer.functions if self.tracer else ()
        events = [
            SpanEvent(
                Edge.BEGIN if event.begin else Edge.END,
                functions[event.function],
                event.pid,
                event.tid,
                event.time_ns,
            )
            for op in operations
            for event in op.events
        ]
        nesting = nest(events)
        # nest() numbers the operations it was given from 0 per process; the tracer has seen
        # the process's earlier ones.
        first: dict[int, int] = defaultdict(lambda: 0)
        numbers: dict[int, list[int]] = defaultdict(list)
        for op in operations:
            if op.number is not None and op.number >= 0:
                numbers[op.pid].append(op.number)
        for pid, seen in numbers.items():
            first[pid] = min(seen)
        spans = [
            span
            if span.operation == NO_OPERATION
            else span.in_operation(first[span.pid] + span.operation)
            for span in nesting.spans
        ]
        return spans, [item.message for item in nesting.unbalanced]

    def run_metrics(self) -> Mapping[str, float]:
        """``phase:<path>`` of the run that just ended (cutaway.probes.phase_tables)."""
        return self.measured

    def close(self) -> None:
        if self.tracer is not None:
            self.tracer.stop()
            self.tracer = None


def records_data(spans: Sequence[Span]) -> RunData:
    return RunData(records.KIND, records.SPANS_KEY, len(spans), records.encode(spans))


def _per_call_ns(calibrator: str) -> float:
    result = subprocess.run(
        [calibrator, str(CALIBRATION_CALLS), "3"], capture_output=True, text=True, check=False
    )
    try:
        return float(result.stdout)
    except ValueError:
        raise ProbeError(f"uprobes: {calibrator} failed: {result.stderr.strip()}") from None


def _version(bpftrace: str) -> str:
    result = subprocess.run([bpftrace, "--version"], capture_output=True, text=True, check=False)
    return result.stdout.strip() or "bpftrace"
