"""What every terminal table shares: how a verdict is painted and written, and what a section
is. Both the process-metric tables (terminal.py) and the call tables (terminal_calls.py) use
them, so a verdict reads the same wherever it appears."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import RenderableType
from rich.text import Text

from cutaway.model import Comparison, Verdict

VERDICT_STYLES: Mapping[Verdict, str] = {
    Verdict.REGRESSED: "bold red",
    Verdict.IMPROVED: "bold green",
    Verdict.EQUIVALENT: "dim",
    Verdict.INCONCLUSIVE: "yellow",
}

Section = list[RenderableType]  # printed together; sections are separated by a blank line


def verdict_text(comparison: Comparison) -> Text:
    """The verdict in its colour; an inconclusive one says how many rounds would settle it."""
    text = Text(comparison.verdict.value, style=VERDICT_STYLES[comparison.verdict])
    if comparison.verdict is Verdict.INCONCLUSIVE and comparison.rounds_to_settle is not None:
        # On a line of its own: the cell stays narrow, and a wrap never splits the estimate.
        text.append(f"\n≈{comparison.rounds_to_settle} rounds to settle")
    return text
