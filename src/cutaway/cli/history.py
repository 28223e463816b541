"""`cutaway history NAME`: every stored experiment of that name by version, with the steps
found in the series, and `--triage CHANGE STATE --note TEXT` to record what a step was."""

from __future__ import annotations

import argparse
import os
import sys

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
    parser.add_argument("--format", choices=("terminal", "markdown", "json"), default="terminal")
    add_width_option(parser)
    parser.add_argument(
        "--triage",
        nargs=2,
        metavar=("CHANGE", "STATE"),
        help=f"record the triage of a flagged change: STATE is one of {', '.join(TRIAGE_CHOICES)}",
    )
    parser.add_argument("--note", default="", help="a note stored with --triage")


def cmd_history(args: argparse.Namespace) -> int:
    from cutaway.cli.shared import EXIT_OK, UsageError, report_width, write_document
    from cutaway.history import load_history
    from cutaway.store import Store
    from cutaway.visible import display

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
    if args.format == "json":
        from cutaway.report.history_view import history_document

        write_document(history_document(history), sys.stdout)
        return EXIT_OK
    from cutaway.report.history_view import history_blocks

    blocks = history_blocks(history)
    if args.format == "markdown":
        from cutaway.report.markdown import render_blocks as markdown_blocks

        write_document(markdown_blocks(blocks), sys.stdout)
    else:
        from cutaway.report.terminal import render_blocks

        sys.stdout.write(
            render_blocks(
                blocks,
                color=sys.stdout.isatty() and not os.environ.get("NO_COLOR"),
                width=report_width(args),
            )
        )
    return EXIT_OK
