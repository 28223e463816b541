"""A terminal table never outgrows the terminal: columns move and split first (no name cut
where splitting suffices), and only a text wider than the terminal by itself (a phase named
after a 100,000-character URL, a variant name of hundreds of characters) is cut, with "…"."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

import cutaway.report  # noqa: F401  (before a probe's sections: they import each other)
from cutaway.report.sections import Align, Column, Row, Table
from cutaway.report.terminal_table import draw_table

HUGE = "/search?q=" + "x" * 100_000
WIDE = "名前" * 150  # two cells per character


def _table(first: str, header: str) -> Table:
    columns = (Column("phase"), Column(header, Align.RIGHT), Column("b", Align.RIGHT))
    rows = (
        Row((first, "1.5 ms", "1.6 ms")),
        Row(("connect", "0.2 ms", "0.2 ms")),
    )
    return Table(None, columns, rows)


@pytest.mark.parametrize("width", [40, 80, 100])
@pytest.mark.parametrize(("first", "header"), [(HUGE, "a"), (WIDE, "a"), ("read", "v" * 300)])
def test_every_line_fits_and_the_cut_text_says_so(first: str, header: str, width: int) -> None:
    lines = [line.plain for line in draw_table(_table(first, header), width)]
    assert max(cell_len(line) for line in lines) <= width
    text = "\n".join(lines)
    assert "…" in text
    assert "connect" in text and "0.2 ms" in text and "1.6 ms" in text  # nothing else lost
    assert first[:5] in text


def test_a_table_that_fits_by_splitting_cuts_nothing() -> None:
    name = "a-long-variant-name-" * 3  # 60 characters: a column of its own fits in 80
    columns = (Column("metric"), *(Column(f"{name}{n}", Align.RIGHT) for n in range(3)))
    table = Table(None, columns, (Row(("wall", "1 ms", "2 ms", "3 ms")),))
    lines = [line.plain for line in draw_table(table, 80)]
    assert max(cell_len(line) for line in lines) <= 80
    assert "…" not in "\n".join(lines) and all(f"{name}{n}" in "\n".join(lines) for n in range(3))
