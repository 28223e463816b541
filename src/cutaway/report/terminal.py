"""The terminal report: any Report (report/layout.py) drawn section by section, with rich when
in colour, as plain text by report/styled_text.py otherwise (rich's console is not imported).

Every piece of text becomes a StyledText (rich's Text, when in colour), never markup, so a
name like "[red]x[/red]" prints as itself; control characters (an escape sequence in a variant
name) are shown escaped ("\\x1b"), never emitted. Tables keep their cells on one line: a column
of values takes one unit, a column that names groups prints each name once, and an
inconclusive verdict's advice and an interval that cannot be computed are said once under the
table."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from cutaway.model import Analysis
from cutaway.report.cell_text import NO_INTERVAL_NOTE, has_missing_interval, settle_advice
from cutaway.report.layout import build_report
from cutaway.report.sections import (
    Block,
    Details,
    Facts,
    Heading,
    Inline,
    Line,
    Name,
    Section,
    Table,
    Tone,
)
from cutaway.report.styled_text import StyledText, plain_lines
from cutaway.report.terminal_table import VERDICT_STYLES as VERDICT_STYLES
from cutaway.report.terminal_table import draw_table
from cutaway.visible import PROSE_CHARACTERS, display, visible

TONE_STYLES: Mapping[Tone, str] = {
    Tone.PLAIN: "",
    Tone.STRONG: "bold",
    Tone.DIM: "dim",
    Tone.WARNING: "yellow",
}


def render_terminal(
    analysis: Analysis, *, color: bool, width: int = 100, all_metrics: bool = False
) -> str:
    """The report as a terminal shows it, ``width`` columns wide. With ``color`` false it is
    plain text without a single escape code (for files, pipes and NO_COLOR). Only the metrics
    that changed have a table, unless ``all_metrics``."""
    report = build_report(analysis, all_metrics=all_metrics)
    return render_blocks(
        [*report.header, *report.body, report.conclusion], color=color, width=width
    )


def render_blocks(blocks: Sequence[Block], *, color: bool, width: int = 100) -> str:
    """Blocks of sections as a terminal shows them (see :func:`render_terminal`)."""
    printed: list[list[StyledText]] = []
    for block in blocks:
        lines = [line for section in block for line in _section(section, width)]
        if lines:
            printed.append(lines)
    text = _in_color(printed, width) if color else _plain(printed, width)
    # Tables pad their cells to the table's width; trailing blanks only bother diffs and editors.
    return "".join(line.rstrip(" ") + "\n" for line in text.splitlines())


def _plain(blocks: Sequence[Sequence[StyledText]], width: int) -> str:
    """The blocks a blank line apart, as rich prints them without colour."""
    printed = (
        "".join(line + "\n" for text in block for line in plain_lines(text, width))
        for block in blocks
    )
    return "\n".join(printed)


def _in_color(blocks: Sequence[Sequence[StyledText]], width: int) -> str:
    """The blocks a blank line apart, printed by rich with their styles."""
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=True,
        no_color=False,
        color_system="standard",
        width=width,
        markup=False,
        emoji=False,
        highlight=False,
        force_jupyter=False,
        force_interactive=False,
        legacy_windows=False,
        _environ={},  # the same Analysis must render the same way whatever the environment
    )
    for index, block in enumerate(blocks):
        if index:
            console.print()
        for text in block:
            if text.no_wrap:
                # A table's line, laid out to fit already: wrapping it would break the row.
                console.print(text.to_rich(), no_wrap=True, overflow="ignore", crop=False)
            else:
                console.print(text.to_rich())
    return buffer.getvalue()


def _text(parts: Sequence[Inline], style: str = "", name_style: str = "") -> StyledText:
    text = StyledText(style=style)
    for part in parts:
        if isinstance(part, Name):  # a name of megabytes is cut short, as messages cut it
            text.append(visible(display(part.text)), style=name_style or style)
        else:  # prose, which may quote a user's or a program's text: clipped as HTML clips it
            text.append(visible(display(part, PROSE_CHARACTERS)))
    return text


def _section(section: Section, width: int) -> list[StyledText]:
    if isinstance(section, Heading):
        return [_heading(section)]
    if isinstance(section, Line):
        return [_text(section.parts, TONE_STYLES[section.tone], "cyan")]
    if isinstance(section, Facts):
        return _facts(section, width)
    if isinstance(section, Table):
        return _table(section, width)
    if isinstance(section, Details):
        return []  # for the record: the exports keep it, a screen has no room for it
    raise TypeError(f"unknown section {section!r}")


def _heading(heading: Heading) -> StyledText:
    text = _text(heading.parts, "bold", "bold cyan")
    text.append_text(_text(heading.detail, "dim"))
    return text


def _facts(facts: Facts, width: int) -> list[StyledText]:
    """Facts joined by " · ", broken between facts rather than inside one where they fit."""
    lines: list[StyledText] = []
    for fact in (_text(item, "", "cyan") for item in facts.items):
        if lines and lines[-1].cell_len + len(" · ") + fact.cell_len <= width:
            lines[-1].append(" · ")
            lines[-1].append_text(fact)
        else:
            lines.append(fact)
    style = TONE_STYLES[facts.tone]
    for line in lines:
        line.stylize(style) if style else None
    return list(lines)


def _table(table: Table, width: int) -> list[StyledText]:
    out: list[StyledText] = [] if table.title is None else [_heading(table.title)]
    return [*out, *draw_table(table, width), *_footnotes(table)]


def _footnotes(table: Table) -> list[StyledText]:
    cells = [cell for row in table.rows for cell in row.cells]
    notes: list[StyledText] = []
    if has_missing_interval(cells):
        notes.append(StyledText(NO_INTERVAL_NOTE, style="dim"))
    advice = settle_advice(cells)
    if advice is not None:
        notes.append(StyledText(visible(f"to settle the inconclusive: {advice}"), style="dim"))
    return notes
