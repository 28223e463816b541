"""Format-neutral report sections: what a report says, without how a format draws it.

A view (report/views.py for whole-process metrics, probes/<probe>/sections.py for a probe)
builds blocks of sections from an Analysis; every human format (terminal, Markdown) draws any
block the same generic way. A new view needs no change in a format, a new format no change in
a view.

Cells keep raw values and their unit (``Quantity``, ``Change``, ``Interval``, ``VerdictCell``)
so that each format chooses how to write them, e.g. one unit per column. User text (variant,
metric and experiment names, messages) is always a ``Name`` or a plain ``str`` given as data:
no format ever interprets it as markup."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import StrEnum

from cutaway.model import LOWER_IS_BETTER, Analysis, Verdict
from cutaway.value_class import value_class


class Align(StrEnum):
    LEFT = "left"
    RIGHT = "right"


class Tone(StrEnum):
    """How strongly a line speaks; formats map it to a style (terminal) or to nothing."""

    PLAIN = "plain"
    STRONG = "strong"  # a title
    DIM = "dim"  # context: descriptions, notes
    WARNING = "warning"


@value_class
class Name:
    """A name the user chose (variant, metric, function, experiment): a code span in Markdown,
    highlighted text in a terminal; never markup."""

    text: str


Inline = str | Name  # str: cutaway's own words (which may embed user text, still as data)


@value_class
class Quantity:
    """A measured value in its metric's unit: "seconds", "bytes", "count", or the user's own
    unit ("requests/s"). ``fractional`` marks statistics that are not whole counts."""

    value: float
    unit: str | None
    fractional: bool = False


@value_class
class Change:
    """A ratio against a baseline (1.05 is 5 % more), with what it measures: its unit words a
    large change as a factor ("13.1x slower" for seconds, "3.0x more" otherwise) and ``better``
    says which way is good."""

    ratio: float
    unit: str | None
    better: str = LOWER_IS_BETTER


@value_class
class Interval:
    """A confidence interval of a ratio; formats footnote one whose bound is not finite."""

    low: float
    high: float


@value_class
class VerdictCell:
    """A verdict; an inconclusive one carries the estimate of the total rounds that would
    settle it, the rounds run so far, and the row it belongs to: what is compared
    (``subject``) and in which comparison ("B vs A"), for a format that says how to settle it
    below the table."""

    verdict: Verdict
    rounds_to_settle: int | None = None
    rounds_run: int = 0
    subject: str = ""
    comparison: str = ""


Cell = Inline | Quantity | Change | Interval | VerdictCell | None  # None: an empty cell


def count_cell(value: float) -> Cell:
    """A mean count: whole when it is one (10,011), else to three significant digits."""
    if not math.isfinite(value):
        return None
    return Quantity(value, "count", fractional=not float(value).is_integer())


@value_class
class Column:
    name: str
    align: Align = Align.LEFT
    group: bool = False  # repeats over consecutive rows: a narrow format may print it once
    # Columns of one table with the same ``scale`` share one unit (the variants' columns of one
    # quantity), so that a row never reads "3.17 ms" beside "4,338 µs".
    scale: str | None = None
    # Read with the column before it (a variant's share beside its time, a verdict beside its
    # change): a table split to fit a narrow width never puts them in different parts.
    follows: bool = False


@value_class
class Row:
    cells: tuple[Cell, ...]
    strong: bool = False  # the primary metric's rows
    end_group: bool = False  # a visual break after this row


@value_class
class Heading:
    """A title (``parts``) with an optional description (``detail``, said more quietly)."""

    parts: tuple[Inline, ...]
    detail: tuple[Inline, ...] = ()


@value_class
class Line:
    """A line of prose; a format may wrap it between words."""

    parts: tuple[Inline, ...]
    tone: Tone = Tone.PLAIN


@value_class
class Facts:
    """Short facts joined by " · " ("30 rounds completed · baseline files"), each kept whole
    on one line where it fits."""

    items: tuple[tuple[Inline, ...], ...]
    tone: Tone = Tone.PLAIN


@value_class
class Table:
    title: Heading | None
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    primary: bool = False  # the table the user asked about (drawn heavier)


@value_class
class Details:
    """Key/value pairs kept for the record (the environment): a format with room for them
    folds them away (Markdown's <details>), a terminal leaves them out."""

    title: str
    pairs: tuple[tuple[str, str], ...]


Section = Heading | Line | Facts | Table | Details
Block = tuple[Section, ...]  # drawn together; blocks are separated by a blank line


@value_class
class Report:
    """A whole report: the header, the body, and the conclusion (the answer in a sentence per
    variant), which a terminal prints last (where the eye lands) and Markdown first."""

    header: tuple[Block, ...]
    body: tuple[Block, ...]
    conclusion: Block = ()


class TablesOnly:
    """A probe's report part that adds tables only: no rows to the leading verdict table or
    the medians table (cutaway.probes.plugin.ProbeViews); subclasses give the tables."""

    def verdict_rows(self, analysis: Analysis, *, all_metrics: bool) -> list[tuple[str, Row]]:
        return []

    def verdict_notes(self, analysis: Analysis) -> list[Line]:
        return []

    def median_rows(self, analysis: Analysis, variants: Sequence[str]) -> list[Row]:
        return []


# -- figures: a chart and its numbers (report/figures.py lists the views that make them) -----

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


@value_class
class Figure:
    """One chart and its numbers. ``kind`` names the renderer ("distribution", "rounds",
    "percentiles", "bars", "attribution"); ``data`` is what it draws, in the shape that
    renderer documents; ``table`` holds the numbers the chart shows (or the ones worth
    reading off it), and ``notes`` what to know to read it."""

    kind: str
    title: Heading
    data: dict[str, JsonValue]
    table: Table | None = None
    notes: tuple[Line, ...] = ()
    detail: Table | None = None  # more numbers, folded away (every round's ratio, say)


FigureView = Callable[[Analysis], list[Figure]]
