"""Per-call latency (the ``calls`` probe) arranged for the human reports, whatever their format.

Two views, one per seed. Seed 000 split each function's calls by their position in the process
(the first call pays for loading and connecting, the second shows the steady cost): that is
``position_groups``. Seed 002 set the total time of each function side by side across variants,
the largest first, top 15, a function missing from a variant drawn as a gap: that is
``overview``. The probe's report sections (sections.py) only arrange what these return.

Machine formats (JSON, CSV) need only ``parse_call_metric``: they carry every summary as is."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cutaway.model import CALL_POSITIONS, Analysis, CallSummary, Comparison
from cutaway.probes.calls.result import calls_result

ALL_CALLS = "all"  # the position of a summary over every call, whatever its position
CALL_UNIT = "seconds"  # every CallSummary and call comparison is in seconds
CALL_METRIC_PREFIX = "calls."
OVERVIEW_TOP = 15  # seed 002 charted the top 15 functions

POSITION_LABELS: Mapping[str, str] = {
    "1": "first calls",
    "2": "second calls",
    "later": "later calls",
    ALL_CALLS: "all calls",
}
# In a verdict table, next to the function's name: "getpwnam call 1", "open calls 3+".
SHORT_POSITION_LABELS: Mapping[str, str] = {
    "1": "call 1",
    "2": "call 2",
    "later": "calls 3+",
    ALL_CALLS: "all calls",
}
_POSITION_ORDER = {position: index for index, position in enumerate((*CALL_POSITIONS, ALL_CALLS))}


def parse_call_metric(metric: str) -> tuple[str, str] | None:
    """The function and position of a call comparison's metric: "calls.getpwnam.2" is
    ("getpwnam", "2"). None for a metric that is not a call metric."""
    if not metric.startswith(CALL_METRIC_PREFIX):
        return None
    function, dot, position = metric.removeprefix(CALL_METRIC_PREFIX).rpartition(".")
    if not dot or not function or not position:
        return None
    return function, position


def position_label(position: str) -> str:
    """How a report names a position: "1" is "first calls"; an unknown one stays as it is."""
    return POSITION_LABELS.get(position, position)


def position_sort_key(position: str) -> tuple[int, str]:
    """First calls, second calls, later calls, all calls, then any unknown position."""
    return (_POSITION_ORDER.get(position, len(_POSITION_ORDER)), position)


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def call_functions(analysis: Analysis) -> list[str]:
    """Functions in the order the analysis holds them (the spec's order, as compare writes it),
    then any function that only a comparison names."""
    compared = (parse_call_metric(c.metric) for c in calls_result(analysis).call_comparisons)
    return _unique(
        [
            *(summary.function for summary in calls_result(analysis).calls),
            *(parsed[0] for parsed in compared if parsed is not None),
        ]
    )


def call_variants(analysis: Analysis) -> list[str]:
    """Variants that have call summaries, in their experiment's order (baseline first, as
    written), then any other in the order of the summaries."""
    present = _unique(summary.variant for summary in calls_result(analysis).calls)
    listed = _unique(name for info in analysis.experiments for name in info.variants)
    return [name for name in listed if name in present] + [
        name for name in present if name not in listed
    ]


@dataclass(frozen=True)
class PositionGroup:
    """One variant's rows of seed 000's table for one function: its calls by position, without
    the positions that had no call."""

    variant: str
    rows: tuple[CallSummary, ...]


def position_groups(analysis: Analysis, function: str) -> list[PositionGroup]:
    """Seed 000's table of ``function``: per variant, first, second and later calls. Empty when
    no variant has a positional summary with a call in it (only "all" summaries, say)."""
    groups = []
    for variant in call_variants(analysis):
        rows = sorted(
            (
                summary
                for summary in calls_result(analysis).calls
                if summary.variant == variant
                and summary.function == function
                and summary.position != ALL_CALLS
                and summary.n > 0
            ),
            key=lambda summary: position_sort_key(summary.position),
        )
        if rows:
            groups.append(PositionGroup(variant, tuple(rows)))
    return groups


@dataclass(frozen=True)
class OverviewRow:
    """One function of seed 002's chart: its summary over all calls in each variant of the
    overview, None where that variant never called it."""

    function: str
    cells: tuple[CallSummary | None, ...]

    @property
    def largest_total_seconds(self) -> float:
        return max((cell.total for cell in self.cells if cell is not None), default=0.0)


@dataclass(frozen=True)
class Overview:
    """Seed 002's chart as a table: the functions that took the most time, side by side."""

    variants: tuple[str, ...]
    rows: tuple[OverviewRow, ...]  # the largest total first, at most ``top`` of them
    functions_called: int  # how many functions had a call: more than len(rows) when cut

    @property
    def has_gaps(self) -> bool:
        """Whether some function shown was not called in some variant."""
        return any(cell is None for row in self.rows for cell in row.cells)


def overview(analysis: Analysis, top: int = OVERVIEW_TOP) -> Overview | None:
    """Each function's calls over all positions, per variant, sorted by the largest total of
    any variant (not the baseline's: a function that only the variant calls, seed 002's
    mutex_vector_enter, is the news and must not sink below the cut). None without calls."""
    variants = call_variants(analysis)
    everything = {
        (summary.variant, summary.function): summary
        for summary in calls_result(analysis).calls
        if summary.position == ALL_CALLS and summary.n > 0
    }
    order = {function: index for index, function in enumerate(call_functions(analysis))}
    rows = [
        OverviewRow(function, tuple(everything.get((variant, function)) for variant in variants))
        for function in order
        if any((variant, function) in everything for variant in variants)
    ]
    if not rows:
        return None
    rows.sort(key=lambda row: (-row.largest_total_seconds, order[row.function]))
    return Overview(tuple(variants), tuple(rows[:top]), len(rows))


def ordered_call_comparisons(analysis: Analysis) -> list[Comparison]:
    """Call comparisons by function (in the analysis's order), position, then variant."""
    functions = {name: index for index, name in enumerate(call_functions(analysis))}
    variants = {name: index for index, name in enumerate(call_variants(analysis))}

    def key(comparison: Comparison) -> tuple[int, tuple[int, str], int, str]:
        function, position = parse_call_metric(comparison.metric) or (comparison.metric, "")
        return (
            functions.get(function, len(functions)),
            position_sort_key(position),
            variants.get(comparison.variant, len(variants)),
            comparison.variant,
        )

    return sorted(calls_result(analysis).call_comparisons, key=key)


def comparison_function(comparison: Comparison) -> str:
    """The function a call comparison is about (its whole metric if it does not parse)."""
    parsed = parse_call_metric(comparison.metric)
    return parsed[0] if parsed is not None else comparison.metric


def comparison_subject(comparison: Comparison) -> str:
    """What a call comparison is about, short: "getpwnam call 1", "open calls 3+"."""
    parsed = parse_call_metric(comparison.metric)
    if parsed is None:
        return comparison.metric
    function, position = parsed
    return f"{function} {SHORT_POSITION_LABELS.get(position, position)}"
