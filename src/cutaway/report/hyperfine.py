"""hyperfine's own result tables, for its users: the ``results`` of its JSON export and its
AsciiDoc and Org-mode tables, from the same statistics hyperfine computes.

hyperfine (https://github.com/sharkdp/hyperfine, src/export/) reports per command the mean and
sample standard deviation of the wall times, the mean user and system times, min, max, every
time and exit code; its tables show "Mean ± sd", "Min", "Max" in one unit chosen from the fastest
mean, and "Relative", the mean over the fastest mean with the two relative deviations added in
quadrature. Here the runs are a variant's counted, successful runs; cutaway's own verdicts stay
in its other formats.

Every command is data: the AsciiDoc and Org-mode tables escape what would end a cell or start
markup, and fold control characters to visible escapes."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from cutaway.model import Analysis, Run, RunStatus
from cutaway.visible import visible


@dataclass(frozen=True)
class HyperfineResult:
    """One variant as hyperfine reports a command (seconds)."""

    command: str
    name: str
    times: tuple[float, ...]
    exit_codes: tuple[int | None, ...]
    user: float | None
    system: float | None
    parameters: dict[str, str] = field(default_factory=dict)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.times) if self.times else None

    @property
    def stddev(self) -> float | None:
        """The sample standard deviation (n - 1), None below two runs, as hyperfine."""
        return statistics.stdev(self.times) if len(self.times) > 1 else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None


def hyperfine_results(analysis: Analysis) -> list[HyperfineResult]:
    """Per variant of a single experiment, in its order; empty for `cutaway compare`, which has
    no single command per name."""
    if len(analysis.experiments) != 1:
        return []
    info = analysis.experiments[0]
    results = []
    for variant in info.variants:
        ok = [
            run
            for run in analysis.runs
            if run.variant == variant and run.status is RunStatus.OK and "wall" in run.metrics
        ]
        results.append(
            HyperfineResult(
                command=info.commands.get(variant, variant),
                name=variant,
                times=tuple(run.metrics["wall"] for run in ok),
                exit_codes=tuple(run.exit_code for run in ok),
                user=_mean_of(ok, "user"),
                system=_mean_of(ok, "sys"),
                parameters=dict(info.parameters.get(variant, {})),
            )
        )
    return results


def _mean_of(runs: Sequence[Run], metric: str) -> float | None:
    values = [run.metrics[metric] for run in runs if metric in run.metrics]
    return statistics.fmean(values) if values else None


# -- the tables ----------------------------------------------------------------------------------

_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"))


def _unit(results: Sequence[HyperfineResult]) -> tuple[float, str]:
    """hyperfine's unit: seconds, or milliseconds when the fastest mean is below a second
    (microseconds below a millisecond, where hyperfine would print 0.0 ms)."""
    means = [r.mean for r in results if r.mean is not None]
    fastest = min(means, default=1.0)
    return next((unit for unit in _UNITS if fastest >= unit[0]), _UNITS[-1])


def table_rows(results: Sequence[HyperfineResult]) -> tuple[list[str], list[list[str]]]:
    """hyperfine's header and rows, numbers as text: Command, Mean ± sd, Min, Max, Relative."""
    scale, symbol = _unit(results)
    header = ["Command", f"Mean [{symbol}]", f"Min [{symbol}]", f"Max [{symbol}]", "Relative"]
    measured = [r for r in results if r.mean is not None]
    fastest = min(measured, key=lambda r: r.mean or 0.0, default=None)
    rows = []
    for result in results:
        if result.mean is None or fastest is None or fastest.mean is None:
            rows.append([result.command, "-", "-", "-", "-"])
            continue
        sd = result.stddev
        mean = f"{result.mean / scale:.1f}" + (f" ± {sd / scale:.1f}" if sd is not None else "")
        rows.append(
            [
                result.command,
                mean,
                f"{min(result.times) / scale:.1f}",
                f"{max(result.times) / scale:.1f}",
                _relative(result, fastest),
            ]
        )
    return header, rows


def _relative(result: HyperfineResult, fastest: HyperfineResult) -> str:
    assert result.mean is not None and fastest.mean is not None
    if fastest.mean == 0:
        return "-"
    ratio = result.mean / fastest.mean
    if result is fastest or result.stddev is None or fastest.stddev is None or result.mean == 0:
        return f"{ratio:.2f}"
    spread = ratio * math.hypot(result.stddev / result.mean, fastest.stddev / fastest.mean)
    return f"{ratio:.2f} ± {spread:.2f}"


def _cell_text(text: str) -> str:
    """One line, control characters shown as escapes."""
    return visible(" ".join(text.splitlines()))


def render_asciidoc(analysis: Analysis) -> str:
    """hyperfine's --export-asciidoc table. A command is monospace through ``pass:c[...]``:
    special characters escaped, no other substitution, so no markup comes from it; "|" and "]"
    are escaped so that neither the cell nor the macro ends early."""
    header, rows = table_rows(hyperfine_results(analysis))
    lines = ['[cols="<,>,>,>,>"]', "|==="]
    lines += [f"| {cell} " for cell in header]
    for row in rows:
        lines.append("")
        command = _cell_text(row[0]).replace("\\", "\\\\").replace("]", "\\]")
        command = command.replace("|", "\\|")
        lines.append(f"| `pass:c[{command}]` ")
        lines += [f"| {cell} " for cell in row[1:]]
    lines.append("|===")
    return "\n".join(lines) + "\n"


# Org's emphasis and link markers; a zero-width space after each keeps it from pairing up (the
# Org manual's own escape), and "|" is the \vert{} entity, so no cell ends early.
_ORG_MARKERS = "*/_+=~[]"
_ZERO_WIDTH_SPACE = "\u200b"


def render_orgmode(analysis: Analysis) -> str:
    """hyperfine's --export-orgmode table, commands as text that Org shows as written."""
    header, rows = table_rows(hyperfine_results(analysis))
    lines = ["| " + " | ".join(header) + " |", "|" + "+".join(["--"] * len(header)) + "|"]
    for row in rows:
        command = "".join(
            c + _ZERO_WIDTH_SPACE if c in _ORG_MARKERS else c for c in _cell_text(row[0])
        ).replace("|", "\\vert{}")
        lines.append("| " + " | ".join([command, *row[1:]]) + " |")
    return "\n".join(lines) + "\n"
