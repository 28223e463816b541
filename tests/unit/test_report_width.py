"""The terminal report's width: a table too wide for it is split into tables that each fit,
every one led by what its rows are about, and no row is ever wrapped; a table that fits is
one table."""

from __future__ import annotations

import re

import pytest
from test_reports import MATRIX_VARIANTS, matrix

from cutaway.report import render_terminal
from cutaway.report.sections import Align, Column, Name, Quantity, Row, Table
from cutaway.report.terminal import render_blocks

SGR = re.compile(r"\x1b\[[0-9;]*m")
MEDIANS = {"wall": ("83.7 ms", "116 ms", "84.1 ms", "73.2 ms"), "block_out": ("95.5", "104.0")}


def _medians_tables(text: str) -> list[list[str]]:
    """Each table of medians in a compact report: its lines, header first."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("median ")]
    tables = []
    for start in starts:
        end = next(i for i in range(start, len(lines)) if not lines[i] or ": " in lines[i])
        tables.append(lines[start:end])
    return tables


@pytest.mark.parametrize("color", [False, True], ids=["plain", "ansi"])
def test_four_variants_at_100_columns_make_tables_that_each_fit(color: bool) -> None:
    text = SGR.sub("", render_terminal(matrix(), color=color, width=100))
    assert max(len(line) for line in text.splitlines() if "─" in line or "  " in line) <= 100
    tables = _medians_tables(text)
    assert len(tables) == 2
    for table in tables:
        assert all(len(line) <= 100 for line in table)
        # Every row whole: the metric, then a value for each variant of this table's header.
        variants = table[0].split()[1:]
        assert len(variants) == 2
        for row in table[2:]:
            metric, *values = re.split(r"\s{2,}", row)
            assert metric in MEDIANS and len(values) == len(variants), row
    headers = [name for table in tables for name in table[0].split()[1:]]
    assert headers == list(MATRIX_VARIANTS)  # in order, each once


def test_four_variants_at_220_columns_are_one_table() -> None:
    text = render_terminal(matrix(), color=False, width=220)
    (table,) = _medians_tables(text)
    assert table[0].split()[1:] == list(MATRIX_VARIANTS)
    medians_and_ranges = r"83\.7 ms \(75\.7…105\)\s+116 ms \(105…146\)\s+84\.1 ms \(76\.1…106\)"
    assert re.fullmatch(rf"wall\s+{medians_and_ranges}\s+73\.2 ms \(66\.2…92\.0\)", table[2])


def test_a_column_wider_than_the_width_by_itself_is_cut_to_fit() -> None:
    wide = "x" * 70
    table = Table(
        None,
        (Column("variant"), Column(wide, Align.RIGHT), Column("b", Align.RIGHT)),
        (Row((Name("v"), Quantity(1.0, "count"), Quantity(2.0, "count"))),),
    )
    lines = render_blocks([(table,)], color=False, width=50).splitlines()
    # Two tables, one column each beside the variant; the wide name is cut to the width.
    assert lines[0] == f"variant  {wide[:40]}…" and len(lines[0]) == 50
    assert re.fullmatch(r"v\s+1", lines[2])
    assert lines[3] == ""
    assert lines[4].split() == ["variant", "b"] and lines[6].split() == ["v", "2"]


def test_a_verdict_table_split_keeps_the_variant_and_metric_in_each_part() -> None:
    text = render_terminal(matrix(), color=False, width=44)
    verdicts = text[text.index("variant") : text.index("to settle")]
    parts = verdicts.strip().split("\n\n")
    assert len(parts) == 3  # change, interval, verdict: one each beside variant and metric
    for part in parts:
        lines = part.splitlines()
        assert lines[0].startswith("variant / metric") and all(len(x) <= 44 for x in lines)
        rows = [line for line in lines[2:] if line.startswith("  ")]
        assert [row.split()[0] for row in rows] == ["wall", "block_out"] * 3
    assert "regressed" in parts[2] and "+38.4 %" in parts[0] and "[+37.3 %" in parts[1]


def test_a_split_keeps_each_variant_with_the_columns_that_follow_it() -> None:
    variants = ("first-variant", "second-variant", "third-variant", "fourth-variant")
    columns = [Column("phase")]
    for variant in variants:
        columns += [Column(variant, Align.RIGHT), Column("share", Align.RIGHT, follows=True)]
    cells = [cell for n in range(4) for cell in (Quantity(n + 1.0, "count"), f"{n}0 %")]
    table = Table(None, tuple(columns), (Row(("search", *cells)),))
    parts = render_blocks([(table,)], color=False, width=70).split("\n\n")
    assert [part.splitlines()[0].split() for part in parts] == [
        ["phase", "first-variant", "share", "second-variant", "share"],
        ["phase", "third-variant", "share", "fourth-variant", "share"],
    ]
    assert parts[1].splitlines()[2].split() == ["search", "3", "20", "%", "4", "30", "%"]
    # Narrower than two variants: one each with its share, never a share apart from it.
    parts = render_blocks([(table,)], color=False, width=50).split("\n\n")
    assert [part.splitlines()[0].split() for part in parts] == [
        ["phase", variant, "share"] for variant in variants
    ]
