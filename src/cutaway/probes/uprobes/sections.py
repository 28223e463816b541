"""The uprobes probe's own report table: calls per probed function, per outermost function,
binary and function, each variant side by side (its phases are the spans probe's dissection,
cutaway.probes.spans.sections)."""

from __future__ import annotations

from collections.abc import Sequence

from cutaway.model import FunctionCalls
from cutaway.report.sections import (
    Align,
    Block,
    Cell,
    Column,
    Heading,
    Name,
    Quantity,
    Row,
    Table,
    count_cell,
)


def function_calls_block(counted: Sequence[FunctionCalls], *, compact: bool = False) -> Block:
    """The uprobes probe's calls per probed function: per outermost function, binary and
    function, each variant's calls per operation (and per run) and mean time per call."""
    labels = list(dict.fromkeys(item.variant for item in counted))
    # The terminal's table: calls per operation only, and the binary only where one function
    # is probed in two (two builds).
    binaries_of: dict[str, set[str]] = {}
    for item in counted:
        binaries_of.setdefault(item.function, set()).add(item.binary)
    show_binary = not compact or any(len(found) > 1 for found in binaries_of.values())
    columns = [Column("in"), Column("function")]
    if show_binary:
        columns.append(Column("binary"))
    for label in labels:
        if compact:
            columns.append(Column(f"{label}", Align.RIGHT))
            continue
        columns += [
            Column(f"{label} calls/op", Align.RIGHT),
            Column("calls/run", Align.RIGHT, follows=True),
            Column("per call", Align.RIGHT, follows=True),
        ]
    cells_of: dict[tuple[str, str, str], dict[str, FunctionCalls]] = {}
    for item in counted:
        key = (item.operation, item.function, item.binary)
        cells_of.setdefault(key, {})[item.variant] = item
    rows = []
    for (operation, function, binary), by_variant in cells_of.items():
        cells: list[Cell] = [Name(operation), Name(function)]
        if show_binary:
            cells.append(Name(binary))
        for label in labels:
            found = by_variant.get(label)
            if found is None:
                cells += [None] * (1 if compact else 3)
            elif compact:
                cells.append(count_cell(found.calls_per_operation))
            else:
                cells += [
                    count_cell(found.calls_per_operation),
                    count_cell(found.calls_per_run),
                    Quantity(found.seconds_per_call, "seconds", fractional=True),
                ]
        rows.append(Row(tuple(cells)))
    what = (
        "calls per operation"
        if compact
        else "calls per operation and per run, mean time per call (the probe's cost included)"
    )
    title = Heading(
        ("calls per probed function",),
        (
            ": uprobes, every call of each function of each binary in the operations of an "
            f"outermost function, recursion included: {what}",
        ),
    )
    return (Table(title, tuple(columns), tuple(rows)),)
