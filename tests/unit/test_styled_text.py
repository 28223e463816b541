"""The terminal report without colour is laid out by report/styled_text.py, not by rich's
console: it must print exactly what rich's console prints, wrapping included."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console

from cutaway.report.styled_text import StyledText, plain_lines
from cutaway.report.terminal import render_blocks

PIECES = ("a", "bb", "ccc ", "  ", "x" * 30, "日本語", "é", " · ", "w" * 120, "\u3000", "tail   ")


def rich_plain(texts: list[StyledText], width: int) -> str:
    """What rich's console prints for ``texts`` without colour (the terminal report's
    settings before it drew plain text itself)."""
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, no_color=True, color_system=None)
    console.width = width
    for text in texts:
        if text.no_wrap:
            console.print(text.to_rich(), no_wrap=True, overflow="ignore", crop=False)
        else:
            console.print(text.to_rich(), markup=False, emoji=False, highlight=False)
    return buffer.getvalue()


def random_text(rng: random.Random) -> StyledText:
    text = StyledText(style=rng.choice(("", "bold")))
    for _ in range(rng.randrange(0, 30)):
        text.append(rng.choice(PIECES), style=rng.choice(("", "dim", "cyan")))
    text.no_wrap = rng.random() < 0.2
    return text


@pytest.mark.parametrize("width", [20, 50, 100])
def test_plain_lines_are_rich_consoles(width: int) -> None:
    """Long lines wrapped at spaces, words longer than a line folded, wide characters taking
    two cells, trailing blanks beyond the width dropped, lines never wrapped printed whole."""
    rng = random.Random(width)
    for _ in range(200):
        texts = [random_text(rng) for _ in range(rng.randrange(1, 4))]
        ours = "".join(line + "\n" for text in texts for line in plain_lines(text, width))
        assert ours == rich_plain(texts, width)


def test_styled_text_keeps_rich_texts_spans() -> None:
    """Colour goes through rich's Text: the spans must be those rich's own operations make."""
    from rich.text import Text

    ours, theirs = StyledText("ab", style="bold"), Text("ab", style="bold")
    for text in (ours, theirs):
        text.append("cd", style="dim")
        text.append("  ")
    ours.append_text(StyledText("ef", style="cyan") + StyledText("g"))
    theirs.append_text(Text("ef", style="cyan") + Text("g"))
    for text in (ours, theirs):
        text.stylize("yellow")
        text.append("  ", style="red")
        text.rstrip()
    assert ours.to_rich().spans == theirs.spans
    assert ours.plain == theirs.plain


def test_blocks_are_a_blank_line_apart_and_an_empty_last_line_is_kept() -> None:
    """As rich printed them: an empty line at the end of a report is still a line."""
    from cutaway.report.sections import Line

    text = render_blocks([(Line(("one",)),), (Line(("two",)), Line(("",)))], color=False)
    assert text == "one\n\ntwo\n\n"
