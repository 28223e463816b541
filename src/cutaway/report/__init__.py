"""Reports: an Analysis rendered as text, one module per format.

Every format is registered once in FORMATS with its metadata (name, file extension, what it is
for), so the CLI can offer `--format NAME` and pick a format from an output file's extension
without knowing any format. Each render function takes an Analysis and returns the whole report
as a string; writing it anywhere is the caller's business. The report package imports nothing of
cutaway but ``cutaway.model``, ``cutaway.visible``, the probes' views and plugins (their
registry, cutaway.probes.registry, adds each probe's CSV exports here), and (for figures) the
pure ``cutaway.stats``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cutaway.model import Analysis
from cutaway.probes.registry import plugins
from cutaway.report.json_format import FORMAT_VERSION as JSON_FORMAT_VERSION


def _imported_when_called(module: str, name: str) -> Callable[..., str]:
    """``module``'s function ``name``, imported at its first call: `cutaway run` renders the
    terminal report alone and must not pay for importing every other renderer."""

    def render(*arguments: Any, **options: Any) -> str:
        function: Callable[..., str] = getattr(importlib.import_module(module), name)
        return function(*arguments, **options)

    render.__name__ = render.__qualname__ = name
    render.__doc__ = f"{module}.{name}, imported when first called."
    return render


if TYPE_CHECKING:
    from cutaway.report.csv_format import (
        render_csv,
        render_load_csv,
        render_phases_csv,
        render_runs_csv,
    )
    from cutaway.report.hyperfine import render_asciidoc, render_orgmode
    from cutaway.report.json_format import render_json
    from cutaway.report.markdown import render_markdown
    from cutaway.report.terminal import render_terminal
else:
    render_csv = _imported_when_called("cutaway.report.csv_format", "render_csv")
    render_load_csv = _imported_when_called("cutaway.report.csv_format", "render_load_csv")
    render_phases_csv = _imported_when_called("cutaway.report.csv_format", "render_phases_csv")
    render_runs_csv = _imported_when_called("cutaway.report.csv_format", "render_runs_csv")
    render_asciidoc = _imported_when_called("cutaway.report.hyperfine", "render_asciidoc")
    render_orgmode = _imported_when_called("cutaway.report.hyperfine", "render_orgmode")
    render_json = _imported_when_called("cutaway.report.json_format", "render_json")
    render_markdown = _imported_when_called("cutaway.report.markdown", "render_markdown")
    render_terminal = _imported_when_called("cutaway.report.terminal", "render_terminal")


@dataclass(frozen=True)
class Format:
    """One report format: its name on the command line, the extension of its files, a one-line
    description for `--help`, and the function that renders it."""

    name: str
    extension: str  # without the dot
    description: str
    render: Callable[[Analysis], str]


def render_html(analysis: Analysis) -> str:
    """The HTML report (cutaway.report.html), imported when asked for: the page's assets and
    its figures' statistics are no cost to the other formats."""
    from cutaway.report.html import render_html as render

    return render(analysis)


def _render_plain_terminal(analysis: Analysis) -> str:
    # As a file, the terminal report is plain text: escape codes belong on a live terminal only.
    return render_terminal(analysis, color=False)


def _probe_csv_formats() -> list[Format]:
    """The registered probes' own CSV exports (cutaway.probes.plugin ``csv_formats``)."""
    return [
        Format(found.name, "csv", found.description, found.render)
        for plugin in plugins()
        for found in plugin.csv_formats
    ]


def build_formats() -> dict[str, Format]:
    """Every format by name, the registered probes' CSV exports among them (read from the
    registry now: a test that registers a probe builds them again)."""
    return {
        fmt.name: fmt
        for fmt in (
            Format(
                "terminal",
                "txt",
                "tables for a terminal (plain text in a file)",
                _render_plain_terminal,
            ),
            Format(
                "json",
                "json",
                f"everything, in base units (cutaway-report v{JSON_FORMAT_VERSION})",
                render_json,
            ),
            Format("csv", "csv", "one row per variant and metric, full precision", render_csv),
            Format(
                "load-csv",
                "csv",
                "load experiments: one row per variant, latency kind and phase, full precision",
                render_load_csv,
            ),
            Format(
                "phases-csv",
                "csv",
                "spans probe: one row per variant, condition, source and phase, full precision",
                render_phases_csv,
            ),
            *_probe_csv_formats(),
            Format(
                "markdown",
                "md",
                "verdicts and tables to paste into a pull request",
                render_markdown,
            ),
            Format(
                "asciidoc",
                "adoc",
                "hyperfine's AsciiDoc table: mean ± sd, min, max and relative time per command",
                render_asciidoc,
            ),
            Format(
                "orgmode",
                "org",
                "hyperfine's Org-mode table: mean ± sd, min, max and relative time per command",
                render_orgmode,
            ),
            Format(
                "html",
                "html",
                "one self-contained page: verdicts, charts with their numbers, every table",
                render_html,
            ),
        )
    }


FORMATS: dict[str, Format] = build_formats()


def format_for_filename(filename: str) -> Format | None:
    """The format whose extension ends ``filename`` ("out.md" is markdown), None if none does.
    Where two formats share an extension, the first registered wins: ".csv" is the summary
    CSV, never calls-csv."""
    _, dot, extension = filename.rpartition(".")
    if not dot:
        return None
    for fmt in FORMATS.values():
        if fmt.extension == extension.lower():
            return fmt
    return None


__all__ = [
    "FORMATS",
    "Format",
    "build_formats",
    "format_for_filename",
    "render_csv",
    "render_html",
    "render_json",
    "render_load_csv",
    "render_markdown",
    "render_phases_csv",
    "render_runs_csv",
    "render_terminal",
]
