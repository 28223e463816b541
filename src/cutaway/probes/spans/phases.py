"""One run's spans -> its operations x phases: how long each operation spent in each phase.

A phase is a path of span names from an outermost span down (``("search",)``,
``("search", "entry retrieval", "str2entry")``); an operation is one outermost span of a
process (:attr:`Span.operation`). An operation's time in a phase is the sum of the durations of
the spans on that path within it (a phase entered several times per operation, like a filter
test per candidate, adds up), and a phase absent from an operation counts 0 there, so that
phases add up. Under every phase that has sub-phases, an ``unaccounted`` phase holds the rest:
the phase's time minus its sub-phases' (negative only where sub-phases overlap, e.g. spans of
several services running in parallel under one OpenTelemetry parent).

A phase is known by its place in the tree, everywhere (metrics, verdicts, reports): its key is
its path, names joined by ``/`` (``do_search/mdb_search/unaccounted``; :func:`phase_key`), so a
``parse`` under ``request`` and one under ``reply`` are two phases. Each operation also counts
its spans per phase (``calls``: a filter test per candidate, 10,011 in one search).

A span nested in a span of the same name (recursion) is not a phase of its own: its time is
already in the outer one. This module is pure: the spans probe calls it after each run and
stores the table; the analysis reads the tables back (cutaway.probes.spans.analysis)."""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cutaway.model import PHASE_METRIC_PREFIX as METRIC_PREFIX
from cutaway.model import UNACCOUNTED, phase_key
from cutaway.probes.spans.model import NO_OPERATION, Span

BLOB_VERSION = 2  # 2: the spans per operation and phase after the durations; 1: durations only
READABLE_VERSIONS = (1, 2)
_INT64 = struct.Struct("<q")


@dataclass(frozen=True, order=True)
class Phase:
    """A row of the dissection: the names from the outermost span down; ``unaccounted``: the
    rest of the phase ``path[:-1]`` beyond its sub-phases (then ``path[-1]`` is UNACCOUNTED,
    which a span may also be called: the flag tells them apart)."""

    path: tuple[str, ...]
    unaccounted: bool = False

    @property
    def name(self) -> str:
        return self.path[-1]

    @property
    def parent(self) -> str | None:
        return self.path[-2] if len(self.path) > 1 else None

    @property
    def root(self) -> str:
        return self.path[0]

    @property
    def key(self) -> str:
        return phase_key(self.path, unaccounted=self.unaccounted)

    @property
    def metric(self) -> str:
        """The run metric comparing this phase: ``phase:`` and its key."""
        return METRIC_PREFIX + self.key


@dataclass(frozen=True)
class OperationTable:
    """One run's operations: per operation its process (0, 1, ... in pid order), its index in
    that process (0: the first operation after the process started), its time in each phase,
    in nanoseconds (``durations_ns[i][j]``: operation i, phase j), and its spans in each phase
    (``calls[i][j]``; 0 for an unaccounted phase; None in a table stored before counts)."""

    phases: tuple[Phase, ...]
    process: tuple[int, ...]
    operation: tuple[int, ...]
    durations_ns: tuple[tuple[int, ...], ...]
    calls: tuple[tuple[int, ...], ...] | None = None

    def __len__(self) -> int:
        return len(self.operation)


def span_paths(spans: Sequence[Span]) -> list[tuple[str, ...] | None]:
    """The path of every span, from the spans of each thread in the order nest() gives them
    (a parent before its children; a source of its own must keep that order). None for a span
    nested in one of the same name (recursion)."""
    stacks: dict[tuple[int, int], list[str]] = defaultdict(list)
    paths: list[tuple[str, ...] | None] = []
    for span in spans:
        stack = stacks[(span.pid, span.tid)]
        del stack[span.depth :]
        # An ancestor dropped as unbalanced (its end never came): named after the parent.
        stack.extend([span.parent or ""] * (span.depth - len(stack)))
        recursive = span.name in stack
        stack.append(span.name)
        paths.append(None if recursive else tuple(stack))
    return paths


def operation_table(spans: Sequence[Span]) -> OperationTable:
    """Per operation, the time in each phase (see the module), phases in first-seen order with
    each phase's ``unaccounted`` after its sub-phases."""
    paths = span_paths(spans)
    pids = sorted({span.pid for span in spans})
    process_of = {pid: index for index, pid in enumerate(pids)}
    totals: dict[tuple[int, int], dict[tuple[str, ...], int]] = {}
    counted: dict[tuple[int, int], dict[tuple[str, ...], int]] = {}
    seen: dict[tuple[str, ...], None] = {}
    for span, path in zip(spans, paths, strict=True):
        if path is None or span.operation == NO_OPERATION:
            continue
        key = (process_of[span.pid], span.operation)
        per_path = totals.setdefault(key, {})
        per_path[path] = per_path.get(path, 0) + span.duration_ns
        per_path_calls = counted.setdefault(key, {})
        per_path_calls[path] = per_path_calls.get(path, 0) + 1
        seen.setdefault(path, None)
    phases = _with_unaccounted(list(seen))
    rows = []
    call_rows = []
    for key in sorted(totals):
        per_path = totals[key]
        row = []
        for phase in phases:
            if phase.unaccounted:
                parent = phase.path[:-1]
                children = [p for p in per_path if len(p) == len(parent) + 1 and p[:-1] == parent]
                value = per_path.get(parent, 0) - sum(per_path[p] for p in children)
            else:
                value = per_path.get(phase.path, 0)
            row.append(value)
        rows.append(tuple(row))
        calls_of = counted[key]
        call_rows.append(tuple(0 if p.unaccounted else calls_of.get(p.path, 0) for p in phases))
    keys = sorted(totals)
    return OperationTable(
        phases=tuple(phases),
        process=tuple(k[0] for k in keys),
        operation=tuple(k[1] for k in keys),
        durations_ns=tuple(rows),
        calls=tuple(call_rows),
    )


