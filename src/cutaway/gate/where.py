"""Where a failed gate's difference went: for each variant that failed, the functions whose
cost changed most against the baseline (cutaway.attribution: per-round paired differences of
the profiles, with intervals), how much of the measured difference the largest 1, 5, 20 and
all of them explain, in Markdown for the pull request's comment and as terminal lines. The
differential flame graph is written beside the summary by the command (cli/check.py).

The profile read is the one that speaks to the failed metric: counted instructions for an
``instructions`` gate, else on-CPU samples (what ``cpu`` and most of ``wall`` are made of),
else whichever the experiment has."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from cutaway.attribution.result import attribution_of
from cutaway.attribution.sections import share_percent, signed_amount
from cutaway.model import Analysis, AttributionEntry, AttributionPoint, AttributionTotal
from cutaway.output_files import (
    ATOMIC,
    OutputPathError,
    OutputWriteError,
    output_plan,
    write_output_file,
)
from cutaway.report.markdown_text import code, escape, table
from cutaway.visible import visible

if TYPE_CHECKING:
    from cutaway.store import Store

WHERE_FUNCTIONS = 10  # the functions listed per failed variant
CURVE_POINTS = (1, 5, 20)  # "the largest N explain X %", then all of them
DEFAULT_ORDER = ("on-cpu", "instructions", "off-cpu")  # the kinds of stacks (probes.stacks)


def profile_kind(analysis: Analysis, variant: str, metric: str) -> str | None:
    """The kind of profile (``what``) that explains ``metric`` for ``variant``, None when the
    experiment has no attribution for it."""
    kinds: set[str] = {
        t.what for t in attribution_of(analysis).attribution_totals if t.variant == variant
    }
    order: list[str] = [*_counted_in(metric), *DEFAULT_ORDER, *sorted(kinds)]
    return next((what for what in order if what in kinds), None)


def _counted_in(metric: str) -> list[str]:
    """The kinds of profile whose total is ``metric`` (the instructions probe's callgrind
    stacks for ``instructions``): the one that explains its change exactly."""
    from cutaway.probes.core import stack_metrics

    return [what for what, counted in stack_metrics().items() if counted.name == metric]


def top_entries(analysis: Analysis, variant: str, what: str) -> list[AttributionEntry]:
    """The variant's largest self changes in that profile, largest first by size."""
    entries = [
        e
        for e in attribution_of(analysis).attribution
        if e.variant == variant and e.what == what and e.kind == "self"
    ]
    entries.sort(key=lambda e: (-abs(e.delta), e.function))
    return entries[:WHERE_FUNCTIONS]


def explained(analysis: Analysis, variant: str, what: str) -> list[tuple[str, str]]:
    """("largest 1", "62 %"), ..., ("all 140", "98 %"): the thousand-cuts curve at a few
    points, as shares of the measured whole-process difference."""
    curve = sorted(
        (
            p
            for p in attribution_of(analysis).attribution_curve
            if p.variant == variant and p.what == what
        ),
        key=lambda p: p.functions,
    )
    if not curve:
        return []
    points: list[tuple[str, AttributionPoint]] = []
    for count in CURVE_POINTS:
        point = next((p for p in curve if p.functions == count), None)
        if point is not None and count < curve[-1].functions:
            points.append((f"largest {count}", point))
    points.append((f"all {curve[-1].functions}", curve[-1]))
    return [(label, share_percent(point.share)) for label, point in points]


def _total(analysis: Analysis, variant: str, what: str) -> AttributionTotal | None:
    return next(
        (
            t
            for t in attribution_of(analysis).attribution_totals
            if t.variant == variant and t.what == what
        ),
        None,
    )


