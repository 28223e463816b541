"""`cutaway bisect GOOD BAD --build CMD -- WORKLOAD`: the first commit that made WORKLOAD
slower (cutaway.bisect). Progress goes to stderr; the result to stdout, the first bad
commit's full hash on a line of its own.

Exit status: 0 found; 1 BAD is not worse than GOOD (nothing to bisect: measured first, within
one test's budget, and said with the interval of the change), or an error; 2 bad
input (not a git repository, unknown commits, GOOD not an ancestor of BAD, GOOD's or BAD's
build failing); 3 unsettled (a test stayed inconclusive after its re-runs, or skipped commits
leave several candidates); 128 + the signal's number interrupted (130 Ctrl-C, 143 SIGTERM, 129
SIGHUP: the worktrees are removed, the experiments kept)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from cutaway.cli.numbers import integer
from cutaway.visible import visible

if TYPE_CHECKING:
    from cutaway.bisect.session import BisectResult, BisectSettings
    from cutaway.store import Store

EXIT_FOUND, EXIT_NOTHING, EXIT_USAGE, EXIT_UNSETTLED = 0, 1, 2, 3


def add_bisect_arguments(bisect: argparse.ArgumentParser) -> None:
    bisect.add_argument("good", metavar="GOOD", help="a commit where the workload is fast")
    bisect.add_argument("bad", metavar="BAD", help="a later commit where it is slower")
    bisect.add_argument(
        "workload",
        nargs="*",
        metavar="WORKLOAD",
        help="after --: the command measured, run in each commit's worktree",
    )
    bisect.add_argument(
        "--repo", default=".", metavar="DIR", help="the git repository (default: .)"
    )
    bisect.add_argument(
        "--build", metavar="CMD", help="shell code that builds a commit, run in its worktree"
    )
    bisect.add_argument(
        "--shell",
        metavar="SHELL",
        help="run WORKLOAD as shell code: --shell alone is /bin/sh -c, --shell=bash bash -c",
    )
    bisect.add_argument(
        "--instructions",
        action="store_true",
        help="compare instructions counted by valgrind (deterministic) rather than wall time",
    )
    bisect.add_argument(
        "--threshold",
        metavar="PCT",
        help="a commit is bad when worse than GOOD by more than PCT with confidence "
        "(default: halfway between GOOD and BAD, as measured)",
    )
    bisect.add_argument("--rounds", type=integer, default=5, help="planned rounds per test (5)")
    bisect.add_argument(
        "--max-rounds", type=integer, default=200, metavar="N", help="rounds per test at most (200)"
    )
    bisect.add_argument("--max-time", help="time budget of each test, e.g. 60s")
    bisect.add_argument(
        "--retries",
        type=integer,
        default=2,
        metavar="N",
        help="re-run an inconclusive test up to N times, each with twice the budget (2)",
    )
    bisect.add_argument("--build-timeout", default="30m", help="time limit of a build (30m)")
    bisect.add_argument("--timeout", help="per-run timeout of the workload, e.g. 10s")
    bisect.add_argument("--seed", type=integer, default=0, help="seed for orders and the bootstrap")
    bisect.add_argument(
        "--explain",
        choices=("auto", "none"),
        default="auto",
        help="once the first bad commit is found, profile it against its parent to say where "
        "the difference went (auto, the default), or not (none)",
    )
    bisect.add_argument(
        "--summary",
        metavar="PATH",
        help="also write the answer as Markdown (with where it went), and the first bad "
        "commit's differential flame graph beside it",
    )
    bisect.add_argument("--export-json", metavar="PATH", help="also write the result as JSON")
    bisect.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def cmd_bisect(args: argparse.Namespace) -> int:
    from cutaway.bisect.git import BisectInputError, open_repository
    from cutaway.bisect.session import run_bisect
    from cutaway.cli.progress import TerminalProgress
    from cutaway.cli.shared import UsageError, check_outputs
    from cutaway.environment import capture_environment
    from cutaway.output_files import write_output_file
    from cutaway.store import Store

    outputs = [
        (o, p) for o, p in (("--export-json", args.export_json), ("--summary", args.summary))
    ]
    outputs = [(option, path) for option, path in outputs if path is not None]
    if outputs:
        check_outputs(args, outputs)
    settings = _settings(args)
    try:
        repository = open_repository(args.repo)
    except BisectInputError as error:
        raise UsageError(str(error)) from None
    store = Store(args.db)
    say = (lambda message: None) if args.quiet else _say
    with TerminalProgress(bar=None if not args.quiet else False, lines=False) as progress:
        try:
            result = run_bisect(
                repository,
                settings,
                store,
                environment=capture_environment,
                notify=say,
                listeners=[progress],
            )
        except BisectInputError as error:
            raise UsageError(str(error)) from None
    lines = [visible(line) for line in _result_lines(result)]
    at = next((i for i, line in enumerate(lines) if line.startswith("tested (")), len(lines))
    lines[at:at] = _where(store, result, args)  # after the answer, before the tests' list
    for line in lines:
        print(line)
    if args.export_json is not None:
        text = json.dumps(result.to_dict(), indent=2) + "\n"
        write_output_file(args.export_json, text, "--export-json")
    return {"found": EXIT_FOUND, "no-regression": EXIT_NOTHING}.get(result.status, EXIT_UNSETTLED)


def _say(message: str) -> None:
    print(visible(f"cutaway bisect: {message}", keep_newlines=True), file=sys.stderr)


def _settings(args: argparse.Namespace) -> BisectSettings:
    import dataclasses

    from cutaway.bisect.session import BisectSettings, judged_metric
    from cutaway.cli.shared import UsageError
    from cutaway.spec import SpecError, fields, limits
    from cutaway.spec.command import command_for

    if not args.workload:
        raise UsageError("no workload: give the command to measure after --, e.g. -- ./bench 100")
    shell = None if args.shell in (None, "none") else args.shell
    text = " ".join(args.workload)
    workload: str | tuple[str, ...]
    if shell == "sh":
        workload = text
    elif shell is not None:
        workload = (shell, "-c", text)
    elif len(args.workload) == 1:
        workload = command_for(text, shell=False, key_path=("WORKLOAD",), shell_hint="pass --shell")
    else:
        workload = tuple(args.workload)
    for option, value in (("--rounds", args.rounds), ("--max-rounds", args.max_rounds)):
        fields.read_integer(value, (option,), 2, limits.MAX_ROUNDS)
    if args.max_rounds < args.rounds:
        raise SpecError("--max-rounds is below --rounds", key="--max-rounds")
    fields.read_integer(args.retries, ("--retries",), 0, limits.MAX_BISECT_RETRIES)
    fields.read_seed(args.seed, ("--seed",))

    def duration(value: str | None, option: str) -> float | None:
        return None if value is None else fields.read_run_timeout(value, (option,))

    settings = BisectSettings(
        good=args.good,
        bad=args.bad,
        workload=workload,
        build=args.build,
        shell=shell == "sh",
        threshold=None
        if args.threshold is None
        else fields.read_margin(args.threshold, ("--threshold",)),
        instructions=bool(args.instructions),
        rounds=args.rounds,
        max_rounds=args.max_rounds,
        max_time_seconds=None
        if args.max_time is None
        else fields.read_max_time(args.max_time, ("--max-time",)),
        retries=args.retries,
        build_timeout_seconds=fields.read_run_timeout(args.build_timeout, ("--build-timeout",)),
        timeout_seconds=duration(args.timeout, "--timeout"),
        seed=args.seed,
        explain=args.explain != "none",
    )
    return dataclasses.replace(settings, metric=judged_metric(settings))


def _where(store: Store, result: BisectResult, args: argparse.Namespace) -> list[str]:
    """Where the first bad commit's difference went, from its profiled experiment: terminal
    lines, and with --summary the Markdown (with the flame graph written beside it)."""
    from cutaway.compare import analyze
    from cutaway.gate.where import where_lines, where_markdown, write_flame_graphs
    from cutaway.output_files import write_output_file

    lines: list[str] = []
    if result.where_note:
        lines.append(visible(f"where: {result.where_note}"))
    markdown = _summary_head(result)
    if result.where_experiment is not None and result.first_bad is not None:
        analysis = analyze(store, result.where_experiment)
        failed = [(result.first_bad[:12], result.metric)]
        lines += [line.replace("check: ", "", 1) for line in where_lines(analysis, failed)]
        lines.append(
            f"  flame graph: cutaway export {result.where_experiment} --format flamegraph-diff "
            f"--variant {result.first_bad[:12]}"
        )
        # The commit's 12 hex digits name the file as they name the variant.
        files = write_flame_graphs(
            store, result.where_experiment, {failed[0][0]: failed[0][0]}, args.summary
        )
        markdown += "\n".join(
            where_markdown(analysis, failed, files, experiment_id=result.where_experiment)
        )
    if args.summary is not None:
        write_output_file(args.summary, markdown + "\n", "--summary")
    return lines


def _summary_head(result: BisectResult) -> str:
    from cutaway.report.markdown_text import code, escape

    body = [f"### cutaway bisect: {escape(result.status)}", ""]
    body += [f"    {escape(line)}" for line in _result_lines(result)]
    if result.first_bad is not None:
        body[1:1] = ["", f"First bad commit: {code(result.first_bad)}", ""]
    return "\n".join(body) + "\n"


def _result_lines(result: BisectResult) -> list[str]:
    from cutaway.report.units import format_change, format_change_interval, format_quantity

    lines: list[str] = []
    if result.status == "found" and result.first_bad is not None:
        first = result.verdict_of(result.first_bad)
        lines += ["first bad commit:", result.first_bad]
        if first is not None:
            lines.append(
                f"  {result.metric} {format_change(first.ratio)} "
                f"{format_change_interval(first.ci_low, first.ci_high)} against GOOD "
                f"{result.good[:12]}: {first.subject}"
            )
    elif result.status == "no-regression":
        lines.append(
            f"BAD {result.bad[:12]} is not worse than GOOD {result.good[:12]}: nothing to bisect"
        )
        measured = result.bad_not_worse()
        if measured is not None:
            lines.append(
                f"  {result.metric} {format_change(measured.ratio)} "
                f"{format_change_interval(measured.ci_low, measured.ci_high)} against GOOD in "
                f"{measured.rounds} rounds: the change, if any, lies in that interval"
            )
    else:
        why = (
            "a test stayed inconclusive" if result.status == "unsettled" else "commits were skipped"
        )
        lines.append(f"the first bad commit is one of these ({why}):")
        lines += [f"  {commit}" for commit in result.candidates]
    lines.append(f"tested ({result.metric} against GOOD {result.good[:12]}):")
    for tested in result.tested:
        change = ""
        if tested.verdict in ("bad", "good", "not worse"):
            change = (
                f" {format_change(tested.ratio)} "
                f"{format_change_interval(tested.ci_low, tested.ci_high)}"
            )
        detail = f" ({tested.message.splitlines()[0]})" if tested.message else ""
        lines.append(
            f"  {tested.commit[:12]} {tested.verdict:<9}{change} {tested.rounds} rounds "
            f"{tested.seconds:.1f} s  {tested.subject}{detail}"
        )
    lines.append(
        f"{format_quantity(result.experiments, 'experiment')}, {result.rounds} rounds, "
        f"{result.seconds / 60:.1f} minutes, over {result.commits} commits"
    )
    return lines
