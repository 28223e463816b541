"""The pieces of GitHub-flavoured Markdown every Markdown table of cutaway is built from: code
spans, escaped cells, tables and verdict words. Shared by markdown.py (process metrics) and
markdown_calls.py (the calls probe), so both escape and word things the same way."""

from __future__ import annotations

from collections.abc import Sequence

from cutaway.model import Comparison, Verdict

STRONG_VERDICTS = (Verdict.REGRESSED, Verdict.IMPROVED)


def code(name: str) -> str:
    """``name`` as an inline code span, fenced so that a backtick inside it cannot end it."""
    fence = "``" if "`" in name else "`"
    padding = " " if "`" in name else ""
    return f"{fence}{padding}{name}{padding}{fence}"


def _cell(text: str) -> str:
    # A pipe ends a table cell even inside a code span; a newline ends the row.
    return text.replace("|", "\\|").replace("\n", " ")


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def table(header: Sequence[str], alignments: str, rows: Sequence[Sequence[str]]) -> list[str]:
    """A GitHub table; ``alignments`` has one letter per column: l(eft) or r(ight)."""
    rule = "|" + "|".join("---:" if align == "r" else ":---" for align in alignments) + "|"
    return [_row(header), rule, *(_row(row) for row in rows)]


def verdict_words(comparison: Comparison) -> str:
    """The verdict, with the rounds that would settle an inconclusive one."""
    words = comparison.verdict.value
    if comparison.verdict is Verdict.INCONCLUSIVE and comparison.rounds_to_settle is not None:
        words += f" (≈{comparison.rounds_to_settle} rounds to settle)"
    return words


def verdict_cell(comparison: Comparison) -> str:
    """The verdict words, bold when something changed for sure."""
    words = verdict_words(comparison)
    return f"**{words}**" if comparison.verdict in STRONG_VERDICTS else words
