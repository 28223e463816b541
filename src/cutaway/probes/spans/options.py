"""The spans probe's flags of `cutaway run` (``add_arguments``, ``option_values``), which its
plugin adds to every `cutaway run` parser: apart from its settings
(cutaway.probes.spans.settings), whose dataclasses a run without the probe does not import."""

from __future__ import annotations

import argparse


def add_arguments(run: argparse.ArgumentParser) -> None:
    """``cutaway run --spans``."""
    run.add_argument(
        "--spans",
        action="store_true",
        default=None,
        help="also record named phases: spans from cutaway's span SDK (C span.h, Python "
        "cutaway.spans) and OpenTelemetry JSON written to $CUTAWAY_OTLP_FILE, shown as a "
        "dissection per phase (the spans probe)",
    )


def option_values(args: argparse.Namespace) -> dict[str, object]:
    return {"--spans": args.spans}
