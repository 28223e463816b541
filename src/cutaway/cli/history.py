"""`cutaway history NAME`: every stored experiment of that name by version, with the steps
found in the series, and `--triage CHANGE STATE --note TEXT` to record what a step was."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from cutaway.output_files import write_output_file
from cutaway.visible import display

if TYPE_CHECKING:
    from cutaway.history import History
    from cutaway.store import Store

TRIAGE_CHOICES = ("confirmed", "false alarm", "accepted")  # cutaway.store.records.TRIAGE_STATES


def add_history_arguments(parser: argparse.ArgumentParser) -> None:
    from cutaway.cli.shared import add_width_option

    parser.add_argument("name", help="the experiment name (as `cutaway list` shows it)")
    parser.add_argument("--metric", default="wall", help="the metric (default: wall)")
    parser.add_argument(
        "--variant",
        help="the variant followed across experiments, by its version (default: the newest "
        "experiment's first variant that is not its baseline, else its first)",
    )
    parser.add_argument(
        "--reference",
        metavar="VARIANT",
        help="show the ratio of --variant to this variant of the same experiment",
    )
    parser.add_argument(
        "--format", choices=("terminal", "markdown", "json", "html"), default="terminal"
    )
    parser.add_argument(
        "-o",
        "--output",
        help="file to write (default: standard output); --format html: a page that draws every "
        "variant of --metric over versions",
    )
    add_width_option(parser)
    parser.add_argument(
        "--triage",
        nargs=2,
        metavar=("CHANGE", "STATE"),
        help=f"record the triage of a flagged change: STATE is one of {', '.join(TRIAGE_CHOICES)}",
    )
    parser.add_argument("--note", default="", help="a note stored with --triage")


def cmd_history(args: argparse.Namespace) -> int:
    from cutaway.cli.shared import EXIT_OK, UsageError, check_outputs, write_document
    from cutaway.history import load_history
    from cutaway.store import Store

    if args.output is not None:
        # Before anything is read or triaged: -o naming the store itself replaced it with the
        # page, and a place that cannot be written failed after the triage was stored.
        check_outputs(args, [("-o/--output", args.output)])
    store = Store(args.db, create=False)  # reading never creates a store
    history = load_history(store, args.name, args.metric, args.variant, args.reference)
    if args.triage is not None:
        change_id, state = args.triage
        flagged = [history.change_id(p.index) for p in history.segmentation.change_points]
        if change_id not in flagged:
            known = ", ".join(flagged) or "none"
            raise UsageError(
                f"no flagged change {display(change_id)!r} in the history of "
                f"{display(args.name)!r} "
                f"(flagged: {known})"
            )
        if state not in TRIAGE_CHOICES:
            raise UsageError(
                f"unknown triage state {display(state)!r}; one of {', '.join(TRIAGE_CHOICES)}"
            )
        store.set_triage(args.name, change_id, state, args.note)
        history = load_history(store, args.name, args.metric, args.variant, args.reference)
    text = _history_text(store, history, args)
    if args.output is not None:
        write_output_file(args.output, text, "-o/--output")
    elif args.format == "terminal":
        sys.stdout.write(text)
    else:
        write_document(text, sys.stdout)
    return EXIT_OK


def _history_text(store: Store, history: History, args: argparse.Namespace) -> str:
    from cutaway.cli.shared import report_width

    if args.format == "json":
        from cutaway.report.history_view import history_document

        return history_document(history)
    if args.format == "html":
        from cutaway.history import load_histories
        from cutaway.report.html.site import history_page

        # Every variant of the metric on one chart; --variant: that one; --reference: each
        # other variant's ratio to it.
        histories = load_histories(
            store,
            args.name,
            [args.metric],
            None if args.variant is None else [args.variant],
            args.reference,
        )
        return history_page(args.name, histories)
    from cutaway.report.history_view import history_blocks

    blocks = history_blocks(history)
    if args.format == "markdown":
        from cutaway.report.markdown import render_blocks as markdown_blocks

        return markdown_blocks(blocks)
    from cutaway.report.terminal import render_blocks

    color = args.output is None and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    return render_blocks(blocks, color=color, width=report_width(args))


def add_publish_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory",
        help="where the pages go: index.html and one page per experiment name (made if missing; "
        "its parent must exist)",
    )
    parser.add_argument(
        "--metric",
        action="append",
        help="a metric to draw (repeat for more; default: the primary metric, cpu, max_rss, the "
        "declared metrics, instructions and phases where measured)",
    )


def cmd_publish(args: argparse.Namespace) -> int:
    """`cutaway publish DIR`: the history of every experiment name in the store as static,
    offline pages (see cutaway.report.html.site), each written whole or not at all."""
    import time

    from cutaway.cli.shared import EXIT_OK, UsageError
    from cutaway.output_files import check_output_paths
    from cutaway.report.html.site import INDEX_FILE, index_page, site_page_html
    from cutaway.site import site_pages
    from cutaway.store import Store

    directory = args.directory
    _check_site_directory(directory)  # before reading: a bad place fails at once
    store = Store(args.db, create=False)  # reading never creates a store
    pages = site_pages(store, args.metric)
    if not pages:
        raise UsageError(f"nothing to publish: no experiment in {store.location} has usable runs")
    if not os.path.isdir(directory):
        os.mkdir(directory)
    targets = [os.path.join(directory, name) for name in (INDEX_FILE, *(p.file for p in pages))]
    check_output_paths([("DIRECTORY", path) for path in targets], keep=[("the store", args.db)])
    for page in pages:
        write_output_file(os.path.join(directory, page.file), site_page_html(page), "DIRECTORY")
    index = index_page(pages, store.location, generated_at=time.time())
    write_output_file(os.path.join(directory, INDEX_FILE), index, "DIRECTORY")
    print(f"{len(pages)} pages and {INDEX_FILE} in {display(directory)}")
    return EXIT_OK


def _check_site_directory(path: str) -> None:
    """The site's directory must be one, or be missing in a directory that exists (it is made
    once there is something to publish); anything else is refused before the store is read."""
    from cutaway.cli.shared import UsageError

    if os.path.isdir(path):
        return
    if os.path.lexists(path):
        raise UsageError(f"DIRECTORY {display(path)} exists and is not a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"DIRECTORY {display(path)}: its parent directory does not exist")
