"""The `cutaway` command's parser and commands (cutaway.cli.main answers `--version`, `--help`
and `list` before this module is imported). It only translates arguments into a Spec or a
stored-experiment reference and calls the library; everything it prints comes from
cutaway.report.

Exit status: 0 done; 1 the experiment failed (a command could not start or failed, a hook
failed, a store error; runs completed before are kept); 2 bad input (usage, experiment file, a
damaged store);
128 + the signal's number when stopped by one (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP; completed
runs are saved). A reader that closes standard output or error
changes none of these (cli/streams.py). docs/cli.md describes every option, the exit statuses
and the environment variables.

Everything printed here that holds a user's or a program's text (names, paths, a command's
stderr in an error) goes through cutaway.visible: control characters are shown escaped, never
sent to the terminal."""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, NoReturn

# Only what parsing arguments needs is imported here. The store, the spec parser, the runner,
# the analysis (numpy) and the reports (rich) are imported by the commands that use them,
# so that `cutaway report --help` starts at once (tests/unit/test_startup_imports.py).
from cutaway import __version__, interrupts
from cutaway.cli.bisect import add_bisect_arguments, cmd_bisect
from cutaway.cli.check import add_check_arguments, cmd_check
from cutaway.cli.history import add_history_arguments, cmd_history
from cutaway.cli.hyperfine_options import (
    CLEANUP_NOTE,
    different_option,
    is_experiment_file,
    normalize_ignore_failure,
)
from cutaway.cli.listing import DB_VARIABLE, DEFAULT_DB, default_db, print_listing

# Only what parsing arguments needs is imported here. The store, the spec parser, the runner,
# the analysis (numpy) and the reports (rich) are imported by the commands that use them,
# so that `cutaway report --help` starts at once (tests/unit/test_startup_imports.py).
from cutaway.cli.numbers import integer
from cutaway.cli.run_spec import (
    HOOK_OPTIONS,
    _quick_load_spec,
    command_hint,
    spec_from_args,
)
from cutaway.cli.shared import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    STYLES,
    UsageError,
    add_width_option,
    check_outputs,
    color_wanted,
    db_option,
    emit,
    exports,
    run_label,
    stored_line,
    write_document,
)
from cutaway.cli.streams import pipe_safe_streams, stdout_closed
from cutaway.store.location import shown
from cutaway.visible import display, visible

if TYPE_CHECKING:
    from cutaway.events import Listener
    from cutaway.runner.runner import Outcome

# hyperfine's short hook options; its -c (--cleanup) is cutaway's command option.
HOOK_SHORT_OPTIONS = {"setup": ("-s",), "prepare": ("-p",), "conclude": ("-C",)}

# Words taken as the value of a bare --shell: `--shell bash` is --shell=bash, while in
# `--shell experiment.toml` the file stays the positional argument (--shell alone is sh).
SHELL_WORDS = frozenset(
    ("sh", "bash", "dash", "zsh", "ksh", "mksh", "yash", "fish", "busybox", "pwsh", "none")
)

# Export formats that draw a profile: one variant, or a variant against the baseline.
FLAME_GRAPHS = ("flamegraph", "flamegraph-diff")

# The names of cutaway.report.FORMATS, spelled out so that `--help` need not import the
# reports; a test checks that the two agree.
REPORT_FORMATS = (
    "asciidoc", "calls-csv", "csv", "html", "json", "load-csv", "markdown", "orgmode",
    "phases-csv", "terminal", "uprobe-calls-csv",
)  # fmt: skip


def _add_db_option(parser: argparse.ArgumentParser) -> None:
    now = shown(default_db()).replace("%", "%%")  # argparse formats help with %
    parser.add_argument(
        "--db",
        default=default_db(),
        metavar="PATH|URL",
        help=f"the store: an SQLite file, or postgresql://USER@HOST/DATABASE for a team "
        f"(default: ${DB_VARIABLE}, else {DEFAULT_DB}; now {now})",
    )


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    _add_db_option(parser)
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


