"""Values as the machine-readable formats write them, shared by the core exporters
(json_format.py, csv_format.py) and the probes' parts of them (cutaway.probes.plugin): a low
module that imports only cutaway.model and report/units.py, so a probe's export may use it
without a circle."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence

from cutaway.model import Analysis, Comparison
from cutaway.report.sections import JsonValue
from cutaway.report.units import metric_unit

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


def comparison_json(comparison: Comparison) -> dict[str, JsonValue]:
    return {
        "metric": comparison.metric,
        "unit": metric_unit(comparison.metric),
        "baseline": comparison.baseline,
        "variant": comparison.variant,
        "n_pairs": int(comparison.n_pairs),
        "ratio": json_number(comparison.ratio),
        "ci_low": json_number(comparison.ci_low),
        "ci_high": json_number(comparison.ci_high),
        "p_value": json_number(comparison.p_value),
        "verdict": comparison.verdict.value,
        "method": comparison.method,
        "rounds_to_settle": (
            None if comparison.rounds_to_settle is None else int(comparison.rounds_to_settle)
        ),
    }


def experiment_id_of(analysis: Analysis, variant: str) -> int | None:
    """The id of the experiment a variant belongs to. A Summary does not carry it, so look the
    variant up; with a single experiment every summary is its own."""
    for info in analysis.experiments:
        if variant in info.variants:
            return info.id
    return analysis.experiments[0].id if len(analysis.experiments) == 1 else None


def compared_cells(comparison: Comparison | None) -> list[Cell]:
    """A CSV row's comparison columns: ratio, its interval and the verdict (empty: none)."""
    if comparison is None:
        return [None, None, None, None]
    return [comparison.ratio, comparison.ci_low, comparison.ci_high, comparison.verdict.value]
