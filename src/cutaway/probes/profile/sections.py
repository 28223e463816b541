"""The profile probe's report views, as format-neutral sections (cutaway.report.sections):

- what the profiled runs were and what the profiler cost in them (profiled against timed wall);
- seed 002's side-by-side chart as a table: the top functions of every variant, each with every
  variant's time per run and share, a function found in some variants only marked so;
- seed 004's top five stacks of each variant, leaf first;
- with ``phases`` rules, a dissection table from samples alone (seed 001's table without its
  instrumentation): each phase's time per run by variant, side by side, and the change.

On-CPU and off-CPU time are separate tables with the same columns: together they are the
threads' wall time. Every function name and stack is a ``Name`` (data, never markup)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from cutaway.model import Analysis, FunctionWeight, PhaseWeight, ProfileTotal, StackWeight
from cutaway.probes.profile.result import profile_of
from cutaway.report.sections import (
    Align,
    Block,
    Cell,
    Column,
    Heading,
    Line,
    Name,
    Quantity,
    Row,
    Table,
    TablesOnly,
    Tone,
)
from cutaway.report.units import format_count, format_percent, format_seconds

COMPACT_FUNCTIONS = 8
STACK_FRAMES_SHOWN = 8  # innermost frames of a stack in a human report (JSON has them all)
WHAT_TITLES = {
    "on-cpu": "on-CPU",
    "off-cpu": "off-CPU (blocked or waiting, with the stack where it was switched out)",
}
ONLY_NOTE = "only in: the function has no samples in the other variants' profiled runs"


class ProfileViews(TablesOnly):
    """The profile probe's part of a report (cutaway.probes.plugin.ProbeViews)."""

    def compact_blocks(self, analysis: Analysis) -> list[Block]:
        """The top functions by self and by inclusive time, on and off the CPU, side by
        side, and each variant's top stacks: what the profile is read for (the full report
        lists every function the analysis kept)."""
        if not profile_of(analysis).profile_totals:
            return []
        blocks = [totals_block(profile_of(analysis).profile_totals)]
        blocks += [phases_block(analysis, what) for what in _kinds(analysis)]
        for what in _kinds(analysis):
            blocks.append(functions_block(analysis, what, inclusive=False, limit=COMPACT_FUNCTIONS))
            blocks.append(functions_block(analysis, what, inclusive=True, limit=COMPACT_FUNCTIONS))
            blocks.append(stacks_block(analysis, what))
        return [block for block in blocks if block]

    def blocks(self, analysis: Analysis, *, all_metrics: bool) -> list[Block]:
        if not profile_of(analysis).profile_totals:
            return []
        blocks = [totals_block(profile_of(analysis).profile_totals)]
        blocks += [phases_block(analysis, what) for what in _kinds(analysis)]
        for what in _kinds(analysis):
            blocks.append(functions_block(analysis, what, inclusive=False))
            blocks.append(functions_block(analysis, what, inclusive=True))
            blocks.append(stacks_block(analysis, what))
        return [block for block in blocks if block]


def _kinds(analysis: Analysis) -> list[str]:
    return list(dict.fromkeys(total.what for total in profile_of(analysis).profile_totals))


def _title(what: str) -> str:
    return WHAT_TITLES.get(what, what)


def _measure(unit: str) -> str:
    return "time" if unit == "seconds" else unit


def _share(share: float) -> str:
    return format_percent(share * 100.0, signed=False)


def totals_block(totals: Sequence[ProfileTotal]) -> Block:
    """Per variant and kind: profiled runs, time (or count) per run, events per run, and the
    profiler's measured cost: the profiled runs' median wall against the timed runs'."""
    columns = (
        Column("variant", group=True),
        Column("profile"),
        Column("runs", Align.RIGHT),
        Column("per run", Align.RIGHT),
        Column("events per run", Align.RIGHT),
        Column("profiled / timed wall", Align.RIGHT),
    )
    rows = []
    for total in totals:
        cost: Cell = None
        if total.profiled_wall is not None and total.timed_wall:
            cost = format_percent((total.profiled_wall / total.timed_wall - 1.0) * 100.0)
        rows.append(
            Row(
                (
                    Name(total.variant),
                    _title(total.what).split(" (")[0],
                    Quantity(total.runs, "count"),
                    Quantity(total.per_run, total.unit, fractional=True),
                    Quantity(total.events_per_run, "count", fractional=True),
                    cost,
                )
            )
        )
    title = Heading(
        ("profile",),
        (
            ": profiled runs, separate from the timed runs; the last column is the profiler's "
            "cost in this experiment (median wall of the profiled runs against the timed ones)",
        ),
    )
    return (Table(title, columns, tuple(rows)),)