class _AppendParameter(argparse.Action):
    """--parameter-scan and --parameter-list share one list, in command-line order (the
    first parameter varies slowest)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        assert isinstance(values, list)
        items = list(getattr(namespace, self.dest) or [])
        items.append((self.const, *values))
        setattr(namespace, self.dest, items)


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors said first and one short usage line after (its own print the
    whole usage, 30 lines for `run`, before the line that matters)."""

    def error(self, message: str) -> NoReturn:
        self.exit(
            EXIT_USAGE,
            f"{self.prog}: error: {message}\n"
            f"usage: {self.prog} ... (`{self.prog} --help` lists every option)\n",
        )


def _subparser(
    commands: argparse._SubParsersAction[_Parser], name: str, help_text: str
) -> argparse.ArgumentParser:
    return commands.add_parser(name, help=help_text, description=help_text, allow_abbrev=False)


def build_parser() -> argparse.ArgumentParser:
    """Abbreviations are off everywhere (``--rou`` is not ``--rounds``): an unknown option gets
    a suggestion instead (see :func:`main`)."""
    parser = _Parser(
        prog="cutaway",
        description=("Measure variants of a command in interleaved rounds and say what changed."),
        epilog=f"The store is ${DB_VARIABLE}, else {DEFAULT_DB} (every command's --db).",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"cutaway {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = _subparser(commands, "run", "run an experiment file, or quick mode with -c")
    run.add_argument(
        "file",
        nargs="?",
        metavar="FILE|COMMAND",
        help="an experiment file (TOML), or commands to measure as hyperfine takes them "
        "(cutaway run 'sleep 0.01' 'sleep 0.02': the first is the baseline)",
    )
    _add_load_options(run)
    run.add_argument(
        "-c",
        "--cmd",
        action="append",
        default=[],
        metavar="CMD",
        help="quick mode: a command to measure (repeat; the first is the baseline)",
    )
    run.add_argument(
        "-n",
        "--name",
        "--command-name",
        action="append",
        default=[],
        help="name of each command (hyperfine's --command-name)",
    )
    run.add_argument("--baseline", help="the variant the others are compared with")
    run.add_argument(
        "--rounds",
        type=integer,
        help="counted rounds, each command once per round (default 10; hyperfine's -r/--runs, "
        "and its -m/--min-runs: with --until, rounds are added after these)",
    )
    # hyperfine's names for --rounds and --warmup, apart so that a message names one option.
    run.add_argument(
        "-r", "--runs", "-m", "--min-runs", dest="rounds", type=integer, help=argparse.SUPPRESS
    )
    run.add_argument(
        "--warmup", type=integer, help="warmup rounds, run and not counted (default 1; -w)"
    )
    run.add_argument("-w", dest="warmup", type=integer, help=argparse.SUPPRESS)
    run.add_argument(
        "--shell",
        "-S",
        metavar="SHELL",
        help="quick mode: run commands through a shell. --shell alone is /bin/sh -c; "
        "--shell=bash (or --shell bash) runs bash -c CMD; --shell=none runs them directly "
        "(the default)",
    )
    run.add_argument(
        "-N",
        dest="shell",
        action="store_const",
        const="none",
        help="quick mode: no shell (--shell=none, as hyperfine's -N)",
    )
    for hook, option in HOOK_OPTIONS.items():
        run.add_argument(
            option,
            *HOOK_SHORT_OPTIONS.get(hook, ()),
            dest=hook,
            action="append",
            default=[],
            metavar="CMD",
            help=f"quick mode: the {hook} hook (shell code); once for every -c, or once per -c",
        )
    run.add_argument(
        "--parameter-scan",
        "-P",
        dest="parameters",
        action=_AppendParameter,
        const="scan",
        nargs=3,
        metavar=("NAME", "MIN", "MAX"),
        help="quick mode: one variant per value MIN, MIN+1... MAX, {NAME} substituted",
    )
    run.add_argument(
        "--parameter-step-size",
        "-D",
        dest="step_size",
        metavar="DELTA",
        help="the step of --parameter-scan (default 1; decimals are fine)",
    )
    run.add_argument(
        "--parameter-list",
        "-L",
        dest="parameters",
        action=_AppendParameter,
        const="list",
        nargs=2,
        metavar=("NAME", "VALUES"),
        help="quick mode: one variant per comma-separated value, {NAME} substituted; "
        "several parameters make every combination",
    )
    run.add_argument(
        "--input",
        metavar="FILE",
        help="feed FILE to every command's standard input (default: /dev/null)",
    )
    run.add_argument(
        "--output",
        metavar="WHERE",
        help="where commands' standard output goes: null (default), pipe, inherit, or a FILE",
    )
    run.add_argument(
        "--show-output",
        action="store_true",
        help="show the commands' standard output (--output=inherit)",
    )
    run.add_argument(
        "--ignore-failure",
        "-i",
        action="store_true",
        help="count runs that exit non-zero as successful (crashes and timeouts never are)",
    )
    run.add_argument(
        "--keep-leftovers",
        action="store_true",
        help="leave running what a command leaves behind (`server &`); by default it is "
        "stopped when the run ends",
    )
    run.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="print nothing on stderr but errors: no progress, notices or stored-as line",
    )
    run.add_argument(
        "--max-variants",
        type=integer,
        metavar="N",
        help="refuse a matrix or parameter sweep of more than N variants, counted before any "
        "is made (default 10000, or the file's max_variants)",
    )
    run.add_argument("--timeout", help="per-run timeout, e.g. 10s")
    run.add_argument("--hook-timeout", help="time limit of each hook (default 10m), e.g. 30s")
    run.add_argument("--margin", help="equivalence margin, e.g. 1%% (default 0.5%%)")
    run.add_argument("--until", help="adaptive: add rounds until every interval is this narrow")
    run.add_argument("--max-time", help="time budget for the whole experiment, e.g. 60s")
    run.add_argument("--seed", type=integer, help="seed for round orders and the bootstrap")
    run.add_argument(
        "--calls",
        metavar="F,G",
        help="time every call of these libc functions, "
        "e.g. getpwnam,getservbyname (the calls probe; adds to an experiment file's)",
    )
    run.add_argument("--label", help="a label stored with the experiment, e.g. a version")
    run.add_argument(
        "--version-from",
        metavar="DIR",
        help="store `git describe --tags --always --dirty` of this checkout as the label "
        "(`cutaway history` lines results up by it)",
    )
    run.add_argument(
        "--variant-version",
        action="append",
        default=[],
        metavar="VERSION",
        help="quick mode: a variant's own version (else the label's); once for every -c, or "
        "once per -c (an experiment file says version, version_from or version_command)",
    )
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
        "with strace, e.g. fsync,openat (the syscalls probe; adds to an experiment file's)",
    )
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
    # -- the profile probe (cutaway.probes.profile; docs/experiment-file.md, [probes] profile)
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
        choices=("fp", "dwarf", "dwarf!"),
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
    # -- the instructions probe (cutaway.probes.instructions; [probes] instructions)
    run.add_argument(
        "--instructions",
        action="store_true",
        default=None,
        help="also count instructions with valgrind (callgrind), whole process and per "
        "function, in runs of each variant separate from the timed runs: the metric "
        "`instructions`, deterministic but not time (the instructions probe)",
    )
    # -- the spans probe (cutaway.probes.spans; [probes] spans)
    run.add_argument(
        "--spans",
        action="store_true",
        default=None,
        help="also record named phases: spans from cutaway's span SDK (C span.h, Python "
        "cutaway.spans) and OpenTelemetry JSON written to $CUTAWAY_OTLP_FILE, shown as a "
        "dissection per phase (the spans probe)",
    )
    # -- declared metrics (cutaway.spec.metrics; docs/experiment-file.md, [[metrics]])
    run.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="SPEC",
        help="also measure a metric (repeat): NAME[:BETTER[:UNIT]]=SOURCE:WHAT, e.g. "
        "rps:higher=output:ab:requests_per_second or files=command:'ls | wc -l' "
        "(docs/experiment-file.md lists every source)",
    )
    run.add_argument(
        "--metric-regex",
        action="append",
        default=[],
        metavar="NAME=REGEX",
        help="also measure a number in the command's output: NAME[:BETTER[:UNIT]]=REGEX, "
        "the REGEX with a group (?P<value>...)",
    )
    run.add_argument(
        "--no-probes",
        action="store_true",
        help="ignore the file's [probes]: whole-process metrics without any probe's cost",
    )
    _add_output_options(run)

    report = _subparser(commands, "report", "report a stored experiment")
    report.add_argument("experiment", nargs="?", help="id, name or 'latest' (default)")
    report.add_argument("--format", choices=REPORT_FORMATS, default="terminal")
    _add_output_options(report)

    compare = _subparser(commands, "compare", "compare two stored experiments")
    compare.add_argument("first", help="the reference experiment (id or name)")
    compare.add_argument("second", help="the experiment compared with it")
    compare.add_argument("--format", choices=REPORT_FORMATS, default="terminal")
    compare.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="compare variant OLD of FIRST with variant NEW of SECOND (repeat for each pair; "
        "variants of the same name are paired without it)",
    )
    _add_output_options(compare)

    listing = _subparser(commands, "list", "list stored experiments")
    _add_db_option(listing)

    export = _subparser(commands, "export", "write a stored experiment in another format")
    export.add_argument("experiment", nargs="?", help="id, name or 'latest' (default)")
    export.add_argument(
        "--format",
        choices=sorted(
            [*REPORT_FORMATS, "runs-csv", "series-csv", "folded", "speedscope", *FLAME_GRAPHS]
        ),
        default="json",
    )
    export.add_argument(
        "--variant",
        help="the variant of a flame graph (default: the baseline), or the one a differential "
        "flame graph compares with the baseline",
    )
    export.add_argument("-o", "--output", help="file to write (default: standard output)")
    _add_db_option(export)

    check = _subparser(commands, "check", "the CI gate: fail when a candidate is slower")
    add_check_arguments(check, run)

    bisect = _subparser(commands, "bisect", "find the commit that made a workload slower")
    add_bisect_arguments(bisect)
    _add_db_option(bisect)

    history = _subparser(commands, "history", "results by version, with the steps between them")
    add_history_arguments(history)
    _add_db_option(history)
    return parser


