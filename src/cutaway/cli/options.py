"""Options several commands share: the store (--db) and the report's outputs (--export-*,
--color, --style, --width, --all-metrics, --all-pairs), and the report formats' names."""

from __future__ import annotations

import argparse

from cutaway.cli.listing import DB_VARIABLE, DEFAULT_DB, default_db
from cutaway.cli.shared import STYLES, add_width_option
from cutaway.store.location import shown

# Export formats that draw a profile: one variant, or a variant against the baseline.
FLAME_GRAPHS = ("flamegraph", "flamegraph-diff")

# The names of cutaway.report.FORMATS, spelled out so that `--help` need not import the
# reports; a test checks that the two agree.
REPORT_FORMATS = (
    "asciidoc", "calls-csv", "csv", "html", "json", "load-csv", "markdown", "orgmode",
    "phases-csv", "terminal", "uprobe-calls-csv",
)  # fmt: skip


def add_db_option(parser: argparse.ArgumentParser) -> None:
    now = shown(default_db()).replace("%", "%%")  # argparse formats help with %
    parser.add_argument(
        "--db",
        default=default_db(),
        metavar="PATH|URL",
        help=f"the store: an SQLite file, or postgresql://USER@HOST/DATABASE for a team "
        f"(default: ${DB_VARIABLE}, else {DEFAULT_DB}; now {now})",
    )


def add_output_options(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    parser.add_argument("--export-json", metavar="PATH", help="also write the report as JSON")
    parser.add_argument("--export-csv", metavar="PATH", help="also write the report as CSV")
    parser.add_argument("--export-markdown", metavar="PATH", help="also write Markdown")
    parser.add_argument(
        "--export-html", metavar="PATH", help="also write a self-contained HTML page with charts"
    )
    parser.add_argument(
        "--export-asciidoc", metavar="PATH", help="also write hyperfine's AsciiDoc table"
    )
    parser.add_argument(
        "--export-orgmode", metavar="PATH", help="also write hyperfine's Org-mode table"
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        help="colour the report (default: auto, or what --style says)",
    )
    parser.add_argument(
        "--style",
        choices=sorted(STYLES),
        default="auto",
        help="as hyperfine: basic (no colour, no progress bar), full (colour and bar, even "
        "when not on a terminal), nocolor, color, none (no colour, no progress at all)",
    )
    add_width_option(parser)
    parser.add_argument(
        "--all-metrics",
        action="store_true",
        help="a table for every metric (the default shows the ones that changed)",
    )
    parser.add_argument(
        "--all-pairs",
        action="store_true",
        help="compare every pair of variants, not only each against the baseline",
    )
