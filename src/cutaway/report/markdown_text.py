"""The pieces of GitHub-flavoured Markdown every Markdown report is built from, safe for any
user text: code spans that no backtick can end, escaped prose, and tables.

Whatever a name holds (backticks, "<script>", newlines, pipes, escape sequences), it stays
text: a code span's delimiter is longer than any run of backticks in it, newlines fold to
spaces, control characters are written as escapes, and prose escapes every character that could
start Markdown or HTML."""

from __future__ import annotations

import re
from collections.abc import Sequence

from cutaway.visible import display, visible

_BACKTICKS = re.compile("`+")
_NEWLINES = re.compile("\r\n|\r|\n")
# What can start code, emphasis, HTML, an entity, strikethrough or an inline link anywhere in a
# line: backslashes, backticks, "*", "<", ">", "&", "~", "_" at a word's edge (inside a word
# it emphasizes nothing), and "]" before "(" (CommonMark lets a backslash escape any of them).
_PUNCTUATION = re.compile(r"([\\`*<>&~]|(?<!\w)_|_(?!\w)|\](?=\())")


def _fold(text: str) -> str:
    return visible(_NEWLINES.sub(" ", text))


def code(name: str) -> str:
    """``name`` as an inline code span that nothing inside it can end or break, cut short
    when it is of megabytes (cutaway.visible.display)."""
    text = _fold(display(name))
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    # A space on each side keeps a leading or trailing backtick out of the fence; a span that
    # starts and ends with a space loses one of each when rendered.
    padding = " " if longest or text.startswith(" ") or text.endswith(" ") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def escape(text: str) -> str:
    """Prose that Markdown shows as written: no emphasis, link, HTML or list from it."""
    return _PUNCTUATION.sub(r"\\\1", _fold(text))


def _cell(text: str) -> str:
    # A pipe ends a table cell even inside a code span; a newline ends the row.
    return text.replace("|", "\\|").replace("\n", " ")


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def table(header: Sequence[str], alignments: str, rows: Sequence[Sequence[str]]) -> list[str]:
    """A GitHub table; ``alignments`` has one letter per column: l(eft) or r(ight)."""
    rule = "|" + "|".join("---:" if align == "r" else ":---" for align in alignments) + "|"
    return [_row(header), rule, *(_row(row) for row in rows)]