def normalize_shell(argv: Sequence[str]) -> list[str]:
    """hyperfine's ``--shell bash`` alongside cutaway's ``--shell`` alone (/bin/sh): a bare
    --shell takes the next word only when it names a shell (SHELL_WORDS, or an absolute path to
    an executable), and argparse always sees ``--shell=VALUE``. So ``--shell experiment.toml``
    stays unambiguous: the file is the positional argument, the shell is sh."""
    result: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            result += argv[index:]
            break
        if token == "--shell":
            following = argv[index + 1] if index + 1 < len(argv) else None
            if following is not None and _is_shell_word(following):
                result.append(f"--shell={following}")
                index += 2
                continue
            result.append("--shell=sh")
        else:
            result.append(token)
        index += 1
    return result


def _is_shell_word(word: str) -> bool:
    if word in SHELL_WORDS:
        return True
    return os.path.isabs(word) and os.path.isfile(word) and os.access(word, os.X_OK)


def _max_rate(args: argparse.Namespace) -> int:
    """``--max-rate-under p99=10ms``: the highest rate each --url server keeps under the
    target, searched with the generator (cutaway.probes.load.search). Nothing is stored."""
    from cutaway.model import LoadTarget
    from cutaway.probes.load.generator import (
        GeneratorError,
        LoadResult,
        LoadSettings,
        run_generator,
    )
    from cutaway.probes.load.search import describe, search_max_rate
    from cutaway.spec.load import read_latency_target

    target = read_latency_target(args.max_rate_under)
    if not args.url:
        raise UsageError("--max-rate-under needs --url servers (already running)")
    spec = _quick_load_spec(args)
    load = spec.load
    assert load is not None
    if load.rate is not None:
        raise UsageError("--max-rate-under searches the rate itself: give no --rate")
    duration = load.duration_seconds if load.duration_seconds is not None else 2.0
    protocol: Literal["http", "memcached"] = "memcached" if load.protocol == "memcached" else "http"
    for variant in spec.variants:
        where = load.target(variant.name)

        def measure(rate: float | None, where: LoadTarget = where) -> LoadResult:
            settings = LoadSettings(
                target=where.address,
                protocol=protocol,
                path=where.path,
                connections=load.connections,
                rate=rate,
                duration=duration,
                warmup=load.warmup_seconds,
                timeout=load.request_timeout_seconds,
                new_connection=load.new_connection,
            )
            return run_generator(settings, timeout=duration + load.warmup_seconds + 60)

        try:
            answer = search_max_rate(measure, target)
        except GeneratorError as error:
            raise UsageError(f"variant {display(variant.name)!r}: {error}") from None
        for line in describe(variant.name, answer):
            print(visible(line))
    return 0


