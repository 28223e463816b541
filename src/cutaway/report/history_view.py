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
                    *((Name(point.reference_version or ""),) if history.reference else ()),
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
            *((Column("reference version"),) if history.reference else ()),
            Column("change"),
        ),
        rows=tuple(rows),
        primary=True,
    )
    return [header, (table,), (*_change_lines(history), *_changes_block(history))]


def _change_lines(history: History) -> list[Line]:
    """Warnings where what was measured changed between two points: the variant's workload
    (see cutaway.history.workload_identity), the machine (cutaway.environment.MACHINE_KEYS)
    or the reference's version. A step there may be theirs, not the version's."""
    points = history.points
    indices = range(1, len(points))
    lines = []
    workload = [f"#{points[i].experiment_id}" for i in indices if history.workload_changed(i)]
    if workload:
        text = "the workload changed (command, environment, directory, hooks or input) at "
        lines.append(Line((text + ", ".join(workload),), Tone.WARNING))
    machine: list[str | Name] = []
    for index in indices:
        keys = history.machine_changes(index)
        if keys:
            separator = ", " if machine else "the machine changed at "
            machine += [
                separator,
                f"#{points[index].experiment_id} (",
                *_machine(history, index),
                ")",
            ]
    if machine:
        lines.append(Line(tuple(machine), Tone.WARNING))
    reference = [f"#{points[i].experiment_id}" for i in indices if history.reference_changed(i)]
    if reference:
        name = Name(history.reference or "")
        at = " changed at " + ", ".join(reference)
        lines.append(Line(("the version of the reference ", name, at), Tone.WARNING))
    return lines


def _machine(history: History, index: int) -> list[str | Name]:
    """``kernel 6.1 -> 6.8; cpu_governor powersave -> performance``: each value is data."""
    before, after = history.points[index - 1].machine, history.points[index].machine
    parts: list[str | Name] = []
    for key in history.machine_changes(index):
        parts += ["; " if parts else "", f"{key} ", _shown(before.get(key)), " -> "]
        parts.append(_shown(after.get(key)))
    return parts


def _shown(value: object) -> str | Name:
    """A fingerprint value: text the machine gave is data; None is "unknown" (not captured)."""
    return "unknown" if value is None else Name(str(value))


def _step_notes(history: History, index: int) -> list[str | Name]:
    """What else changed where a step was found, said beside it."""
    notes: list[str | Name] = []
    if history.machine_changes(index):
        notes += ["; the machine changed here (", *_machine(history, index), ")"]
    if history.workload_changed(index):
        notes.append("; the workload changed here")
    if history.reference_changed(index):
        notes.append("; the reference's version changed here")
    return notes


def _changes_block(history: History) -> Block:
    points = history.segmentation.change_points
    noise = history.segmentation.noise_sd
    weighed = history.segmentation.from_intervals
    unit = None if history.reference else history.metric.unit
    if not points:
        return (
            Line(
                (
                    f"no step in {len(history.points)} points (noise sd "
                    f"{format_value(noise, unit, fractional=True)}, learned from the series"
                    + (", each point weighed by its own rounds)" if weighed else ")"),
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
            *_step_notes(history, step.index),
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
                "reference_version": p.reference_version,
                "machine": {key: _plain(value) for key, value in p.machine.items()},
                "machine_changed": list(history.machine_changes(i)),
                "workload_changed": history.workload_changed(i),
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
                "machine_changed": list(history.machine_changes(c.index)),
                "workload_changed": history.workload_changed(c.index),
                "reference_changed": history.reference_changed(c.index),
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


def _plain(value: object) -> object:
    """A fingerprint value as JSON holds it (they are strings, numbers or null as captured)."""
    return value if value is None or isinstance(value, bool | int | float | str) else str(value)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
