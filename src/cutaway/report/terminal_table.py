"""A report Table (report/sections.py) drawn as lines of styled text, cells never wrapped.

Every cell is one line, so the table is laid out here rather than by rich's Table (which wraps
or cuts cells to fit): columns are as wide as their widest cell, two spaces apart, with the
unit of each column of values named once, under its name. A column that names groups prints
each name once; when the table is wider than the terminal, those names move to rows of their
own above their group, so no name is ever cut; and when it is still too wide, its columns are
split into several tables that each fit (a table of variants side by side becomes a few, each
with some of the variants), so that no row is ever wrapped. Only a text wider than the terminal
by itself (a phase or function name of hundreds of characters) is cut to fit, ending in "…";
the exports keep it whole."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from rich.cells import cell_len

from cutaway.model import Verdict
from cutaway.report.cell_text import table_texts
from cutaway.report.sections import Align, Row, Table, VerdictCell
from cutaway.report.styled_text import StyledText
from cutaway.visible import display, visible

GAP = "  "
INDENT = "  "  # rows under a group name of their own
NARROWEST_CUT = 12  # a text cut to fit keeps at least this many cells
ELLIPSIS = "…"

VERDICT_STYLES: Mapping[Verdict, str] = {
    Verdict.REGRESSED: "bold red",
    Verdict.IMPROVED: "bold green",
    Verdict.EQUIVALENT: "dim",
    Verdict.INCONCLUSIVE: "yellow",
}


def draw_table(table: Table, width: int) -> list[StyledText]:
    """The table's lines: header, units (when a column has one), rule, rows. A table wider
    than ``width`` first moves its group names to rows of their own; if still too wide, its
    columns are split into several tables that each fit, every one led by the column(s) that
    say what a row is about (the variant, metric or percentile). A row is never wrapped."""
    texts, units = [], []
    for column, unit in table_texts(table):
        # A cell or header may be a variant's name, of any length: cut short (cutaway.visible).
        texts.append([visible(display(text)) for text in column])
        units.append(visible(unit))
    lines = _fitted(table, texts, units, range(len(table.columns)), width)
    if _width_of(lines) > width and len(table.columns) > 2:
        lines = _split(table, texts, units, width)
    names = [visible(display(column.name)) for column in table.columns]
    cut = max(cell_len(text) for text in [*names, *(t for column in texts for t in column)])
    while _width_of(lines) > width and cut > NARROWEST_CUT:
        # Split as far as it goes and still too wide: some text is wider than the terminal by
        # itself. Cut the widest texts a little more each time until the table fits.
        cut = max(NARROWEST_CUT, cut - max(1, _width_of(lines) - width))
        texts = [[_cut_to(text, cut) for text in column] for column in texts]
        columns = tuple(
            dataclasses.replace(column, name=_cut_to(name, cut))
            for column, name in zip(table.columns, names, strict=True)
        )
        table = dataclasses.replace(table, columns=columns)
        lines = _fitted(table, texts, units, range(len(table.columns)), width)
        if _width_of(lines) > width and len(table.columns) > 2:
            lines = _split(table, texts, units, width)
    for line in lines:
        line.no_wrap = True  # printed whole, never wrapped (terminal.py)
    return lines


def _cut_to(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` terminal cells, ending in an ellipsis when cut."""
    if cell_len(text) <= cells:
        return text
    kept = text[: cells - 1]
    while cell_len(kept) > cells - 1:  # wide characters take two cells
        kept = kept[:-1]
    return kept + ELLIPSIS


def _fitted(
    table: Table,
    texts: Sequence[Sequence[str]],
    units: Sequence[str],
    shown: Sequence[int],
    width: int,
) -> list[StyledText]:
    """The columns ``shown`` as lines; with the group names on rows of their own when that
    is what makes them fit."""
    lines = _lines(table, texts, units, shown, grouped=False)
    if table.columns[0].group and len(shown) > 1 and _width_of(lines) > width:
        lines = _lines(table, texts, units, shown, grouped=True)
    return lines


def _width_of(lines: Sequence[StyledText]) -> int:
    return max(cell_len(line.plain) for line in lines)


