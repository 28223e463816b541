"""Values as the machine-readable formats write them, shared by the core exporters
(json_format.py, csv_format.py) and the probes' parts of them (cutaway.probes.plugin): a low
module that imports nothing of cutaway, so a probe's export may use it without a circle."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence

Cell = str | int | float | None

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def json_number(value: float) -> float | None:
    """A float JSON can hold: NaN and infinities (an sd of one run, a ratio to a zero baseline)
    have no JSON spelling, so they become null."""
    return float(value) if math.isfinite(value) else None


def csv_cell(value: Cell) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        # float() first: repr of a numpy float64 is "np.float64(1.5)" in numpy 2.
        return repr(float(value)) if math.isfinite(value) else ""
    if isinstance(value, int):
        return str(value)
    return neutralized(str(value))


def neutralized(text: str) -> str:
    """``text`` with a leading "'" when a spreadsheet would read it as a formula."""
    if not text.startswith(_FORMULA_STARTS):
        return text
    try:
        float(text)
    except ValueError:
        return "'" + text
    return text if math.isfinite(float(text)) else "'" + text


def write_csv(header: Sequence[str], rows: Iterable[Sequence[Cell]]) -> str:
    """A CSV file: the header, then the rows, each ending with "\\n"."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([csv_cell(value) for value in row] for row in rows)
    return buffer.getvalue()
