"""The words of the cells every human format shares: changes (as a factor when large),
intervals (footnoted when they cannot be computed), verdicts and how to settle an inconclusive
one, and a whole column of values in one unit. Formats only decorate these strings."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from cutaway.model import HIGHER_IS_BETTER, Verdict
from cutaway.report.sections import (
    Cell,
    Change,
    Interval,
    Name,
    Quantity,
    Table,
    VerdictCell,
)
from cutaway.report.units import format_change, format_column, format_percent

# A change beyond +100 % or below -50 % reads better as a factor: "13.1x slower".
FACTOR_ABOVE, FACTOR_BELOW = 2.0, 0.5
# An estimate beyond this many times the rounds run is no advice: the change is too small.
HOPELESS_FACTOR = 10
NO_INTERVAL_MARK = "†"
NO_INTERVAL_NOTE = (
    f"{NO_INTERVAL_MARK} no interval: too few pairs, or a baseline at zero, leaves the ratio "
    "unbounded"
)


def direction_words(change: Change) -> tuple[str, str]:
    """The words for (more, less) of what ``change`` measures: slower/faster for time,
    higher/lower for a metric that improves upward, more/less otherwise."""
    if change.unit == "seconds":
        return "slower", "faster"
    if change.better == HIGHER_IS_BETTER:
        return "higher", "lower"
    return "more", "less"


def factor_text(change: Change) -> str | None:
    """ "13.1x slower" for a change beyond +100 %, "8.9x faster" below -50 %, else None."""
    ratio = change.ratio
    if not math.isfinite(ratio) or FACTOR_BELOW <= ratio <= FACTOR_ABOVE or ratio <= 0:
        return None
    more, less = direction_words(change)
    factor, word = (ratio, more) if ratio > 1 else (1.0 / ratio, less)
    return f"{format_factor(factor)}x {word}"


def format_factor(factor: float) -> str:
    """A factor with 3 significant digits: "1.20", "13.1", "1,210"."""
    return (
        f"{factor:.2f}"
        if factor < 9.995
        else f"{factor:.1f}"
        if factor < 99.95
        else f"{factor:,.0f}"
    )


def change_text(change: Change) -> str:
    """A change as a percentage ("+5.20 %"), or as a factor when it is large."""
    return factor_text(change) or format_change(change.ratio)


def interval_text(interval: Interval) -> str:
    """ "[+0.61 %, +1.44 %]", or the footnote mark when a bound cannot be computed."""
    if not (math.isfinite(interval.low) and math.isfinite(interval.high)):
        return NO_INTERVAL_MARK
    return f"[{format_change(interval.low)}, {format_change(interval.high)}]"


def settle_phrase(cell: VerdictCell) -> str | None:
    """How to settle an inconclusive verdict, in words: "about 40 more rounds", or "too small
    to settle at this noise" when the estimate is over 10x the rounds run. None otherwise."""
    if cell.verdict is not Verdict.INCONCLUSIVE or cell.rounds_to_settle is None:
        return None
    if cell.rounds_run and cell.rounds_to_settle > HOPELESS_FACTOR * cell.rounds_run:
        return "too small to settle at this noise"
    more = max(cell.rounds_to_settle - cell.rounds_run, 1)
    return f"about {more} more round{'s' if more != 1 else ''}"


def grouped_names(pairs: Iterable[tuple[str, str]], separator: str = "; ") -> str:
    """(comparison, name) pairs said with each comparison once and each name once in it, in
    the order first met: "user, sys (B vs A); user (C vs A)"."""
    by_comparison: dict[str, list[str]] = {}
    for comparison, name in pairs:
        names = by_comparison.setdefault(comparison, [])
        if name not in names:
            names.append(name)
    return separator.join(
        f"{', '.join(names)} ({comparison})" if comparison else ", ".join(names)
        for comparison, names in by_comparison.items()
    )


def settle_advice(cells: Iterable[Cell]) -> str | None:
    """How to settle the inconclusive verdicts among ``cells``, each named with its comparison:
    "wall, user (B vs A): about 12 more rounds; wall (C vs A): about 40 more rounds"."""
    advice: dict[str, list[tuple[str, str]]] = {}
    for cell in cells:
        if isinstance(cell, VerdictCell):
            phrase = settle_phrase(cell)
            if phrase is not None:
                advice.setdefault(phrase, []).append((cell.comparison, cell.subject))
    if not advice:
        return None
    return "; ".join(
        f"{grouped_names(pairs, ' and ')}: {phrase}" for phrase, pairs in advice.items()
    )