def _add_load_options(run: argparse.ArgumentParser) -> None:
    load = run.add_argument_group("load (quick mode against servers, instead of -c)")
    load.add_argument(
        "--url",
        action="append",
        default=[],
        metavar="URL",
        help="a server to load: http://HOST:PORT/PATH or HOST:PORT (repeat; the first is the "
        "baseline)",
    )
    load.add_argument("--protocol", help="http (default) or memcached")
    load.add_argument("--connections", type=integer, help="connections (default 10)")
    load.add_argument("--rate", type=float, help="open loop: requests per second")
    load.add_argument("--duration", help="each load phase's length, e.g. 5s (default 5s)")
    load.add_argument("--requests", type=integer, help="each load phase's requests, instead")
    load.add_argument("--load-warmup", help="load before each phase, not counted (default 1s)")
    load.add_argument("--request-timeout", help="a request's time limit (default 2s)")
    load.add_argument(
        "--new-connection", action="store_true", help="a new connection for every request"
    )
    load.add_argument(
        "--max-rate-under",
        metavar="pP=LATENCY",
        help="instead of comparing: the highest rate each server keeps with this latency "
        "percentile, e.g. p99=10ms (nothing is stored)",
    )
    load.add_argument(
        "--no-server-metrics",
        action="store_true",
        help="do not sample the server's processes (found by the port it listens on)",
    )


