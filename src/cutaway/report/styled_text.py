"""Styled text for the terminal report, without rich: the terminal report and its tables build
their lines from these, and rich draws them only when colour is wanted.

A report to a file, a pipe or NO_COLOR is plain text, and importing rich's console cost such a
report a tenth of its CPU time (docs/performance.md, "Start-up"). So the lines are built here,
with the few operations of rich's Text the report uses and with their exact meaning (spans are
added, moved and trimmed as rich's Text does), and :func:`plain_lines` lays out plain text the
way rich's Console prints it: words wrapped to the width by rich's own line divider (a light
module of rich, without its console), a word longer than a line folded. For colour,
:meth:`StyledText.to_rich` gives the same line as rich's Text, so both ways print the same
characters."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich._wrap import divide_line
from rich.cells import cell_len, set_cell_size

if TYPE_CHECKING:
    from rich.text import Text

# The control characters rich's Text drops from any text given to it (rich.control), dropped
# here too so that the two ways of printing a line agree. cutaway.visible has escaped every
# one of them from a user's or a program's text already.
_RICH_STRIPPED = dict.fromkeys((0x07, 0x08, 0x0B, 0x0C, 0x0D))

# rich's Console's tab stops (cutaway.visible escapes a user's tabs: only cutaway's own text
# could hold one).
TAB_SIZE = 8


class StyledText:
    """A line of text with a base style and styled spans, as rich's Text keeps them."""

    def __init__(self, text: str = "", style: str = "") -> None:
        self.plain = text.translate(_RICH_STRIPPED)
        self.style = style
        self.spans: list[tuple[int, int, str]] = []
        self.no_wrap = False  # printed whole, never wrapped (a table's line)

    def __len__(self) -> int:
        return len(self.plain)

    @property
    def cell_len(self) -> int:
        """Its width in terminal cells (a wide character takes two)."""
        return cell_len(self.plain)

    def append(self, text: str | StyledText, style: str = "") -> StyledText:
        """``text`` added at the end, styled ``style`` (a StyledText keeps its own styles)."""
        if isinstance(text, StyledText):
            return self.append_text(text) if text.plain else self
        if text:
            added = text.translate(_RICH_STRIPPED)
            if style:
                self.spans.append((len(self.plain), len(self.plain) + len(added), style))
            self.plain += added
        return self

    def append_text(self, text: StyledText) -> StyledText:
        offset = len(self.plain)
        if text.style:
            self.spans.append((offset, offset + len(text.plain), text.style))
        self.spans += [(start + offset, end + offset, style) for start, end, style in text.spans]
        self.plain += text.plain
        return self

    def __add__(self, other: str | StyledText) -> StyledText:
        result = StyledText(self.plain, self.style)
        result.spans = list(self.spans)
        result.no_wrap = self.no_wrap
        return result.append(other)

    def stylize(self, style: str) -> None:
        """``style`` over the whole text."""
        if style and self.plain:
            self.spans.append((0, len(self.plain), style))

    def rstrip(self) -> None:
        """Without its trailing whitespace; the spans are cut where the text now ends."""
        stripped = self.plain.rstrip()
        if len(stripped) < len(self.plain):
            end = len(stripped)
            self.spans = [(s, min(end, e), style) for s, e, style in self.spans if s < end]
        self.plain = stripped

    def to_rich(self) -> Text:
        """The same line as rich's Text, for rich's Console to print with its styles."""
        from rich.text import Span, Text

        spans = [Span(start, end, style) for start, end, style in self.spans]
        return Text(self.plain, style=self.style, spans=spans, no_wrap=self.no_wrap)


def plain_lines(text: StyledText, width: int) -> Iterator[str]:
    """The lines rich's Console prints for ``text`` without colour, ``width`` cells wide: a
    line never wrapped is printed whole; any other is wrapped at spaces to the width (rich's
    default "fold" overflow: a word longer than a line is cut into pieces that fit)."""
    for line in text.plain.split("\n"):
        if "\t" in line:
            line = line.expandtabs(TAB_SIZE)
        if text.no_wrap:
            yield line
            continue
        offsets = divide_line(line, width, fold=True)
        for start, end in zip([0, *offsets], [*offsets, len(line)], strict=True):
            yield _fitted(line[start:end], width)


def _fitted(piece: str, width: int) -> str:
    """A wrapped piece as rich ends it: trailing whitespace beyond the width dropped, then
    anything still wider than the width cut off."""
    if len(piece) > width:
        trailing = len(piece) - len(piece.rstrip())
        piece = piece[: len(piece) - min(trailing, len(piece) - width)]
    return set_cell_size(piece, width) if cell_len(piece) > width else piece