def where_markdown(
    analysis: Analysis,
    failed: Sequence[tuple[str, str]],
    files: Mapping[str, str],
    *,
    experiment_id: int,
    note: str = "",
) -> list[str]:
    """The summary's "where" section for each failed (variant, metric); ``files`` maps a
    variant to the file name of its differential flame graph, written beside the summary."""
    lines = ["", "#### Where it went", ""]
    if note:
        lines += [escape(note), ""]
    for variant, metric in failed:
        what = profile_kind(analysis, variant, metric)
        if what is None:
            lines += [f"No profile of {code(variant)} to attribute its change to.", ""]
            continue
        total = _total(analysis, variant, what)
        entries = top_entries(analysis, variant, what)
        lines += [_lead(variant, what, total, experiment_id), ""]
        rows = [
            [
                code(e.function),
                signed_amount(e.delta, e.unit),
                _interval(e),
                share_percent(e.share),
                "" if e.beyond_noise else "within noise",
            ]
            for e in entries
        ]
        lines += table(
            ["Function (self)", "Change per run", "95 % interval", "Share", ""], "lrrrl", rows
        )
        shares = explained(analysis, variant, what)
        if shares:
            lines += ["", "Explained: " + "; ".join(f"{label} {share}" for label, share in shares)]
        if variant in files:
            lines += ["", f"Differential flame graph: {code(files[variant])}"]
        lines.append("")
    return lines


def where_lines(analysis: Analysis, failed: Sequence[tuple[str, str]]) -> list[str]:
    """The terminal's lines: per failed variant, its three largest changes."""
    lines = []
    for variant, metric in failed:
        what = profile_kind(analysis, variant, metric)
        if what is None:
            continue
        top = ", ".join(
            f"{e.function} {signed_amount(e.delta, e.unit)}"
            for e in top_entries(analysis, variant, what)[:3]
        )
        shares = "; ".join(
            f"{label} {share}" for label, share in explained(analysis, variant, what)
        )
        lines.append(visible(f"check: where {variant} went ({what}): {top}; explained {shares}"))
    return lines


def _lead(variant: str, what: str, total: AttributionTotal | None, experiment_id: int) -> str:
    against = f"{code(variant)} against {code(total.baseline if total else 'the baseline')}"
    if total is None:
        return f"{against}, {escape(what)} profile of experiment #{experiment_id}:"
    measured = ""
    if total.measured_metric is not None and total.measured_delta is not None:
        measured = (
            f"; the measured {code(total.measured_metric)} changed by "
            f"{signed_amount(total.measured_delta, total.unit)} per run"
        )
    return (
        f"{against}, {escape(what)} profile of experiment #{experiment_id} "
        f"({total.rounds} rounds, {total.functions} functions, {total.beyond_noise} changed "
        f"beyond noise){measured}:"
    )


def _interval(entry: AttributionEntry) -> str:
    if not (math.isfinite(entry.ci_low) and math.isfinite(entry.ci_high)):
        return "n/a"
    return (
        f"[{signed_amount(entry.ci_low, entry.unit)}, {signed_amount(entry.ci_high, entry.unit)}]"
    )


def _is_file(summary: str) -> bool:
    """Whether the summary is written as a file (atomically), so that files may go beside it:
    not ``-``, ``/dev/stdout``, ``/dev/null``, a terminal or a FIFO, whose "beside" is /dev or
    wherever the FIFO is (a graph beside ``/dev/null`` was ``/dev/null.NAME.flamegraph-diff.svg``,
    a file left in /dev)."""
    plan = output_plan(summary)
    return not isinstance(plan, str) and plan.how == ATOMIC and plan.descriptor is None


def write_flame_graphs(
    store: Store, experiment_id: int, named: Mapping[str, str], summary: str | None
) -> dict[str, str]:
    """Each variant of ``named`` (variant -> the part of the file's name that names it)
    against the baseline as a differential flame graph, written beside the summary file (none
    when the summary is not a file: ``-``, a device, a FIFO) as
    ``SUMMARY-STEM.PART.flamegraph-diff.svg``; by variant, the file's name. A graph that
    cannot be drawn or written is a warning on stderr, and is left out."""
    from cutaway.probes.registry import store_format

    if summary is None or not _is_file(summary):
        return {}
    flame_graph = store_format("flamegraph-diff")
    directory = os.path.dirname(os.path.abspath(summary))
    stem = os.path.splitext(os.path.basename(summary))[0]
    files = {}
    for variant, part in named.items():
        name = f"{stem}.{part}.flamegraph-diff.svg"
        try:
            if flame_graph is None:
                raise ValueError("no probe draws differential flame graphs")
            svg = flame_graph.render(store, experiment_id, variant)
            write_output_file(os.path.join(directory, name), svg, "--summary")
        except (ValueError, OutputPathError, OutputWriteError) as error:
            print(
                visible(f"cutaway: warning: no flame graph of {variant}: {error}"), file=sys.stderr
            )
            continue
        files[variant] = name
    return files