def _split(
    table: Table, texts: Sequence[Sequence[str]], units: Sequence[str], width: int
) -> list[StyledText]:
    """The table as the fewest tables that each fit in ``width``, one under the other and a
        blank line apart, each led by the first column (and the second, when the first names
        groups: "variant" and "metric") and as many of the next columns as the others (4 variants
        side by side: 2 and 2, not 3 and 1), never parting a column from those that follow it; a
    column each when nothing narrower fits."""
    lead = [0, 1] if table.columns[0].group and len(table.columns) > 3 else [0]
    units_of_columns = _column_units(table, len(lead))
    tables: list[list[StyledText]] = []
    for count in range(1, len(units_of_columns) + 1):
        size = math.ceil(len(units_of_columns) / count)
        parts = [
            [*lead, *(i for unit in units_of_columns[start : start + size] for i in unit)]
            for start in range(0, len(units_of_columns), size)
        ]
        fitting = _parts_that_fit(table, texts, units, parts, width)
        if fitting is not None:
            tables = fitting
            break
    if not tables:  # nothing fits, not even one each: each part as narrow as it gets
        tables = [_fitted(table, texts, units, [*lead, *unit], width) for unit in units_of_columns]
    lines: list[StyledText] = []
    for part_lines in tables:
        if lines:
            lines.append(StyledText(""))
        lines += part_lines
    return lines


def _column_units(table: Table, first: int) -> list[list[int]]:
    """The columns from ``first`` on, each with those that follow it (Column.follows): what
    a split keeps together."""
    units: list[list[int]] = []
    for index in range(first, len(table.columns)):
        if table.columns[index].follows and units:
            units[-1].append(index)
        else:
            units.append([index])
    return units


def _parts_that_fit(
    table: Table,
    texts: Sequence[Sequence[str]],
    units: Sequence[str],
    parts: Sequence[Sequence[int]],
    width: int,
) -> list[list[StyledText]] | None:
    """Each part's lines, all in one layout (so that they read alike), when they all fit."""
    for grouped in (False, True) if table.columns[0].group else (False,):
        tables = [_lines(table, texts, units, part, grouped=grouped) for part in parts]
        if all(_width_of(lines) <= width for lines in tables):
            return tables
    return None


def _lines(
    table: Table,
    texts: Sequence[Sequence[str]],
    units: Sequence[str],
    shown: Sequence[int],
    *,
    grouped: bool,
) -> list[StyledText]:
    """The lines of the columns ``shown`` (indexes, the first column first); ``grouped``
    moves the first column's names to rows of their own."""
    columns = list(shown[1:]) if grouped else list(shown)
    headers = [visible(display(table.columns[i].name)) for i in columns]  # a variant's, maybe
    if grouped:
        headers[0] = f"{table.columns[0].name} / {headers[0]}"
    widths = [
        max(
            cell_len(headers[n]),
            cell_len(units[i]),
            *(cell_len(t) + (len(INDENT) if grouped and n == 0 else 0) for t in texts[i]),
        )
        for n, i in enumerate(columns)
    ]
    aligns = [table.columns[i].align for i in columns]
    header_style = "bold" if table.primary else "dim"
    lines = [_join([StyledText(h, style=header_style) for h in headers], widths, aligns)]
    if any(units[i] for i in columns):
        lines.append(_join([StyledText(units[i], style="dim") for i in columns], widths, aligns))
    lines.append(StyledText("─" * (sum(widths) + len(GAP) * (len(widths) - 1)), style="dim"))
    for index, row in enumerate(table.rows):
        if grouped and _starts_group(table, index):
            lines.append(StyledText(texts[0][index], style="bold" if row.strong else ""))
        cells = [_cell(table, row, index, i, texts[i][index]) for i in columns]
        if grouped:
            cells[0] = StyledText(INDENT) + cells[0]
        lines.append(_join(cells, widths, aligns))
        if row.end_group and index < len(table.rows) - 1:
            lines.append(StyledText(""))
    return lines


def _join(
    cells: Sequence[StyledText], widths: Sequence[int], aligns: Sequence[Align]
) -> StyledText:
    line = StyledText()
    for n, (cell, width, align) in enumerate(zip(cells, widths, aligns, strict=True)):
        padding = " " * (width - cell_len(cell.plain))
        if n:
            line.append(GAP)
        if align is Align.RIGHT:
            line.append(padding)
        line.append_text(cell)
        if align is Align.LEFT and n < len(cells) - 1:
            line.append(padding)
    line.rstrip()
    return line


def _starts_group(table: Table, index: int) -> bool:
    if index == 0:
        return True
    previous = table.rows[index - 1]
    return previous.end_group or previous.cells[0] != table.rows[index].cells[0]


def _cell(table: Table, row: Row, index: int, column: int, text: str) -> StyledText:
    cell = row.cells[column]
    if table.columns[column].group and not _starts_group(table, index):
        return StyledText("")
    if isinstance(cell, VerdictCell):
        return StyledText(text, style=VERDICT_STYLES[cell.verdict])
    return StyledText(text, style="bold" if row.strong and column < 2 else "")
