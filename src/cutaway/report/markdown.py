"""The Markdown report, to paste into a pull request: any Report (report/layout.py) drawn as
GitHub-flavoured Markdown. What shows is what a reviewer reads first: the experiment's title,
the conclusion, then the compact report's tables (verdicts, one table of medians, the probes'
answers) and cautions; every metric's full table and the experiment's facts and environment
follow folded in <details>, so that an export still keeps everything.

Plain Markdown: no emoji, no HTML but <details>, tables that read as text too. Every name is a
code span and every other piece of text is escaped (markdown_text.py): user text stays text."""

from __future__ import annotations

from collections.abc import Sequence

from cutaway.model import Analysis, Verdict
from cutaway.report.cell_text import NO_INTERVAL_NOTE, has_missing_interval, table_texts
from cutaway.report.layout import build_report
from cutaway.report.markdown_text import code, escape, table
from cutaway.report.sections import (
    Align,
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
    VerdictCell,
)
from cutaway.report.views import cautions_block, conclusion_block
from cutaway.visible import PROSE_CHARACTERS, display

STRONG_VERDICTS = (Verdict.REGRESSED, Verdict.IMPROVED)


def render_markdown(analysis: Analysis) -> str:
    """The Markdown report: blocks separated by blank lines, ending with a newline."""
    compact = build_report(analysis)
    full = build_report(analysis, all_metrics=True)
    titles = [_title(block) for block in full.header]
    blocks: list[list[str]] = [[title] for title in titles if title]
    blocks.append(_block(conclusion_block(analysis)))  # the answer, then its evidence
    blocks += [_block(block) for block in compact.body]
    blocks.append(_block(cautions_block(analysis)))
    every_metric = [_block(block) for block in full.body]
    blocks.append(_folded("Every metric", every_metric))
    facts = [_block(_without_title(block)) for block in full.header]
    blocks.append(_folded("Experiment and environment", facts))
    return "\n\n".join("\n".join(block) for block in blocks if block) + "\n"


def _title(block: Block) -> str | None:
    """A header block's heading as a Markdown heading, None when it has none."""
    for section in block:
        if isinstance(section, Heading):
            return f"### {_inline(section.parts)}{_inline(section.detail)}"
    return None


def _without_title(block: Block) -> Block:
    first = next((i for i, s in enumerate(block) if isinstance(s, Heading)), None)
    return block if first is None else (*block[:first], *block[first + 1 :])


def _folded(summary: str, blocks: Sequence[list[str]]) -> list[str]:
    """Blocks inside <details>: GitHub renders Markdown there after a blank line."""
    inner = [line for i, b in enumerate(x for x in blocks if x) for line in ([""] if i else []) + b]
    if not inner:
        return []
    return ["<details>", f"<summary>{escape(summary)}</summary>", "", *inner, "", "</details>"]


def render_blocks(blocks: Sequence[Block]) -> str:
    """Blocks of sections as Markdown, the first one's heading as a title."""
    rendered = [_title_block(blocks[0]), *(_block(block) for block in blocks[1:])] if blocks else []
    return "\n\n".join("\n".join(block) for block in rendered if block) + "\n"


def _inline(parts: Sequence[Inline]) -> str:
    return "".join(code(p.text) if isinstance(p, Name) else _prose(p) for p in parts)


def _prose(text: str) -> str:
    """A piece of a line, a fact or a record, which may quote a user's or a program's text:
    clipped (cutaway.visible.display), as a name is in its code span."""
    return escape(display(text, PROSE_CHARACTERS))


def _title_block(block: Block) -> list[str]:
    """A header block: its heading as a Markdown heading, the rest as usual."""
    lines: list[str] = []
    rest: list[Section] = []
    for section in block:
        if isinstance(section, Heading) and not lines:
            lines = [f"### {_inline(section.parts)}{_inline(section.detail)}"]
        else:
            rest.append(section)
    body = _block(tuple(rest))
    return [*lines, "", *body] if lines and body else lines or body


def _block(block: Block) -> list[str]:
    """Sections one after another; consecutive lines become a list (a paragraph would run
    them together), and a blank line separates anything else."""
    chunks: list[list[str]] = []
    lines = [s for s in block if isinstance(s, Line)]
    listed = len(lines) > 1
    for section in block:
        if isinstance(section, Line):
            text = _line(section)
            if listed and chunks and chunks[-1] and chunks[-1][-1].startswith("- "):
                chunks[-1].append(f"- {text}")
            else:
                chunks.append([f"- {text}" if listed else text])
        else:
            chunks.append(_section(section))
    return [
        line
        for i, chunk in enumerate(c for c in chunks if c)
        for line in ([""] if i else []) + chunk
    ]


def _line(line: Line) -> str:
    text = _inline(line.parts)
    return f"**{text}**" if line.tone is Tone.STRONG else text


def _section(section: Section) -> list[str]:
    if isinstance(section, Heading):
        return [f"**{_inline(section.parts)}**{_inline(section.detail)}"]
    if isinstance(section, Facts):
        return [" · ".join(_inline(item) for item in section.items)]
    if isinstance(section, Table):
        return _table(section)
    if isinstance(section, Details):
        rows = [[_prose(key), _prose(value)] for key, value in section.pairs]
        return [
            "<details>",
            f"<summary>{escape(section.title)}</summary>",
            "",
            *table(["key", "value"], "ll", rows),
            "",
            "</details>",
        ]
    return [_line(section)]


def _table(section: Table) -> list[str]:
    columns = range(len(section.columns))
    texts_units = table_texts(section, with_settle=True)
    texts = [t for t, _ in texts_units]
    rows = [
        [_cell(row.cells[i], texts[i][index]) for i in columns]
        for index, row in enumerate(section.rows)
    ]
    header = [
        escape(display(column.name) + (f" ({unit})" if unit else ""))  # a variant's, maybe
        for column, (_, unit) in zip(section.columns, texts_units, strict=True)
    ]
    alignments = "".join("r" if c.align is Align.RIGHT else "l" for c in section.columns)
    lines: list[str] = []
    if section.title is not None:
        lines += [_section(section.title)[0], ""]
    lines += table(header, alignments, rows)
    if has_missing_interval([cell for row in section.rows for cell in row.cells]):
        lines += ["", escape(NO_INTERVAL_NOTE)]
    return lines


def _cell(cell: object, text: str) -> str:
    if isinstance(cell, Name):
        return code(cell.text)
    if isinstance(cell, VerdictCell) and cell.verdict in STRONG_VERDICTS:
        return f"**{escape(text)}**"
    return escape(display(text))  # it may hold a name ("new vs old"), clipped as the terminal