def _with_unaccounted(paths: list[tuple[str, ...]]) -> list[Phase]:
    """Paths in tree order (each parent before its children, siblings in first-seen order),
    with an unaccounted phase after the children of every path that has some."""
    children: dict[tuple[str, ...], list[tuple[str, ...]]] = defaultdict(list)
    for path in paths:
        children[path[:-1]].append(path)
    ordered: list[Phase] = []

    def visit(path: tuple[str, ...]) -> None:
        ordered.append(Phase(path))
        for child in children.get(path, []):
            visit(child)
        if children.get(path):
            ordered.append(Phase((*path, UNACCOUNTED), unaccounted=True))

    for root in children.get((), []):
        visit(root)
    return ordered


def root_of(table: OperationTable, index: int) -> str | None:
    """The outermost span's name of operation `index` (the root phase it spent time in)."""
    for phase, value in zip(table.phases, table.durations_ns[index], strict=True):
        if len(phase.path) == 1 and value:
            return phase.root
    roots = [p.root for p in table.phases if len(p.path) == 1]
    return roots[0] if len(roots) == 1 else None


def root_operations(table: OperationTable, root: str) -> list[int]:
    """The operations of the outermost span `root`: those that spent time in it, or every
    operation when it is the table's only outermost span (0 ns still counts)."""
    roots = [i for i, phase in enumerate(table.phases) if len(phase.path) == 1]
    column = column_of(table).get(Phase((root,)))
    if column is None:
        return []
    if roots == [column]:
        return list(range(len(table)))
    return [i for i, row in enumerate(table.durations_ns) if row[column] > 0]


def phase_metrics(table: OperationTable) -> dict[str, float]:
    """The run's metrics ``phase:<key>`` (:attr:`Phase.metric`), one per phase, unaccounted
    rests included: the mean time per operation of the phase's outermost span (the
    dissection's mean, see :func:`root_operations`), in seconds; 0 where an operation did not
    enter the phase."""
    metrics: dict[str, float] = {}
    operations_of: dict[str, list[int]] = {}
    for column, phase in enumerate(table.phases):
        mine = operations_of.setdefault(phase.root, root_operations(table, phase.root))
        if mine:
            total = sum(table.durations_ns[i][column] for i in mine)
            metrics[phase.metric] = total / len(mine) / 1e9
    return metrics


def encode(table: OperationTable) -> bytes:
    """A table for the store: a JSON line (version, phases, counts), then per operation its
    process, its index, its durations and its spans per phase, as little-endian int64."""
    header = {
        "version": BLOB_VERSION,
        "phases": [{"path": list(p.path), "unaccounted": p.unaccounted} for p in table.phases],
        "operations": len(table),
    }
    calls = table.calls or tuple((0,) * len(table.phases) for _ in table.durations_ns)
    values = [
        value
        for process, operation, row, counts in zip(
            table.process, table.operation, table.durations_ns, calls, strict=True
        )
        for value in (process, operation, *row, *counts)
    ]
    body = struct.pack(f"<{len(values)}q", *values)
    return json.dumps(header, ensure_ascii=True).encode() + b"\n" + body


class PhaseBlobError(ValueError):
    """A stored phase table this cutaway cannot read (damaged, or from a newer version)."""


def decode(data: bytes) -> OperationTable:
    line, separator, body = data.partition(b"\n")
    try:
        header = json.loads(line)
        version = header["version"]
        phases = tuple(Phase(tuple(p["path"]), bool(p["unaccounted"])) for p in header["phases"])
        count = int(header["operations"])
    except (ValueError, KeyError, TypeError) as error:
        raise PhaseBlobError(f"not a phase table: {error}") from None
    if version not in READABLE_VERSIONS:
        raise PhaseBlobError(f"phase table version {version!r}, this cutaway reads {BLOB_VERSION}")
    counted = version >= 2
    width = 2 + len(phases) * (2 if counted else 1)
    if not separator or len(body) != count * width * _INT64.size:
        raise PhaseBlobError(f"{len(body)} bytes of values for {count} operations")
    values = struct.unpack(f"<{count * width}q", body)
    rows = [values[i * width : (i + 1) * width] for i in range(count)]
    split = 2 + len(phases)
    return OperationTable(
        phases=phases,
        process=tuple(row[0] for row in rows),
        operation=tuple(row[1] for row in rows),
        durations_ns=tuple(tuple(row[2:split]) for row in rows),
        calls=tuple(tuple(row[split:]) for row in rows) if counted else None,
    )


def merged_phases(tables: Iterable[OperationTable]) -> list[Phase]:
    """Every phase of several runs' tables, in tree order (as one run's)."""
    seen: dict[tuple[str, ...], None] = {}
    for table in tables:
        for phase in table.phases:
            if not phase.unaccounted:
                seen.setdefault(phase.path, None)
    return _with_unaccounted(list(seen))


def column_of(table: OperationTable) -> Mapping[Phase, int]:
    return {phase: index for index, phase in enumerate(table.phases)}
