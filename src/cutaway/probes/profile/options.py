"""The profile probe's flags of `cutaway run` (``add_arguments``, ``option_values``), which its
plugin adds to every `cutaway run` parser: apart from its settings
(cutaway.probes.profile.settings), whose dataclasses a run without the probe does not import."""

from __future__ import annotations

import argparse

# Frame pointers, or DWARF unwinding of a copied user stack; "dwarf!" insists on DWARF: no
# frame pointers instead when it costs more than the probe's limit (it still must work).
CALL_GRAPHS = ("fp", "dwarf", "dwarf!")


def add_arguments(run: argparse.ArgumentParser) -> None:
    """``cutaway run --profile`` and the ``--profile-*`` options, each of which turns it on."""
    run.add_argument(
        "--profile",
        action="store_true",
        help="also sample stacks with perf (on- and off-CPU), in profiled runs of each variant "
        "separate from the timed runs (the profile probe)",
    )
    run.add_argument(
        "--profile-frequency",
        metavar="HZ",
        help="samples per second of --profile (default 999)",
    )
    run.add_argument(
        "--profile-call-graph",
        choices=CALL_GRAPHS,
        help="how --profile unwinds stacks: frame pointers (default) or DWARF; DWARF falls back "
        "to frame pointers when it costs more than 10 %% of a CPU-bound program's CPU time, "
        "dwarf! keeps it whatever it costs",
    )
    run.add_argument(
        "--system-wide",
        "-a",
        action="store_true",
        default=None,
        help="--profile samples the whole system, not only the workload's processes",
    )
    run.add_argument(
        "--no-off-cpu",
        action="store_true",
        default=None,
        help="--profile samples on-CPU stacks only (no scheduler tracepoint)",
    )


def option_values(args: argparse.Namespace) -> dict[str, object]:
    """``--profile``: the --profile-* options given ({} for --profile alone); None when none
    was: any of them turns the profile probe on."""
    options: dict[str, object] = {
        "--profile-frequency": args.profile_frequency,
        "--profile-call-graph": args.profile_call_graph,
        "--system-wide": args.system_wide,
        "--no-off-cpu": args.no_off_cpu,
    }
    given = {option: value for option, value in options.items() if value is not None}
    return {"--profile": given if args.profile or given else None}