def cmd_run(args: argparse.Namespace) -> int:
    from cutaway.cli.preload import AnalysisPreload
    from cutaway.cli.progress import TerminalProgress
    from cutaway.environment import capture_environment
    from cutaway.output_files import OutputWriteError
    from cutaway.runner.runner import run_experiment
    from cutaway.store import Store

    if args.max_rate_under is not None:
        return _max_rate(args)
    # Before anything else: a typo in an export's directory must cost no measurement.
    check_outputs(args, [(option, path) for option, _, path in exports(args)])
    label = run_label(args)  # before measuring: a bad --version-from exits 2 at once
    if args.resume:
        if args.file or args.cmd:
            raise UsageError("--resume continues a stored experiment: give no file or -c")
        store = Store(args.db, create=False)
        experiment_id = store.resolve(args.resume)
        stored = store.experiment(experiment_id)
        if stored.status == "complete":
            raise UsageError(f"experiment #{experiment_id} is complete: nothing to resume")
        spec, resume_id, environment = stored.spec, experiment_id, stored.environment
    else:
        # The spec first: bad input must leave nothing behind, not even an empty store.
        spec, resume_id, environment = spec_from_args(args), None, capture_environment()
        store = Store(args.db)
    _, bar, lines = STYLES[args.style]
    # The analysis and the reports are imported while only discarded runs go (cli/preload.py).
    preload = AnalysisPreload()
    listeners: list[Listener] = []
    if AnalysisPreload.applies_to(spec):
        preload.start()
        listeners.append(preload)
    try:
        with TerminalProgress(
            bar=False if args.quiet else bar,  # -q: nothing but errors, on a terminal too
            lines=lines and not args.quiet,
            color=color_wanted(args),
            db_option=db_option(args.db),
        ) as progress:
            outcome = run_experiment(
                spec,
                store,
                environment=environment,
                listeners=[*listeners, progress],
                label=label,
                resume_id=resume_id,
            )
    finally:
        preload.wait()
    if outcome.reason == "interrupted":
        # Stopping is what was asked: no analysis (minutes with thousands of variants), only
        # where the runs are stored; `cutaway report N` reports them.
        if not args.quiet:
            print(visible(stored_line(outcome.experiment_id, args.db)), file=sys.stderr)
        return interrupts.exit_status()
    from cutaway.compare import analyze

    try:
        emit(analyze(store, outcome.experiment_id, all_pairs=args.all_pairs), args)
    except KeyboardInterrupt as error:  # every run is stored already: say where, as at the end
        where = stored_line(outcome.experiment_id, args.db).removeprefix("cutaway: ")
        print(visible(f"cutaway: interrupted during the report; {where}"), file=sys.stderr)
        return interrupts.exit_status(error)
    except OutputWriteError as error:
        again = f"cutaway export {outcome.experiment_id}{db_option(args.db)}"
        raise OutputWriteError(
            f"{error}\nthe results are stored: `{again} --format FORMAT -o PATH` writes them"
        ) from None
    finally:
        if not args.quiet:
            if stdout_closed():
                print(
                    "cutaway: standard output was closed: the report was cut short",
                    file=sys.stderr,
                )
            print(visible(stored_line(outcome.experiment_id, args.db)), file=sys.stderr)
    return _run_exit_status(outcome)


