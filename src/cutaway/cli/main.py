"""The `cutaway` command. It only translates arguments into a Spec or a stored-experiment
reference and calls the library; everything it prints comes from cutaway.report.

Exit status: 0 done, 1 the experiment could not go on (a hook failed, a store error),
2 bad input (usage, experiment file), 130 interrupted (completed runs are saved)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from cutaway import __version__
from cutaway.api import DEFAULT_DB
from cutaway.cli.progress import TerminalProgress
from cutaway.compare import analyze, compare_experiments
from cutaway.environment import capture_environment
from cutaway.model import Analysis, Spec
from cutaway.report import FORMATS, render_terminal
from cutaway.report.csv_format import render_runs_csv
from cutaway.runner.forkserver import ForkServerError
from cutaway.runner.runner import RunnerError, run_experiment
from cutaway.spec import SpecError, apply_overrides, load_spec, quick_spec
from cutaway.store import Store, StoreError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    pass


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default=str(DEFAULT_DB), help="the store (default: %(default)s)")
    parser.add_argument("--export-json", metavar="PATH", help="also write the report as JSON")
    parser.add_argument("--export-csv", metavar="PATH", help="also write the report as CSV")
    parser.add_argument("--export-markdown", metavar="PATH", help="also write Markdown")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    parser.add_argument("--all-metrics", action="store_true", help="a table for every metric")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cutaway",
        description=("Measure variants of a command in interleaved rounds and say what changed."),
    )
    parser.add_argument("--version", action="version", version=f"cutaway {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run an experiment file, or quick mode with -c")
    run.add_argument("file", nargs="?", help="experiment file (TOML)")
    run.add_argument(
        "-c",
        "--cmd",
        action="append",
        default=[],
        metavar="CMD",
        help="quick mode: a command to measure (repeat; the first is the baseline)",
    )
    run.add_argument("-n", "--name", action="append", default=[], help="name of each -c command")
    run.add_argument("--baseline", help="the variant the others are compared with")
    run.add_argument("--rounds", type=int, help="counted rounds (default 10)")
    run.add_argument("--warmup", type=int, help="warmup rounds, run and not counted (default 1)")
    run.add_argument("--shell", action="store_true", help="quick mode: run commands with sh -c")
    run.add_argument("--timeout", help="per-run timeout, e.g. 10s")
    run.add_argument("--margin", help="equivalence margin, e.g. 1%% (default 0.5%%)")
    run.add_argument("--until", help="adaptive: add rounds until every interval is this narrow")
    run.add_argument("--max-time", help="time budget for the whole experiment, e.g. 60s")
    run.add_argument("--seed", type=int, help="seed for round orders and the bootstrap")
    run.add_argument(
        "--calls",
        metavar="F,G",
        help="time every call of these libc functions, "
        "e.g. getpwnam,getservbyname (the calls probe)",
    )
    run.add_argument("--label", help="a label stored with the experiment, e.g. a version")
    run.add_argument(
        "--resume",
        nargs="?",
        const="latest-incomplete",
        metavar="EXPERIMENT",
        help="continue an interrupted experiment (default: the newest one)",
    )
    run.add_argument(
        "--syscalls",
        metavar="S,T",
        help="time every call of these system calls "
        "with strace, e.g. fsync,openat (the syscalls probe)",
    )
    run.add_argument(
        "--no-probes",
        action="store_true",
        help="ignore the file's [probes]: whole-process metrics without any probe's cost",
    )
    _add_output_options(run)

    report = commands.add_parser("report", help="report a stored experiment")
    report.add_argument("experiment", nargs="?", help="id, name or 'latest' (default)")
    report.add_argument("--format", choices=sorted(FORMATS), default="terminal")
    _add_output_options(report)

    compare = commands.add_parser("compare", help="compare two stored experiments")
    compare.add_argument("first", help="the reference experiment (id or name)")
    compare.add_argument("second", help="the experiment compared with it")
    compare.add_argument("--format", choices=sorted(FORMATS), default="terminal")
    _add_output_options(compare)

    listing = commands.add_parser("list", help="list stored experiments")
    listing.add_argument("--db", default=str(DEFAULT_DB))

    export = commands.add_parser("export", help="write a stored experiment in another format")
    export.add_argument("experiment", nargs="?", help="id, name or 'latest' (default)")
    export.add_argument("--format", choices=sorted([*FORMATS, "runs-csv"]), default="json")
    export.add_argument("-o", "--output", help="file to write (default: standard output)")
    export.add_argument("--db", default=str(DEFAULT_DB))
    return parser


def spec_from_args(args: argparse.Namespace) -> Spec:
    """The experiment file or the -c commands, with command-line overrides applied."""
    if args.file and args.cmd:
        raise UsageError("give an experiment file or -c commands, not both")
    if not args.file and not args.cmd:
        raise UsageError("nothing to run: give an experiment file or -c 'COMMAND' (twice or more)")
    spec = load_spec(args.file) if args.file else quick_spec(args.cmd, args.name, shell=args.shell)
    return apply_overrides(
        spec,
        {
            "--rounds": args.rounds,
            "--warmup": args.warmup,
            "--timeout": args.timeout,
            "--margin": args.margin,
            "--until": args.until,
            "--max-time": args.max_time,
            "--seed": args.seed,
            "--baseline": args.baseline,
            "--calls": args.calls,
            "--syscalls": args.syscalls,
            "--no-probes": args.no_probes or None,
        },
    )


def _color(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def emit(analysis: Analysis, args: argparse.Namespace, fmt: str = "terminal") -> None:
    """Print the report and write every export asked for."""
    if fmt == "terminal":
        width = os.get_terminal_size().columns if sys.stdout.isatty() else 100
        sys.stdout.write(
            render_terminal(
                analysis, color=_color(args.color), width=width, all_metrics=args.all_metrics
            )
        )
    else:
        sys.stdout.write(FORMATS[fmt].render(analysis))
    for name, path in (
        ("json", args.export_json),
        ("csv", args.export_csv),
        ("markdown", args.export_markdown),
    ):
        if path:
            Path(path).write_text(FORMATS[name].render(analysis))


def cmd_run(args: argparse.Namespace) -> int:
    if args.resume:
        if args.file or args.cmd:
            raise UsageError("--resume continues a stored experiment: give no file or -c")
        store = Store(args.db)
        experiment_id = store.resolve(args.resume)
        stored = store.experiment(experiment_id)
        if stored.status == "complete":
            raise UsageError(f"experiment #{experiment_id} is complete: nothing to resume")
        spec, resume_id, environment = stored.spec, experiment_id, stored.environment
    else:
        # The spec first: bad input must leave nothing behind, not even an empty store.
        spec, resume_id, environment = spec_from_args(args), None, capture_environment()
        store = Store(args.db)
    with TerminalProgress() as progress:
        outcome = run_experiment(
            spec,
            store,
            environment=environment,
            listeners=[progress],
            label=args.label,
            resume_id=resume_id,
        )
    emit(analyze(store, outcome.experiment_id), args)
    return EXIT_INTERRUPTED if outcome.reason == "interrupted" else EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    store = Store(args.db)
    emit(analyze(store, store.resolve(args.experiment)), args, args.format)
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    store = Store(args.db)
    analysis = compare_experiments(store, store.resolve(args.first), store.resolve(args.second))
    emit(analysis, args, args.format)
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    store = Store(args.db)
    rows = store.list_experiments()
    if not rows:
        print(f"no experiments in {args.db}")
    for row in rows:
        label = f"  [{row.label}]" if row.label else ""
        print(
            f"#{row.id:<4} {row.status:<10} {row.n_variants} variants {row.n_runs:>6} runs  "
            f"{row.name}{label}"
        )
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    store = Store(args.db)
    experiment_id = store.resolve(args.experiment)
    if args.format == "runs-csv":
        text = render_runs_csv(store.runs(experiment_id))
    else:
        text = FORMATS[args.format].render(analyze(store, experiment_id))
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


COMMANDS = {
    "run": cmd_run,
    "report": cmd_report,
    "compare": cmd_compare,
    "list": cmd_list,
    "export": cmd_export,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (SpecError, UsageError) as error:
        print(f"cutaway: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (RunnerError, StoreError, ForkServerError) as error:
        print(f"cutaway: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("cutaway: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
