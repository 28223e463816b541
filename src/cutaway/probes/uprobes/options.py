"""The uprobes probe's flags of `cutaway run` (``add_arguments``, ``option_values``), which its
plugin adds to every `cutaway run` parser: apart from its settings
(cutaway.probes.uprobes.settings), whose dataclasses a run without the probe does not import."""

from __future__ import annotations

import argparse


def add_arguments(run: argparse.ArgumentParser) -> None:
    """``cutaway run --uprobes``."""
    run.add_argument(
        "--uprobes",
        action="append",
        metavar="BINARY:F,G",
        help="time every call of these functions of an unmodified binary with uprobes (root, "
        "bpftrace), as nested phases, and count them, e.g. "
        "/usr/sbin/slapd:do_search,test_filter; repeat for more binaries (a function in two "
        "binaries is one phase: two builds compare); adds to an experiment file's (the uprobes "
        "probe)",
    )


def option_values(args: argparse.Namespace) -> dict[str, object]:
    return {"--uprobes": args.uprobes}
