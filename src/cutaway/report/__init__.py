"""Reports: an Analysis rendered as text, one module per format.

Every format is registered once in FORMATS with its metadata (name, file extension, what it is
for), so the CLI can offer `--format NAME` and pick a format from an output file's extension
without knowing any format. Each render function takes an Analysis and returns the whole report
as a string; writing it anywhere is the caller's business. The report package imports nothing of
cutaway but ``cutaway.model``, ``cutaway.visible``, the probes' views and plugins (their
registry, cutaway.probes.registry, adds each probe's CSV exports here), and (for figures) the
pure ``cutaway.stats``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cutaway.model import Analysis, Run

# The renderers are imported inside the functions below, never here: the probes' section
# modules import `cutaway.report.sections`, which runs this file first, and the renderers
# import those section modules back, so importing a renderer here would be a circle for
# whoever imports a probe's sections first (tests/unit/test_import_graph.py checks). So is the
# probes' registry, read when the formats are built.
from cutaway.report.json_version import FORMAT_VERSION as JSON_FORMAT_VERSION
from cutaway.value_class import value_class


@value_class
class Format:
    """One report format: its name on the command line, the extension of its files, a one-line
    description for `--help`, and the function that renders it."""

    name: str
    extension: str  # without the dot
    description: str
    render: Callable[[Analysis], str]


def render_terminal(
    analysis: Analysis, *, color: bool, width: int = 100, all_metrics: bool = False
) -> str:
    """The terminal report (cutaway.report.terminal.render_terminal)."""
    from cutaway.report.terminal import render_terminal as render

    return render(analysis, color=color, width=width, all_metrics=all_metrics)


def render_markdown(analysis: Analysis) -> str:
    """The Markdown report (cutaway.report.markdown.render_markdown)."""
    from cutaway.report.markdown import render_markdown as render

    return render(analysis)


def render_json(analysis: Analysis) -> str:
    """The JSON report (cutaway.report.json_format.render_json)."""
    from cutaway.report.json_format import render_json as render

    return render(analysis)


def render_csv(analysis: Analysis) -> str:
    """One CSV row per variant and metric (cutaway.report.csv_format.render_csv)."""
    from cutaway.report.csv_format import render_csv as render

    return render(analysis)


def render_runs_csv(runs: Sequence[Run]) -> str:
    """One CSV row per stored run (cutaway.report.csv_format.render_runs_csv)."""
    from cutaway.report.csv_format import render_runs_csv as render

    return render(runs)


def render_asciidoc(analysis: Analysis) -> str:
    """hyperfine's AsciiDoc table (cutaway.report.hyperfine.render_asciidoc)."""
    from cutaway.report.hyperfine import render_asciidoc as render

    return render(analysis)


def render_orgmode(analysis: Analysis) -> str:
    """hyperfine's Org-mode table (cutaway.report.hyperfine.render_orgmode)."""
    from cutaway.report.hyperfine import render_orgmode as render

    return render(analysis)


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
    from cutaway.probes.registry import plugins

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
    "render_markdown",
    "render_runs_csv",
    "render_terminal",
]