def verdict_text(cell: VerdictCell, *, with_settle: bool) -> str:
    phrase = settle_phrase(cell) if with_settle else None
    return cell.verdict.value + (f" ({phrase})" if phrase else "")


def amount_sentence(change: Change, interval: Interval) -> str:
    """The change as words with its interval turned the same way: "18.6 % [17.4 %, 20.2 %]
    slower", "13.1x slower (+1210 % [+1133 %, +1296 %])"."""
    more, less = direction_words(change)
    word = more if change.ratio >= 1.0 else less
    if change.ratio >= 1.0:
        low, high = interval.low - 1.0, interval.high - 1.0
    else:
        low, high = 1.0 - interval.high, 1.0 - interval.low
    bounds = NO_INTERVAL_MARK
    if math.isfinite(low) and math.isfinite(high):
        low_text, high_text = (format_percent(x * 100, signed=False) for x in (low, high))
        bounds = f"[{low_text}, {high_text}]"
    factor = factor_text(change)
    if factor is not None:
        return f"{factor} ({format_change(change.ratio)} {interval_text(interval)})"
    return f"{format_percent(abs(change.ratio - 1.0) * 100, signed=False)} {bounds} {word}"


def cell_text(cell: Cell, *, with_settle: bool = False) -> str:
    """Any cell but a Quantity (see column_texts) as text."""
    if cell is None:
        return ""
    if isinstance(cell, str):
        return cell
    if isinstance(cell, Name):
        return cell.text
    if isinstance(cell, Change):
        return change_text(cell)
    if isinstance(cell, Interval):
        return interval_text(cell)
    if isinstance(cell, VerdictCell):
        return verdict_text(cell, with_settle=with_settle)
    return _quantity_alone(cell)


def _quantity_alone(cell: Quantity) -> str:
    texts, symbol = format_column([(cell.value, cell.fractional)], cell.unit)
    return f"{texts[0]} {symbol}".rstrip()


def column_texts(
    cells: Sequence[Cell], *, with_settle: bool = False, scale_with: Sequence[float] = ()
) -> tuple[list[str], str]:
    """A column's cells as text, and the unit its header names: the quantities of a column in
    one unit are numbers in one scale ("1.34", "0.677" and "ms"), chosen from their values
    and ``scale_with`` (those of the columns that share its scale). A column mixing units
    keeps the unit in every cell."""
    texts = [cell_text(cell, with_settle=with_settle) for cell in cells]
    indexes = [i for i, cell in enumerate(cells) if isinstance(cell, Quantity)]
    quantities = [cell for cell in cells if isinstance(cell, Quantity)]
    if len({q.unit for q in quantities}) != 1:
        return texts, ""
    numbers, symbol = format_column(
        [(q.value, q.fractional) for q in quantities], quantities[0].unit, scale_with
    )
    for index, text in zip(indexes, numbers, strict=True):
        texts[index] = text
    return texts, symbol


def table_texts(table: Table, *, with_settle: bool = False) -> list[tuple[list[str], str]]:
    """Each column's texts and unit (column_texts), the columns that name the same ``scale``
    in one unit chosen from all their values."""
    columns = [[row.cells[i] for row in table.rows] for i in range(len(table.columns))]
    shared: dict[str, list[float]] = {}
    for column, cells in zip(table.columns, columns, strict=True):
        if column.scale is not None:
            shared.setdefault(column.scale, []).extend(
                cell.value for cell in cells if isinstance(cell, Quantity)
            )
    return [
        column_texts(
            cells,
            with_settle=with_settle,
            scale_with=shared.get(column.scale, []) if column.scale is not None else (),
        )
        for column, cells in zip(table.columns, columns, strict=True)
    ]


def has_missing_interval(cells: Sequence[Cell]) -> bool:
    return any(
        isinstance(c, Interval) and not (math.isfinite(c.low) and math.isfinite(c.high))
        for c in cells
    )
