"""The attribution's report views, as format-neutral sections (cutaway.report.sections),
answer first:

- per variant and kind of profile, a sentence: the whole-process difference per run (measured,
  and as the profile saw it), the functions that make it up, how much the listed ones explain,
  how many changed beyond noise and how many within it;
- the functions by self change, largest first, each with both sides, the change and its
  interval, its share of the difference and whether it is within noise; the same by inclusive
  change (the full report);
- the "thousand cuts" curve: the cumulative self change after the 1, 2, 3, 5, 10, ... largest.

Every function, variant and metric name is a ``Name`` (data, never markup)."""

from __future__ import annotations

import math

from cutaway.attribution import LISTED
from cutaway.attribution.result import attribution_of
from cutaway.model import Analysis, AttributionEntry, AttributionPoint, AttributionTotal
from cutaway.report.sections import (
    Align,
    Block,
    Cell,
    Column,
    Heading,
    Inline,
    Line,
    Name,
    Quantity,
    Row,
    Table,
    TablesOnly,
    Tone,
)
from cutaway.report.units import (
    format_confidence,
    format_count,
    format_percent,
    format_quantity,
    format_seconds,
)

COMPACT_FUNCTIONS = 8
EXPLAINED_RANKS = (1, 5, 20)  # the curve's points the answer sentence gives (and all)
WHAT_TITLES = {"on-cpu": "on-CPU time", "off-cpu": "off-CPU time", "instructions": "instructions"}
NOISE_MARK = "within noise"
NOT_TIME = "instruction counts are not time: a cache miss or a wait costs no more instructions"


def value_unit(unit: str) -> str:
    """Instructions are counts: shown with thousands separators, the unit in the title."""
    return "seconds" if unit == "seconds" else "count"


def quantity(value: float, unit: str) -> Quantity:
    return Quantity(value, unit, fractional=unit == "seconds")


def signed_amount(value: float, unit: str) -> str:
    """ "+1.23 ms", "-60,000 instructions"."""
    if not math.isfinite(value):
        return "n/a"
    sign = "+" if value > 0 else "-" if value < 0 else ""
    if unit == "seconds":
        return sign + format_seconds(abs(value))
    return f"{sign}{format_count(abs(value))} {unit}"


def _interval(low: float | None, high: float | None, unit: str) -> str:
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return "(no interval: fewer than two rounds)"
    if low == high:
        return "(the same in every round)"
    return f"[{signed_amount(low, unit)}, {signed_amount(high, unit)}]"


def share_percent(share: float | None) -> str:
    """A share of the difference: "100 %", "-3.20 %" (a change against the difference)."""
    if share is None or not math.isfinite(share):
        return "n/a"
    return format_percent(share * 100.0, signed=False)


class AttributionViews(TablesOnly):
    """The attribution's part of a report (cutaway.probes.plugin.ProbeViews)."""

    def compact_blocks(self, analysis: Analysis) -> list[Block]:
        blocks = [answer_block(analysis)]
        for total in attribution_of(analysis).attribution_totals:
            blocks.append(functions_block(analysis, total, "self", limit=COMPACT_FUNCTIONS))
        return [block for block in blocks if block]

    def blocks(self, analysis: Analysis, *, all_metrics: bool) -> list[Block]:
        blocks = [answer_block(analysis)]
        for total in attribution_of(analysis).attribution_totals:
            blocks.append(functions_block(analysis, total, "self"))
            blocks.append(functions_block(analysis, total, "inclusive"))
            blocks.append(curve_block(analysis, total))
        return [block for block in blocks if block]


def _entries(analysis: Analysis, total: AttributionTotal, kind: str) -> list[AttributionEntry]:
    return [
        e
        for e in attribution_of(analysis).attribution
        if e.variant == total.variant and e.what == total.what and e.kind == kind
    ]


def answer_sentence(analysis: Analysis, total: AttributionTotal) -> tuple[Inline, ...]:
    unit = total.unit
    what = WHAT_TITLES.get(total.what, total.what)
    parts: list[Inline] = [
        Name(total.variant),
        " against ",
        Name(total.baseline),
        f", {what}: ",
    ]
    if total.measured_metric is not None and total.measured_delta is not None:
        parts += [
            f"{signed_amount(total.measured_delta, unit)} per run ",
            _interval(total.measured_ci_low, total.measured_ci_high, unit),
            " measured (",
            Name(total.measured_metric),
            f"), {signed_amount(total.profile_delta, unit)} in the profiles",
        ]
    else:
        parts += [
            f"{signed_amount(total.profile_delta, unit)} per run in the profiles ",
            _interval(total.profile_ci_low, total.profile_ci_high, unit),
        ]
    if total.baseline_total:
        parts.append(f" ({format_percent(100.0 * total.profile_delta / total.baseline_total)})")
    leaders = [e for e in _entries(analysis, total, "self") if e.beyond_noise][:3]
    if leaders:
        parts.append("; largest: ")
        for index, entry in enumerate(leaders):
            if index:
                parts.append(", ")
            parts += [
                Name(entry.function),
                f" {signed_amount(entry.delta, unit)} ({share_percent(entry.share)} of it)",
            ]
    if not total.listed:
        parts.append("; no function's weight changed")
        return tuple(parts)
    parts += ["; ", *explained_phrase(analysis, total)]
    parts.append(
        f"; {format_quantity(total.beyond_noise, 'function')} changed beyond noise, "
        f"{total.within_noise} within it"
    )
    if total.baseline_only or total.variant_only:
        parts += [
            f"; {format_quantity(total.baseline_only, 'function')} ran in ",
            Name(total.baseline),
            f"'s profiles only, {total.variant_only} in ",
            Name(total.variant),
            "'s only",
        ]
    return tuple(parts)


