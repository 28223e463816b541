"""Any format-neutral section (report/sections.py) as HTML, drawn the same generic way for
every view, as the other formats draw them.

Every piece of text goes through ``text()``: control characters become visible escapes (as in
the terminal), then ``&``, ``<``, ``>`` and both quotes become character references, so that no
name can open an element, close one, or leave an attribute. Nothing from the data is ever
written unescaped; class names come only from cutaway's own enums.

Every text from the data is clipped as the terminal clips it (cutaway.visible.display): a name
or a table's cell to DISPLAY_CHARACTERS, prose and recorded values to PROSE_CHARACTERS, each
followed by how many characters were left out. A 5 MB variant name would otherwise be written
in every table it has a row in; the JSON and CSV exports keep the full text."""

from __future__ import annotations

import html
from collections.abc import Sequence

from cutaway.report.cell_text import (
    NO_INTERVAL_NOTE,
    has_missing_interval,
    table_texts,
)
from cutaway.report.sections import (
    Align,
    Block,
    Change,
    Details,
    Facts,
    Heading,
    Inline,
    Interval,
    Line,
    Name,
    Quantity,
    Section,
    Table,
    VerdictCell,
)
from cutaway.visible import PROSE_CHARACTERS, display, visible


def text(value: str) -> str:
    """User or cutaway text as HTML text or an attribute's value: shown, never interpreted."""
    return html.escape(visible(value), quote=True)


def name(value: str) -> str:
    """A name (a variant's, a metric's, a function's) as code, clipped."""
    return f'<code class="name">{text(display(value))}</code>'


def prose(value: str) -> str:
    """A piece of a line, a fact or a record, which may quote a user's or a program's text."""
    return text(display(value, PROSE_CHARACTERS))


def inline(parts: Sequence[Inline]) -> str:
    return "".join(name(p.text) if isinstance(p, Name) else prose(p) for p in parts)


def block(sections: Block) -> str:
    return "\n".join(section(s) for s in sections)


def section(s: Section) -> str:
    if isinstance(s, Heading):
        return heading(s)
    if isinstance(s, Line):
        return f'<p class="line tone-{s.tone.value}">{inline(s.parts)}</p>'
    if isinstance(s, Facts):
        items = "".join(f"<li>{inline(item)}</li>" for item in s.items)
        return f'<ul class="facts tone-{s.tone.value}">{items}</ul>'
    if isinstance(s, Table):
        return table(s)
    return details(s)


def heading(s: Heading, level: int = 3) -> str:
    return f"<h{level}>{inline(s.parts)}{_detail(s)}</h{level}>"


def _detail(s: Heading) -> str:
    return f'<span class="detail">{inline(s.detail)}</span>' if s.detail else ""


def details(s: Details) -> str:
    rows = "".join(f"<tr><th>{prose(k)}</th><td>{prose(v)}</td></tr>" for k, v in s.pairs)
    return (
        f'<details class="record"><summary>{prose(s.title)}</summary>'
        f'<table class="pairs">{rows}</table></details>'
    )


def table(s: Table, *, caption: bool = True) -> str:
    """A table with one unit per column under its name, as every human format writes it;
    verdicts carry their verdict as a class (coloured by the style sheet)."""
    texts_units = table_texts(s, with_settle=True)
    head = "".join(
        f'<th class="{_align(c.align)}">{text(display(c.name))}'
        + (f'<span class="unit">{text(unit)}</span>' if unit else "")
        + "</th>"
        for c, (_, unit) in zip(s.columns, texts_units, strict=True)
    )
    body = []
    for index, row in enumerate(s.rows):
        classes = [c for c, on in (("strong", row.strong), ("end-group", row.end_group)) if on]
        verdict = next((c for c in row.cells if isinstance(c, VerdictCell)), None)
        if verdict is not None:
            classes.append(f"row-{verdict.verdict.value}")
        cells = "".join(
            _cell(cell, texts_units[i][0][index], s.columns[i].align)
            for i, cell in enumerate(row.cells)
        )
        attribute = f' class="{" ".join(classes)}"' if classes else ""
        body.append(f"<tr{attribute}>{cells}</tr>")
    title = ""
    if caption and s.title is not None:
        title = f'<h4 class="table-title">{inline(s.title.parts)}{_detail(s.title)}</h4>'
    note = ""
    if has_missing_interval([cell for row in s.rows for cell in row.cells]):
        note = f'<p class="line tone-dim">{text(NO_INTERVAL_NOTE)}</p>'
    kind = " primary" if s.primary else ""
    return (
        f'{title}<div class="table-wrap"><table class="data{kind}"><thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table></div>{note}"
    )


def _align(align: Align) -> str:
    return "num" if align is Align.RIGHT else "txt"


def _cell(cell: object, cell_text: str, align: Align) -> str:
    css = _align(align)
    if isinstance(cell, Name):
        return f'<td class="{css}">{name(cell.text)}</td>'
    if isinstance(cell, VerdictCell):
        value = cell.verdict.value
        return f'<td class="{css}"><span class="verdict v-{value}">{text(cell_text)}</span></td>'
    if isinstance(cell, Change | Interval | Quantity):
        return f'<td class="{css}">{text(cell_text)}</td>'
    # Any other cell's text may hold a name ("new vs old"): clipped as the terminal's cells.
    return f'<td class="{css}">{text(display(cell_text))}</td>'