def _run_exit_status(outcome: Outcome) -> int:
    """A run that failed makes the whole command fail, as hyperfine's does: a CI job must not
    pass on an experiment whose commands did not work."""
    if outcome.reason == "no-pairs":
        print(
            f"cutaway: experiment #{outcome.experiment_id} has no round in which every variant "
            "succeeded: nothing was compared",
            file=sys.stderr,
        )
        return EXIT_ERROR
    if outcome.failed_runs:
        print(
            f"cutaway: {outcome.failed_runs} counted run(s) failed (see the report); they are "
            "not timed",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from cutaway.compare import analyze
    from cutaway.store import Store

    check_outputs(args, [(option, path) for option, _, path in exports(args)])
    store = Store(args.db, create=False)  # reading never creates a store
    analysis = analyze(store, store.resolve(args.experiment), all_pairs=args.all_pairs)
    emit(analysis, args, args.format)
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from cutaway.compare import VariantMismatch, compare_experiments, variant_map_from_options
    from cutaway.store import Store

    check_outputs(args, [(option, path) for option, _, path in exports(args)])
    store = Store(args.db, create=False)  # reading never creates a store
    first, second = store.resolve(args.first), store.resolve(args.second)
    try:
        variant_map = variant_map_from_options(store, first, second, args.map)
        analysis = compare_experiments(
            store, first, second, all_pairs=args.all_pairs, variant_map=variant_map
        )
    except VariantMismatch as error:
        raise UsageError(str(error)) from None
    emit(analysis, args, args.format)
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from cutaway.store import Store
    from cutaway.store.listing import read_listing

    rows = read_listing(args.db)
    if rows is None:  # a store to migrate, or one with a problem that Store names
        store = Store(args.db, create=False)  # reading never creates a store
        rows = [
            (r.id, r.name, r.status, r.created_at, r.label, r.n_variants, r.n_runs)
            for r in store.list_experiments(on_damaged=_skipped)
        ]
    print_listing(rows, args.db)
    return EXIT_OK


def _skipped(error: Exception) -> None:
    """A damaged experiment that `list` leaves out: the others are still worth listing."""
    print(visible(f"cutaway: warning: left out of the list: {error}"), file=sys.stderr)


def cmd_export(args: argparse.Namespace) -> int:
    from cutaway.compare import analyze
    from cutaway.output_files import write_output_file
    from cutaway.report import FORMATS
    from cutaway.report.csv_format import render_runs_csv
    from cutaway.store import Store

    if args.output is not None:
        check_outputs(args, [("-o/--output", args.output)])
    if args.variant is not None and args.format not in FLAME_GRAPHS:
        raise UsageError(f"--variant is for --format {' or '.join(FLAME_GRAPHS)}")
    store = Store(args.db, create=False)  # reading never creates a store
    experiment_id = store.resolve(args.experiment)
    if args.format == "runs-csv":
        text = render_runs_csv(store.runs(experiment_id))
    elif args.format == "series-csv":
        from cutaway.metrics.series import render_series_csv

        text = render_series_csv(store, experiment_id)
    elif args.format in ("folded", "speedscope"):
        from cutaway.probes.profile.export import export_profiles

        try:
            text = export_profiles(store, experiment_id, args.format)
        except ValueError as error:
            raise UsageError(str(error)) from None
    elif args.format in FLAME_GRAPHS:
        from cutaway.probes.profile.flamegraph import export_flamegraph, export_flamegraph_diff

        render = export_flamegraph if args.format == "flamegraph" else export_flamegraph_diff
        try:
            text = render(store, experiment_id, args.variant)
        except ValueError as error:
            raise UsageError(str(error)) from None
    else:
        text = FORMATS[args.format].render(analyze(store, experiment_id))
    if args.output is not None:
        write_output_file(args.output, text, "-o/--output")
    else:
        write_document(text, sys.stdout)
    return EXIT_OK


COMMANDS = {
    "run": cmd_run,
    "report": cmd_report,
    "compare": cmd_compare,
    "list": cmd_list,
    "export": cmd_export,
    "check": cmd_check,
    "bisect": cmd_bisect,
    "history": cmd_history,
}


def _not_utf8(arguments: Sequence[str]) -> str | None:
    """Why an argument cannot be taken, when one holds bytes that are not UTF-8 (Python keeps
    them as lone surrogates): names, commands, labels and paths are stored as text, where such
    bytes cannot go, so the store refused them once the experiment had begun (a traceback)."""
    for position, argument in enumerate(arguments, start=1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError as error:
            byte = argument[error.start].encode("utf-8", errors="surrogateescape")
            return visible(
                f"argument {position} is not UTF-8 text (byte {byte!r} in {display(argument)!r}): "
                "cutaway keeps names, commands and paths as text"
            )
    return None


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse, and answer an unknown option with the closest known one (``--rnuds``: did you
    mean --rounds?). Exits 2 on bad usage, as argparse does."""
    parser = build_parser()
    every_argument = list(sys.argv[1:] if argv is None else argv)
    problem = _not_utf8(every_argument)
    if problem is not None:
        parser.error(problem)
    arguments, workload = split_workload(every_argument)
    try:
        arguments = normalize_ignore_failure(arguments)
    except ValueError as error:
        parser.error(visible(str(error)))
    args, extras = parser.parse_known_args(normalize_shell(arguments))
    if workload is not None:
        args.workload = [*args.workload, *workload]
    subparser = _subparsers(parser)[args.command]
    different = [message for extra in extras if (message := different_option(extra))]
    if different:  # first: its value may have been taken for a positional argument
        subparser.error(visible("; ".join(different)))
    if args.command == "run":
        extras = _positional_commands(args, extras, subparser)
    if not extras:
        return args
    file = args.file if args.command in ("run", "check") else None
    if file and not os.path.exists(file) and not any(e.startswith("-") for e in extras):
        subparser.error(visible(command_hint([file, *extras])))  # cutaway run sleep 0.01
    known = [o for p in (subparser, parser) for a in p._actions for o in a.option_strings]
    problems = []
    for extra in extras:
        message = f"unrecognized argument {extra}"
        if extra.startswith("-") and len(extra) > 1:
            option = extra.split("=", 1)[0]
            close = difflib.get_close_matches(option, known, n=1, cutoff=0.6)
            if close:
                message += f" (did you mean {close[0]}?)"
        problems.append(message)
    subparser.error(visible("; ".join(problems)))


def _positional_commands(
    args: argparse.Namespace, extras: list[str], subparser: argparse.ArgumentParser
) -> list[str]:
    """`cutaway run 'sleep 0.01' 'sleep 0.02'`, as hyperfine takes commands: positional
    arguments that are not an experiment file are the commands, the first the baseline (with
    -c too, the user may mean hyperfine's -c, --cleanup: said, not guessed). The extras left."""
    if args.file is None or is_experiment_file(args.file) or any(e.startswith("-") for e in extras):
        return extras  # an unknown option's value may have been taken for the positional
    words = [e for e in extras if not e.startswith("-")]
    if args.cmd:
        subparser.error(visible(CLEANUP_NOTE))
    args.cmd, args.file = [args.file, *words], None
    return [e for e in extras if e.startswith("-")]


def split_workload(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """`cutaway bisect ... -- WORKLOAD`: the words after ``--`` are the workload, whatever
    they look like (argparse would give them to no positional after GOOD and BAD)."""
    arguments = list(argv)
    if arguments[:1] != ["bisect"] or "--" not in arguments:
        return arguments, None
    cut = arguments.index("--")
    return arguments[:cut], arguments[cut + 1 :]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Its reader may close standard output or error at any time: the command
    carries on as if nobody watched (cli/streams.py). SIGTERM and SIGHUP stop it as Ctrl-C does,
    with exit status 128 + the signal's number (cutaway.interrupts)."""
    with pipe_safe_streams():
        try:
            args = parse_arguments(argv)
        except KeyboardInterrupt as error:  # nothing started yet
            print("cutaway: interrupted", file=sys.stderr)
            return interrupts.exit_status(error)
        try:
            with interrupts.handling():
                try:
                    command_status = COMMANDS[args.command](args)
                    sys.stdout.flush()  # here, so that a failed write is a message and exit 1
                    return command_status
                except KeyboardInterrupt as error:
                    print("cutaway: interrupted", file=sys.stderr)
                    return interrupts.exit_status(error)
        except KeyboardInterrupt as error:  # landed between the two: said all the same
            print("cutaway: interrupted", file=sys.stderr)
            return interrupts.exit_status(error)
        except Exception as error:
            interruption = interrupts.wrapped_interrupt(error)
            if interruption is not None:  # it landed while a module was imported
                print("cutaway: interrupted", file=sys.stderr)
                return interrupts.exit_status(interruption)
            status = _exit_status(error)
            if status is None:  # a bug: its traceback, escaped, and Python's own status
                import traceback

                sys.stderr.write(visible(traceback.format_exc(), keep_newlines=True))
                return EXIT_ERROR
            # Lines stay lines (an error may quote a command's stderr); nothing else passes.
            print(f"cutaway: {visible(str(error), keep_newlines=True)}", file=sys.stderr)
            return status


def _exit_status(error: Exception) -> int | None:
    """EXIT_USAGE or EXIT_ERROR for an error cutaway reports in one line, None for any other
    (a bug: its traceback is shown). The error classes are imported here, once an error has
    happened, so that `--version` and `--help` import neither the store nor the spec parser."""
    from cutaway.history import HistoryError
    from cutaway.output_files import OutputPathError, OutputWriteError
    from cutaway.runner.errors import ProbeUnavailable, RunnerError
    from cutaway.runner.forkserver import ForkServerError
    from cutaway.spec import SpecError
    from cutaway.store import BadStorePath, BadStoreUrl, DamagedStoreError, StoreError
    from cutaway.versions import VersionError

    # A damaged store is bad input, as a bad experiment file is: nothing can be measured from it.
    if isinstance(
        error,
        (
            SpecError,
            UsageError,
            OutputPathError,
            ProbeUnavailable,
            DamagedStoreError,
            BadStorePath,
            BadStoreUrl,
            HistoryError,
            VersionError,
        ),
    ):
        return EXIT_USAGE
    if isinstance(error, (RunnerError, StoreError, ForkServerError, OutputWriteError)):
        return EXIT_ERROR
    return None


if __name__ == "__main__":
    sys.exit(main())