def functions_block(
    analysis: Analysis, what: str, *, inclusive: bool, limit: int | None = None
) -> Block:
    """Seed 002's chart: the union of every variant's top functions, each variant's time per
    profiled run and share side by side, ordered by the largest value of any variant."""
    weights = [w for w in profile_of(analysis).profile_functions if w.what == what]
    if not weights:
        return ()
    variants = list(dict.fromkeys(w.variant for w in weights))
    by_function: dict[str, dict[str, FunctionWeight]] = {}
    for weight in weights:
        by_function.setdefault(weight.function, {})[weight.variant] = weight

    def value(weight: FunctionWeight) -> float:
        return weight.inclusive_value if inclusive else weight.self_value

    functions = [
        name for name, cells in by_function.items() if any(value(w) > 0 for w in cells.values())
    ]
    functions.sort(key=lambda name: (-max(value(w) for w in by_function[name].values()), name))
    shown = functions[:limit] if limit else functions
    columns = [Column("function")]
    for variant in variants:
        columns += [
            Column(variant, Align.RIGHT, scale="weight"),
            Column("share", Align.RIGHT, follows=True),
        ]
    several = len(variants) > 1
    if several:
        columns.append(Column("only in"))
    rows = []
    marked = False
    for name in shown:
        cells: list[Cell] = [Name(name)]
        present = []
        for variant in variants:
            found = by_function[name].get(variant)
            amount = 0.0 if found is None else value(found)
            if found is not None and amount > 0:
                weight = found
                share = weight.inclusive_share if inclusive else weight.self_share
                cells += [Quantity(amount, weight.unit, fractional=True), _share(share)]
                present.append(variant)
            else:
                cells += [None, None]  # no samples: a gap, like seed 002's missing bar
        if several:
            only = len(present) < len(variants)
            marked = marked or only
            cells.append(Name(", ".join(present)) if only else None)
        rows.append(Row(tuple(cells)))
    kind = "inclusive (anywhere on the stack)" if inclusive else "self (the leaf)"
    if what == "off-cpu" and not inclusive:
        kind = "self (where it blocked: the leaf below the scheduler's frames)"
    scope = f"top {len(shown)} of {len(functions)}" if len(shown) < len(functions) else "all"
    title = Heading(
        ("profile",),
        (f": {_title(what)}, {_measure(weights[0].unit)} per run by function, {kind}, {scope}",),
    )
    block: Block = (Table(title, tuple(columns), tuple(rows)),)
    if marked:
        block += (Line((ONLY_NOTE,), Tone.DIM),)
    return block


def stack_text(stack: str, frames: int = STACK_FRAMES_SHOWN) -> str:
    """A folded stack for a human, leaf first ("leaf <- caller <- ..."), its innermost
    ``frames`` frames and how many more, the process name last."""
    parts = stack.split(";")
    process, calls = parts[0], parts[1:][::-1]
    shown = calls[:frames]
    text = " <- ".join(shown) if shown else "(no frames)"
    if len(calls) > frames:
        text += f" <- ... {len(calls) - frames} more"
    return f"{text} [{process}]"


def stacks_block(analysis: Analysis, what: str) -> Block:
    """Seed 004's top five stacks of each variant, leaf first, with time per run and share."""
    stacks: list[StackWeight] = [s for s in profile_of(analysis).profile_stacks if s.what == what]
    if not stacks:
        return ()
    # A row's time, share and stack are one thing: a table too wide for the terminal is not
    # split between them (a long stack makes its row wide instead).
    columns = (
        Column("variant", group=True),
        Column("per run", Align.RIGHT),
        Column("share", Align.RIGHT, follows=True),
        Column("stack, leaf first", follows=True),
    )
    rows = []
    for index, stack in enumerate(stacks):
        last = index + 1 == len(stacks) or stacks[index + 1].variant != stack.variant
        rows.append(
            Row(
                (
                    Name(stack.variant),
                    Quantity(stack.value, stack.unit, fractional=True),
                    _share(stack.share),
                    Name(stack_text(stack.stack)),
                ),
                end_group=last,
            )
        )
    title = Heading(("profile",), (f": {_title(what)}, the top stacks of each variant",))
    return (Table(title, columns, tuple(rows)),)


def _signed(value: float, unit: str) -> str:
    """ "+1.23 ms", "-60,000 instructions"."""
    sign = "+" if value > 0 else "-" if value < 0 else ""
    if unit == "seconds":
        return sign + format_seconds(abs(value))
    return f"{sign}{format_count(abs(value))} {unit}"


def _change(value: float, baseline: float, unit: str) -> str:
    """A phase's change against the baseline per run, and relative to the baseline's."""
    text = _signed(value - baseline, unit)
    if baseline > 0 and math.isfinite(value):
        text += f" ({format_percent((value / baseline - 1.0) * 100.0)})"
    return text


def phases_block(analysis: Analysis, what: str) -> Block:
    """The ``phases`` rules' dissection table: one row per phase (file order, then "other"),
    each variant's time per profiled run and share side by side, then each other variant's
    change against the baseline."""
    weights: list[PhaseWeight] = [p for p in profile_of(analysis).profile_phases if p.what == what]
    if not weights:
        return ()
    variants = list(dict.fromkeys(w.variant for w in weights))
    baseline = analysis.experiments[0].baseline if analysis.experiments else variants[0]
    if baseline not in variants:
        baseline = variants[0]
    cells_of: dict[str, dict[str, PhaseWeight]] = {}
    for weight in weights:
        cells_of.setdefault(weight.phase, {})[weight.variant] = weight
    columns = [Column("phase")]
    for variant in variants:
        columns += [
            Column(variant, Align.RIGHT, scale="weight"),
            Column("share", Align.RIGHT, follows=True),
        ]
    others = [variant for variant in variants if variant != baseline]
    columns += [Column(f"{variant} vs {baseline}", Align.RIGHT) for variant in others]
    rows = []
    for phase, by_variant in cells_of.items():
        cells: list[Cell] = [Name(phase)]
        for variant in variants:
            found = by_variant.get(variant)
            cells += (
                [None, None]
                if found is None
                else [Quantity(found.per_run, found.unit, fractional=True), _share(found.share)]
            )
        base = by_variant.get(baseline)
        for variant in others:
            found = by_variant.get(variant)
            cells.append(
                None
                if found is None or base is None
                else _change(found.per_run, base.per_run, found.unit)
            )
        rows.append(Row(tuple(cells)))
    title = Heading(
        ("phases from samples",),
        (
            f": {_title(what)}, {_measure(weights[0].unit)} per run by phase (each sample goes "
            "to the innermost frame a rule matches, the first such rule in the file; "
            '"other" when none does)',
        ),
    )
    return (Table(title, tuple(columns), tuple(rows)),)
