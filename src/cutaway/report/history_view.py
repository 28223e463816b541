"""`cutaway history` as format-neutral blocks (report/sections.py), drawn by the terminal and
Markdown renderers like any report, and as a JSON document (its own small contract,
``"format": "cutaway-history"``, version 1)."""

from __future__ import annotations

import json
import math

from cutaway.history import History
from cutaway.report.sections import (
    Align,
    Block,
    Column,
    Facts,
    Heading,
    Line,
    Name,
    Quantity,
    Row,
    Table,
    Tone,
)
from cutaway.report.units import format_percent, format_value

HISTORY_FORMAT_VERSION = 1


def history_blocks(history: History) -> list[Block]:
    """The header, the table of versions (a step marked on the row after it), and one line
    per flagged change with its size and triage."""
    unit = None if history.reference else history.metric.unit
    what = "ratio to " if history.reference else "median of "
    header: Block = (
        Heading((Name(history.name),), (" history",)),
        Facts(
            (
                ("metric ", Name(history.metric.name)),
                ("variant ", Name(history.variant)),
                (what, Name(history.reference or history.variant)),
                (f"{len(history.points)} experiments",),
            )
        ),
    )
    steps = {p.index: p for p in history.segmentation.change_points}
    rows = []
    for index, point in enumerate(history.points):
        step = steps.get(index)
        rows.append(
            Row(
                (
                    f"#{point.experiment_id}",
                    Name(point.version),
                    Quantity(point.value, unit, fractional=history.reference is not None),
                    Quantity(point.ci_low, unit, fractional=history.reference is not None),
                    Quantity(point.ci_high, unit, fractional=history.reference is not None),
                    str(point.n),
                    f"step {history.change_id(index)}" if step else "",
                ),
                strong=step is not None,
            )
        )
    table = Table(
        title=None,
        columns=(
            Column("experiment"),
            Column("version"),
            Column("ratio" if history.reference else "median", Align.RIGHT),
            Column("95% low", Align.RIGHT),
            Column("95% high", Align.RIGHT),
            Column("n", Align.RIGHT),
            Column("change"),
        ),
        rows=tuple(rows),
        primary=True,
    )
    return [header, (table,), (*_workload_lines(history), *_changes_block(history))]


def _workload_lines(history: History) -> list[Line]:
    """A warning where the variant's workload changed between two points (see
    cutaway.history.workload_identity): a step there may be the workload's, not the version's."""
    points = history.points
    changed = [
        f"#{points[i].experiment_id}"
        for i in range(1, len(points))
        if points[i].workload != points[i - 1].workload
    ]
    if not changed:
        return []
    return [
        Line(
            (
                "the workload changed (command, environment, directory, hooks or input) at "
                + ", ".join(changed),
            ),
            Tone.WARNING,
        )
    ]


def _changes_block(history: History) -> Block:
    points = history.segmentation.change_points
    noise = history.segmentation.noise_sd
    unit = None if history.reference else history.metric.unit
    if not points:
        return (
            Line(
                (
                    f"no step in {len(history.points)} points (noise sd "
                    f"{format_value(noise, unit, fractional=True)}, learned from the series)",
                ),
            ),
        )
    lines = []
    for step in points:
        change_id = history.change_id(step.index)
        before = history.points[step.index - 1].version
        after = history.points[step.index].version
        triage = history.triage.get(change_id)
        worse = (step.size > 0) == (history.metric.better == "lower")
        unit = None if history.reference else history.metric.unit

        def value(number: float, unit: str | None = unit) -> str:
            return format_value(number, unit, fractional=True)

        parts: list[str | Name] = [
            f"step {change_id} between ",
            Name(before),
            " and ",
            Name(after),
            f": {format_percent(step.relative * 100.0)} ({value(step.before)} -> "
            f"{value(step.after)}; size {value(step.size)}, 95% interval {value(step.ci_low)} "
            f"to {value(step.ci_high)}; p={step.p_value:.2g}), {'worse' if worse else 'better'}",
        ]
        if triage is None:
            parts.append("; not triaged")
        else:
            parts += [
                f"; triage: {triage.state}",
                *((": ", Name(triage.note)) if triage.note else ()),
            ]
        lines.append(Line(tuple(parts), Tone.WARNING if worse and triage is None else Tone.PLAIN))
    return tuple(lines)


def history_document(history: History) -> str:
    """The history as JSON: every point, every flagged change with its triage."""
    steps = {p.index for p in history.segmentation.change_points}
    document = {
        "format": "cutaway-history",
        "version": HISTORY_FORMAT_VERSION,
        "name": history.name,
        "metric": {
            "name": history.metric.name,
            "unit": history.metric.unit,
            "better": history.metric.better,
        },
        "variant": history.variant,
        "reference": history.reference,
        "points": [
            {
                "experiment": p.experiment_id,
                "created_at": p.created_at,
                "version": p.version,
                "value": _finite(p.value),
                "ci_low": _finite(p.ci_low),
                "ci_high": _finite(p.ci_high),
                "n": p.n,
                "workload": p.workload,
                "step_before": i in steps,
            }
            for i, p in enumerate(history.points)
        ],
        "noise_sd": _finite(history.segmentation.noise_sd),
        "changes": [
            {
                "id": history.change_id(c.index),
                "before_version": history.points[c.index - 1].version,
                "after_version": history.points[c.index].version,
                "before": c.before,
                "after": c.after,
                "size": c.size,
                "relative": _finite(c.relative),
                "size_ci_low": c.ci_low,
                "size_ci_high": c.ci_high,
                "p_value": c.p_value,
                "triage": _triage(history, history.change_id(c.index)),
            }
            for c in history.segmentation.change_points
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"


def _triage(history: History, change_id: str) -> dict[str, object] | None:
    triage = history.triage.get(change_id)
    if triage is None:
        return None
    return {"state": triage.state, "note": triage.note, "at": triage.at}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
