"""What every command of the CLI shares: its usage error and exit statuses, how a report is
drawn (style, colour, width) and written (standard output, exports, files checked first), and
how the store is named back to the user. The command modules (commands, check, bisect,
history) import it; it imports none of them."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cutaway.cli.listing import DEFAULT_DB
from cutaway.store.location import is_postgresql_url, shown
from cutaway.visible import display, visible

if TYPE_CHECKING:
    from cutaway.model import Analysis


EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2  # and 128 + a signal's number (cutaway.interrupts)


# The terminal report's width in a file or a pipe, and on a terminal that reports no width (some
# CI pseudo-terminals say 0 columns).
WIDTH_OFF_TERMINAL, WIDTH_FALLBACK = 100, 80


# The narrowest report --width accepts: a verdict row needs about this much. The widest: past
# it no table gains a column a person could read, and a width of 10**23 would have each rule
# line drawn that long.
MIN_WIDTH, MAX_WIDTH = 40, 1000


# hyperfine's --style: style -> (colour, progress bar: None on a terminal only, progress lines).
STYLES: dict[str, tuple[str, bool | None, bool]] = {
    "auto": ("auto", None, True),
    "full": ("always", True, True),
    "basic": ("never", False, True),
    "nocolor": ("never", True, True),
    "color": ("always", False, True),
    "none": ("never", False, False),
}


# Each --export-* option and the report format it writes.
EXPORT_OPTIONS = {
    "--export-json": "json",
    "--export-csv": "csv",
    "--export-markdown": "markdown",
    "--export-html": "html",
    "--export-asciidoc": "asciidoc",
    "--export-orgmode": "orgmode",
}


class UsageError(Exception):
    pass


def add_width_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--width",
        type=_width,
        metavar="N",
        help=f"the terminal report's width in columns ({MIN_WIDTH} to {MAX_WIDTH}), on a "
        "terminal, in a file or in a pipe "
        f"(default: $COLUMNS, else the terminal's, else {WIDTH_OFF_TERMINAL} off a terminal)",
    )


def _width(text: str) -> int:
    """--width's value: a whole number of columns, from MIN_WIDTH to MAX_WIDTH."""
    try:
        columns = int(text)
    except ValueError:
        columns = 0
    if not MIN_WIDTH <= columns <= MAX_WIDTH:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of columns, at least {MIN_WIDTH} and at most {MAX_WIDTH}, "
            f"not {display(text)!r}"
        )
    return columns


def color_wanted(args: argparse.Namespace) -> bool:
    """--color when given, else what --style says, else colour on a terminal without NO_COLOR."""
    choice = args.color or STYLES[args.style][0]
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def exports(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """The --export-* options given: (option, format, path)."""
    return [
        (option, fmt, path)
        for option, fmt in EXPORT_OPTIONS.items()
        if (path := getattr(args, option.removeprefix("--").replace("-", "_"))) is not None
    ]


MEASURING_COMMANDS = ("run", "check")  # the commands with run's --input and --output


def check_outputs(
    args: argparse.Namespace,
    outputs: Sequence[tuple[str, str]],
    appended: Sequence[str] = (),
) -> None:
    """Every file the command will write, checked before it does anything else (exit 2); the
    options in ``appended`` add to their file (``$GITHUB_STEP_SUMMARY``), the others replace it."""
    from cutaway.output_files import check_output_paths

    keep = [] if is_postgresql_url(args.db) else [("the store (--db)", args.db)]
    if getattr(args, "file", None):
        keep.append(("the experiment file", args.file))
    if getattr(args, "command", None) in MEASURING_COMMANDS:
        # The measured command's own files (run's --input and --output; export's -o is an
        # output of its own): an export written over them after the runs would destroy the
        # user's input, or the output the command left.
        if args.input:
            keep.append(("the --input file", args.input))
        if args.output not in (None, "null", "pipe", "inherit"):
            keep.append(("the --output file", args.output))
    check_output_paths(outputs, keep, appended)


def report_width(args: argparse.Namespace | None = None) -> int:
    """The terminal report's width: --width when given; else COLUMNS when it is set to a
    width --width would accept, on a terminal or not (`COLUMNS=220 cutaway report > file`);
    else the terminal's columns, 80 when it reports none; 100 when standard output is not a
    terminal."""
    given: int | None = getattr(args, "width", None)
    if given is not None:
        return given
    columns = os.environ.get("COLUMNS", "").strip()
    # isdecimal, not isdigit: int() refuses the digits "²" or "①" that isdigit accepts.
    if columns.isdecimal() and MIN_WIDTH <= int(columns) <= MAX_WIDTH:
        return int(columns)
    if not sys.stdout.isatty():
        return WIDTH_OFF_TERMINAL
    return min(MAX_WIDTH, shutil.get_terminal_size((WIDTH_FALLBACK, 24)).columns or WIDTH_FALLBACK)


def write_document(text: str, stream: TextIO) -> None:
    """A report or export in a machine format (CSV, JSON, Markdown) on ``stream``: exactly as
    rendered into a file or a pipe, with control characters shown escaped on a terminal."""
    stream.write(visible(text, keep_newlines=True) if stream.isatty() else text)


def emit(analysis: Analysis, args: argparse.Namespace, fmt: str = "terminal") -> None:
    """Print the report and write every export asked for; the exports are all tried, and
    OutputWriteError names every one that failed."""
    from cutaway.output_files import OutputWriteError, write_output_file
    from cutaway.report import FORMATS, render_terminal

    if fmt == "terminal":  # escaped and styled by the renderer itself
        sys.stdout.write(
            render_terminal(
                analysis,
                color=color_wanted(args),
                width=report_width(args),
                all_metrics=args.all_metrics,
            )
        )
    else:
        write_document(FORMATS[fmt].render(analysis), sys.stdout)
    failures = []
    for option, export_format, path in exports(args):
        try:
            write_output_file(path, FORMATS[export_format].render(analysis), option)
        except OutputWriteError as error:
            failures.append(str(error))
    if failures:
        raise OutputWriteError("\n".join(failures))


def stored_line(experiment_id: int, db: str) -> str:
    """The last line of `cutaway run`: where the result is and how to see it again (a URL's
    password hidden: the hint then needs it from ~/.pgpass or PGPASSWORD)."""
    hint = f"cutaway report {experiment_id}{db_option(db)}"
    return f"cutaway: stored as #{experiment_id} in {shown(db)}: {hint}"


def db_option(db: str) -> str:
    """`` --db PATH`` for a command that names the store, empty for the default one."""
    return "" if Path(db) == Path(DEFAULT_DB) else f" --db {shlex.quote(shown(db))}"


def run_label(args: argparse.Namespace) -> str | None:
    """--label, or the version --version-from reads (both: "LABEL VERSION")."""
    if getattr(args, "version_from", None) is None:
        return args.label  # type: ignore[no-any-return]
    from cutaway.versions import describe_checkout

    version = describe_checkout(args.version_from)
    return version if args.label is None else f"{args.label} {version}"
