"""Columns of one quantity side by side read in one unit: a row of the profile's function
table never says "3.17 ms" in one variant's column and "4,338 µs" in the other's, in any
human format."""

from __future__ import annotations

from analyses import generated_analysis, with_profile

import cutaway.report  # noqa: F401  (before a probe's sections: they import each other)
from cutaway.model import Analysis, FunctionWeight
from cutaway.probes.profile.sections import functions_block
from cutaway.report.cell_text import table_texts
from cutaway.report.html import elements
from cutaway.report.sections import Align, Column, Quantity, Row, Table
from cutaway.report.terminal_table import draw_table

# Alone, the few column would read in µs (its smallest value is 200 µs) and the many column
# in ms (its smallest is 1.2 ms).
WEIGHTS = {"few": (3.17e-3, 2e-4), "many": (4.338e-3, 1.2e-3)}


def _analysis() -> Analysis:
    weights = [
        FunctionWeight(variant, "on-cpu", function, "seconds", value, value, 0.1, 0.1)
        for variant, values in WEIGHTS.items()
        for function, value in zip(("busy", "idle"), values, strict=True)
    ]
    return with_profile(generated_analysis(tuple(WEIGHTS), 3), profile_functions=tuple(weights))


def _table() -> Table:
    (table,) = functions_block(_analysis(), "on-cpu", inclusive=False)
    assert isinstance(table, Table)
    return table


def test_the_variants_columns_of_the_profile_table_share_one_unit() -> None:
    texts = table_texts(_table())
    few, many = texts[1], texts[3]
    # One unit for both: the one each column alone would take at its smallest value.
    assert few[1] == many[1] == "µs"
    assert few[0] == ["3,170", "200"] and many[0] == ["4,338", "1,200"]


def test_terminal_and_html_show_the_shared_unit() -> None:
    terminal = "\n".join(line.plain for line in draw_table(_table(), 100))
    assert "ms" not in terminal and terminal.count("µs") == 2
    page = elements.table(_table())
    assert "ms<" not in page and page.count('<span class="unit">µs</span>') == 2


def test_columns_without_a_shared_scale_keep_their_own_unit() -> None:
    columns = (Column("a", Align.RIGHT), Column("b", Align.RIGHT))
    rows = (Row((Quantity(3.17e-3, "seconds"), Quantity(4.338e-3, "seconds"))),
            Row((Quantity(2e-4, "seconds"), Quantity(1.2e-3, "seconds"))))  # fmt: skip
    (_, a_unit), (_, b_unit) = table_texts(Table(None, columns, rows))
    assert (a_unit, b_unit) == ("µs", "ms")  # a table of different quantities may differ
