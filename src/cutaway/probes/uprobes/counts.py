"""Calls per probed function: how often each function of each binary ran in a run's operations,
and for how long per call, stored as RunData(kind ``uprobe-calls``) beside the spans.

The dissection counts a phase's spans at one place in the tree, and leaves out a call nested in
a call of the same function (recursion); this counts every call of a (binary, function) in the
operations of each outermost function, wherever it was, recursion included: the figure a
bpftrace one-liner counting entries would give (10,011 ``test_filter`` calls in one search).
Operations that never returned are left out, as the dissection leaves them out.

Version 1: a JSON object ``{"version": 1, "operations": {ROOT: N}, "functions": [[ROOT,
BINARY, FUNCTION, CALLS, NANOSECONDS], ...]}``: per outermost function, its operations in the
run, and per (outermost function, binary, function) the calls and their summed time (a call
nested in another of the same function counts its own time, so times of a recursive function
overlap)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from cutaway.probes.uprobes.operations import Operation

KIND = "uprobe-calls"
KEY = "functions"
VERSION = 1


@dataclass(frozen=True)
class RunCounts:
    """One run's calls: operations per outermost function; per (outermost function, binary,
    function) the calls and their summed nanoseconds."""

    operations: dict[str, int]
    calls: dict[tuple[str, str, str], tuple[int, int]]


def count_calls(
    operations: Sequence[Operation], functions: Sequence[str], binaries: Sequence[str]
) -> RunCounts:
    """Count the operations' calls; ``functions[i]`` and ``binaries[i]`` name the tracer's
    function ``i``. An operation whose first event is not an entry (its entry came before the
    tracer) or that never returned (unnumbered) is not counted."""
    per_root: dict[str, int] = defaultdict(int)
    calls: dict[tuple[str, str, str], list[int]] = {}  # in the order first called
    for operation in operations:
        if operation.number is None or not operation.events or not operation.events[0].begin:
            continue
        root = functions[operation.events[0].function]
        per_root[root] += 1
        open_calls: list[tuple[int, int]] = []  # (function index, entry time)
        for event in operation.events:
            key = (root, binaries[event.function], functions[event.function])
            if event.begin:
                open_calls.append((event.function, event.time_ns))
                calls.setdefault(key, [0, 0])
                continue
            match = _innermost(open_calls, event.function)
            if match is None:
                continue  # a return without its entry: nest() reports it with the spans
            start_ns = open_calls[match][1]
            del open_calls[match:]
            calls[key][0] += 1
            calls[key][1] += event.time_ns - start_ns
    return RunCounts(dict(per_root), {key: (c, ns) for key, (c, ns) in calls.items() if c})


def _innermost(open_calls: Sequence[tuple[int, int]], function: int) -> int | None:
    """The position of the innermost open call of `function`, None when none is open."""
    for position in range(len(open_calls) - 1, -1, -1):
        if open_calls[position][0] == function:
            return position
    return None


def encode(counts: RunCounts) -> bytes:
    document = {
        "version": VERSION,
        "operations": counts.operations,
        "functions": [[*key, c, ns] for key, (c, ns) in counts.calls.items()],
    }
    return json.dumps(document, ensure_ascii=True).encode()


class DamagedCounts(ValueError):
    """Stored counts this cutaway cannot read."""


def decode(data: bytes) -> RunCounts:
    try:
        document = json.loads(data)
        if document["version"] != VERSION:
            raise DamagedCounts(
                f"uprobe call counts version {document['version']!r} (this cutaway reads {VERSION})"
            )
        operations = {str(k): int(v) for k, v in document["operations"].items()}
        calls = {
            (str(root), str(binary), str(function)): (int(c), int(ns))
            for root, binary, function, c, ns in document["functions"]
        }
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        if isinstance(error, DamagedCounts):
            raise
        raise DamagedCounts(f"damaged uprobe call counts: {error}") from None
    return RunCounts(operations, calls)
