"""What every terminal table shares: how a verdict is painted and written, and what a section
is. Both the process-metric tables (terminal.py) and the call tables (terminal_calls.py) use
them, so a verdict reads the same wherever it appears."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from cutaway.model import Comparison, ExperimentInfo, Verdict
from cutaway.report.units import format_confidence, format_margin

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


def comparison_table(
    title: Text,
    first_column: str,
    comparisons: Sequence[Comparison],
    experiments: Sequence[ExperimentInfo],
) -> tuple[Text, Table, bool]:
    """The title and empty table every comparison section starts from: ``title`` gets the
    baseline (when there is one) and the margin; the table gets the columns. The bool says
    whether one baseline serves every row (then rows name the variant alone)."""
    one_baseline = len({comparison.baseline for comparison in comparisons}) == 1
    if one_baseline:
        title.append(f" {comparisons[0].baseline}", style="bold cyan")
    confidence = "CI"
    if experiments:
        confidence = f"{format_confidence(experiments[0].confidence)} CI"
        title.append(f" (equivalent: within {format_margin(experiments[0].margin)})")
    table = Table(box=box.HEAVY_HEAD, header_style="bold")
    table.add_column(first_column, no_wrap=True)
    table.add_column("variant" if one_baseline else "variant vs baseline", overflow="fold")
    table.add_column("change", justify="right", no_wrap=True)
    table.add_column(confidence, justify="right", no_wrap=True)
    table.add_column("verdict")
    return title, table, one_baseline