def explained_points(analysis: Analysis, total: AttributionTotal) -> list[AttributionPoint]:
    """The curve's points at the largest 1, 5 and 20 changes and at all of them (those the
    variant has): seed 003's "how much do the largest few explain"."""
    points = [
        p
        for p in attribution_of(analysis).attribution_curve
        if p.variant == total.variant and p.what == total.what
    ]
    if not points:
        return []
    last = points[-1].functions
    return [p for p in points if p.functions in EXPLAINED_RANKS or p.functions == last]


def denominator_phrase(total: AttributionTotal) -> tuple[Inline, ...]:
    """What every share of this attribution is of: the measured (judged) difference, named,
    or the profiles' own."""
    amount = signed_amount(total.reference_delta, total.unit)
    if total.measured_metric is not None and total.measured_delta is not None:
        return ("the measured difference (", Name(total.measured_metric), f", {amount} per run)")
    return (f"the profiles' difference ({amount} per run)",)


def explained_phrase(analysis: Analysis, total: AttributionTotal) -> tuple[Inline, ...]:
    """ "the largest 1, 5, 20 and all 1,076 changed functions explain 21.3 %, 19.8 %,
    52.4 % and 100 % of the measured difference (server_cpu, +20.1 ms per run)"."""
    points = explained_points(analysis, total)
    if not points:
        return ()
    *ranks, last = [format_count(p.functions) for p in points]
    if not ranks:
        functions = "the one changed function explains" if last == "1" else ""
        functions = functions or f"all {last} changed functions explain"
    else:
        functions = f"the largest {_listing([*ranks, f'all {last}'])} changed functions explain"
    shares = _listing([share_percent(p.share) for p in points])
    return (f"{functions} {shares} of ", *denominator_phrase(total))


def _listing(words: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    if len(words) < 2:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def answer_block(analysis: Analysis) -> Block:
    """The answer, one sentence per variant and kind of profile."""
    if not attribution_of(analysis).attribution_totals:
        return ()
    title = Heading(
        ("attribution",),
        (
            ": where each variant's difference from the baseline went, by function, per run, "
            "paired by round",
        ),
    )
    lines: list[Line] = [
        Line(answer_sentence(analysis, total))
        for total in attribution_of(analysis).attribution_totals
    ]
    if any(total.unit == "instructions" for total in attribution_of(analysis).attribution_totals):
        lines.append(Line((NOT_TIME,), Tone.DIM))
    return (title, *lines)


def _confidence(analysis: Analysis) -> str:
    if not analysis.experiments:
        return "CI"
    return f"{format_confidence(analysis.experiments[0].confidence)} CI"


def functions_block(
    analysis: Analysis, total: AttributionTotal, kind: str, *, limit: int | None = None
) -> Block:
    """The functions by size of change (self or inclusive), each with both sides per run."""
    entries = _entries(analysis, total, kind)
    shown = entries[: limit or LISTED]
    if not shown:
        return ()
    unit = value_unit(total.unit)
    confidence = _confidence(analysis)
    columns = (
        Column("function"),
        *(
            Column(name, Align.RIGHT, scale="change")
            for name in (total.baseline, total.variant, "change", "low", "high")
        ),
        Column("share", Align.RIGHT),
        Column("noise"),
    )
    rows = []
    for entry in shown:
        finite = math.isfinite(entry.ci_low) and math.isfinite(entry.ci_high)
        cells: tuple[Cell, ...] = (
            Name(entry.function),
            quantity(entry.baseline_value, unit),
            quantity(entry.variant_value, unit),
            quantity(entry.delta, unit),
            quantity(entry.ci_low, unit) if finite else None,
            quantity(entry.ci_high, unit) if finite else None,
            share_percent(entry.share),
            None if entry.beyond_noise else NOISE_MARK,
        )
        rows.append(Row(cells))
    what = WHAT_TITLES.get(total.what, total.what)
    where = "as the leaf" if kind == "self" else "anywhere on the stack"
    of = f" of {format_count(total.functions)}" if kind == "self" else ""
    title = Heading(
        ("attribution: ", Name(total.variant), " against ", Name(total.baseline)),
        (
            f", {what} ({total.unit}) per run by function, {kind} ({where}), the "
            f"{len(shown)} largest changes{of}, over {total.rounds} rounds; low and high: the "
            f"change's {confidence}; share: of ",
            *denominator_phrase(total),
        ),
    )
    return (Table(title, columns, tuple(rows)),)


def curve_block(analysis: Analysis, total: AttributionTotal) -> Block:
    """The "thousand cuts" curve: cumulative self change after the N largest changes."""
    points = [
        p
        for p in attribution_of(analysis).attribution_curve
        if p.variant == total.variant and p.what == total.what
    ]
    if len(points) < 2:
        return ()
    unit = value_unit(total.unit)
    columns = (
        Column("largest changes", Align.RIGHT),
        Column("cumulative change", Align.RIGHT),
        Column("of the difference", Align.RIGHT),
    )
    rows = tuple(
        Row(
            (
                Quantity(point.functions, "count"),
                quantity(point.cumulative_delta, unit),
                share_percent(point.share),
            )
        )
        for point in points
    )
    what = WHAT_TITLES.get(total.what, total.what)
    title = Heading(
        ("attribution: ", Name(total.variant), " against ", Name(total.baseline)),
        (
            f", {what}: the self changes summed from the largest, as a share of ",
            *denominator_phrase(total),
            " (one cause reaches 100 % at once; a thousand cuts climb slowly)",
        ),
    )
    return (Table(title, columns, rows),)
