"""The calls probe's results (per-call latency by function and position) and the uprobes
probe's call counts.

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

from dataclasses import dataclass

# Where a call stands in its process, as seed 000 split its getent lookups: the first call of a
# function pays for loading and connecting, the second shows the steady cost.
CALL_POSITIONS = ("1", "2", "later")


@dataclass(frozen=True)
class CallSummary:
    """Per-call latency of one function in one variant, over every process of every counted
    run: the calls at one position (``"1"``, ``"2"``, ``"later"``) or all of them (``"all"``).
    Durations in seconds."""

    variant: str
    function: str
    position: str
    n: int
    total: float
    mean: float
    median: float
    sd: float
    min: float
    max: float
    p99: float


# Where a percentile curve is read: every whole percent, then the tail in finer steps, where
# latency distributions keep their news (p99.9, p99.99).
PERCENTILE_GRID: tuple[float, ...] = (
    *(float(p) for p in range(100)),
    *(99.0 + p / 10 for p in range(1, 10)),
    *(99.9 + p / 100 for p in range(1, 10)),
    100.0,
)


@dataclass(frozen=True)
class CallPercentiles:
    """The percentile curve of one function's per-call latency in one variant, at one call
    position (as CallSummary): ``seconds[i]`` is the ``percentiles[i]`` percentile, over every
    call of every counted run. The curve has at most len(PERCENTILE_GRID) points, however many
    calls there were, so a report can draw it at any size of experiment."""

    variant: str
    function: str
    position: str
    percentiles: tuple[float, ...]
    seconds: tuple[float, ...]


@dataclass(frozen=True)
class FunctionCalls:
    """One probed function of one binary (the uprobes probe) in one variant, in the operations
    of one outermost function (``operation``: ``do_search``): its calls, every one (recursion
    included, wherever in the tree), per operation and per counted run, and its mean time per
    call in seconds (the probe's own cost included, as every uprobes time)."""

    variant: str
    operation: str
    binary: str
    function: str
    runs: int
    operations: int
    calls: int
    calls_per_operation: float
    calls_per_run: float
    seconds_per_call: float
