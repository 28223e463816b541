"""`cutaway check`: the CI gate. A candidate and a baseline are measured in paired,
interleaved rounds in the same job (cutaway.runner), rounds are added until the gate's verdict
is settled or the budget is spent (cutaway.gate.decision), and the exit status says what
happened:

- 0: no regression beyond the threshold, with confidence;
- 1: a regression beyond the threshold, with confidence (or the experiment itself failed: a
  command that could not run, runs that failed; the message says which);
- 2: bad input (usage, experiment file, thresholds);
- 3: inconclusive within the budget (a pipeline may choose to fail or to warn);
- 128 + the signal's number (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP): interrupted (the rounds done
  are stored).

It takes every option of `cutaway run` (the same parser actions, shared, so that an option
added to `run` is one of `check` too), and adds --fail-on, --max-rounds and --summary. Like
this package's other modules, it imports the library only when the command runs."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING

from cutaway import interrupts
from cutaway.cli.numbers import integer
from cutaway.visible import visible

if TYPE_CHECKING:
    from cutaway.events import Listener
    from cutaway.gate.decision import GateVerdict
    from cutaway.model import Analysis, Spec
    from cutaway.runner.runner import Outcome, Settled
    from cutaway.store import Store

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3  # interrupted: 128 + signal
# Quick mode plans this many rounds; the gate's first look comes after them, or later if an
# interval at its per-look confidence needs more (7 with the default budget: gate/decision.py).
CHECK_ROUNDS = 5
# Options of `run` that mean nothing to a check.
NOT_FOR_CHECK = ("help", "resume")
SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
STEP_SUMMARY_OPTION = f"${SUMMARY_VARIABLE}"  # as messages name it
# Rounds of the profiled experiment a failed gate runs to say where the difference went: the
# attribution's intervals are per-round differences, and ten rounds resolve a function that
# makes up a few percent of a 5 % slowdown (docs/ci.md).
EXPLAIN_ROUNDS = 10


def add_check_arguments(check: argparse.ArgumentParser, run: argparse.ArgumentParser) -> None:
    """Give ``check`` every option of ``run`` (the same action objects, as argparse's parents
    do), then the gate's own."""
    for action in run._actions:
        if action.dest not in NOT_FOR_CHECK:
            check._add_action(action)
    check.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="METRIC=PCT",
        help="fail when METRIC is worse than the baseline by more than PCT, with confidence "
        "(repeat for several metrics; default: wall=5%%, or instructions at the margin with "
        "--instructions; an experiment file's [check] fail_on table)",
    )
    check.add_argument(
        "--max-rounds",
        type=integer,
        metavar="N",
        help="stop adding rounds after N counted rounds (default 200, or [check] max_rounds); "
        "--max-time bounds the time as well",
    )
    check.add_argument(
        "--explain",
        choices=("auto", "none"),
        default="auto",
        help="when the gate fails, say where the difference went: from the experiment's "
        "profile (--profile, --instructions), else (auto) from a short profiled experiment "
        f"of {EXPLAIN_ROUNDS} rounds run after the gate, within what is left of --max-time "
        "(default: auto)",
    )
    check.add_argument(
        "--summary",
        metavar="PATH",
        help="also write the verdict as Markdown, fit for a pull-request comment (it is "
        f"appended to ${SUMMARY_VARIABLE} when that is set)",
    )


def cmd_check(args: argparse.Namespace) -> int:
    from cutaway.cli.run_spec import spec_from_args
    from cutaway.cli.shared import (
        UsageError,
        check_outputs,
        db_option,
        emit,
        exports,
        stored_line,
    )
    from cutaway.compare import analyze
    from cutaway.gate.decision import GateVerdict, evaluate, overall, plan, settled_when

    started = time.monotonic()  # for what --max-time leaves to say where a regression went
    from cutaway.gate.rules import check_settings, parse_fail_on
    from cutaway.gate.summary import render_lines, render_markdown
    from cutaway.output_files import write_output_file
    from cutaway.store import Store

    outputs = [(option, path) for option, _, path in exports(args)]
    if args.summary is not None:
        outputs.append(("--summary", args.summary))
    step_summary = os.environ.get(SUMMARY_VARIABLE)
    if step_summary:
        outputs.append((STEP_SUMMARY_OPTION, step_summary))
    check_outputs(args, outputs, appended=(STEP_SUMMARY_OPTION,))
    if not args.file and args.rounds is None:
        args.rounds = CHECK_ROUNDS
    spec = spec_from_args(args)
    if len(spec.variants) < 2:
        raise UsageError(
            "a check compares a candidate with a baseline: give two -c commands (the first is "
            "the baseline) or an experiment file with two variants"
        )
    rules = [parse_fail_on(text) for text in args.fail_on]
    settings = check_settings(spec, rules, args.max_rounds)
    store = Store(args.db)
    gate_plan = plan(spec, settings.rules, settings.max_rounds)
    outcome = _run(spec, store, args, settled_when(spec, settings.rules, gate_plan))
    if outcome.reason == "interrupted":
        print(visible(stored_line(outcome.experiment_id, args.db)), file=sys.stderr)
        return interrupts.exit_status()
    failure = _experiment_failure(outcome)
    results = evaluate(store, outcome.experiment_id, spec, settings.rules, gate_plan.confidence)
    verdict = overall(results)
    analysis = analyze(store, outcome.experiment_id, all_pairs=args.all_pairs)
    rounds = analysis.experiments[0].rounds_completed
    stopped = _stopped(verdict, outcome, rounds, settings.max_rounds)
    emit(analysis, args)
    for line in render_lines(results, stopped):
        print(line)
    hint = f"cutaway report {outcome.experiment_id}{db_option(args.db)}"
    markdown = render_markdown(
        results,
        spec,
        experiment_id=outcome.experiment_id,
        rounds=rounds,
        stopped=stopped,
        report_hint=hint,
    )
    failed = [(r.variant, r.metric) for r in results if r.verdict is GateVerdict.FAIL]
    if failed and failure is None and args.explain != "none":
        markdown += _explained(spec, store, args, analysis, outcome.experiment_id, failed, started)
    if args.summary is not None:
        write_output_file(args.summary, markdown, "--summary")
    if step_summary:
        _append_step_summary(step_summary, markdown)
    if not args.quiet:
        print(visible(stored_line(outcome.experiment_id, args.db)), file=sys.stderr)
    if failure is not None:
        print(f"cutaway: {failure}", file=sys.stderr)
        return EXIT_FAIL
    return {
        GateVerdict.PASS: EXIT_PASS,
        GateVerdict.FAIL: EXIT_FAIL,
        GateVerdict.INCONCLUSIVE: EXIT_INCONCLUSIVE,
    }[verdict]


def _explained(
    spec: Spec,
    store: Store,
    args: argparse.Namespace,
    analysis: Analysis,
    experiment_id: int,
    failed: list[tuple[str, str]],
    started: float,
) -> str:
    """The summary's "where it went" section, and its lines on the terminal: from the
    experiment's own profile, else from a profiled experiment run now (--explain auto)."""
    from cutaway.compare import analyze
    from cutaway.gate.where import profile_kind, where_lines, where_markdown, write_flame_graphs
    from cutaway.site import page_file

    note = ""
    where_id = experiment_id
    if not all(profile_kind(analysis, v, m) for v, m in failed):
        profiled = _profiled_experiment(spec, store, args, started)
        if isinstance(profiled, str):
            note = profiled
        else:
            where_id = profiled
            analysis = analyze(store, where_id)
            note = (
                f"From a profiled experiment run after the gate (#{where_id}, "
                f"{analysis.experiments[0].rounds_completed} rounds, perf on-CPU and off-CPU)."
            )
    # A variant without an attribution is said to have no profile: it has no graph either.
    named = {
        variant: page_file(variant).removesuffix(".html")
        for variant, metric in failed
        if profile_kind(analysis, variant, metric) is not None
    }
    files = write_flame_graphs(store, where_id, named, args.summary)
    for line in where_lines(analysis, failed):
        print(line)
    lines = where_markdown(analysis, failed, files, experiment_id=where_id, note=note)
    return "\n".join(lines)


def _profiled_experiment(
    spec: Spec, store: Store, args: argparse.Namespace, started: float
) -> int | str:
    """A short experiment of the same variants with the profile probe, within what is left
    of --max-time (counted from ``started``, monotonic); its id, or why there is none."""
    import dataclasses
    import time

    from cutaway.environment import capture_environment
    from cutaway.runner.runner import RunnerError, run_experiment
    from cutaway.spec.probes import read_probe_option

    remaining = None
    if spec.max_time_seconds is not None:
        remaining = spec.max_time_seconds - (time.monotonic() - started)
        if remaining <= 1.0:
            return "No time was left in --max-time to profile where the difference went."
    where_spec = dataclasses.replace(
        spec,
        name=f"{spec.name} (where)",
        rounds=EXPLAIN_ROUNDS,
        warmup_rounds=0,
        until_width=None,
        max_time_seconds=remaining,
        # --profile: the file's profile settings, or the defaults (the profile probe reads it)
        probes=read_probe_option("--profile", {}, spec.probes),
    )
    if not args.quiet:
        print(f"check: profiling {EXPLAIN_ROUNDS} rounds to say where the difference went")
    try:
        outcome = run_experiment(where_spec, store, environment=capture_environment())
    except RunnerError as error:
        return f"Where the difference went could not be profiled here: {error}"
    if outcome.reason == "interrupted":
        # The user asked to stop: exit 128+n, as bisect's profile does, not the gate's status
        # as if nothing had happened (the gate's experiment and the profiled runs are stored).
        raise KeyboardInterrupt
    return outcome.experiment_id


def _run(spec: Spec, store: Store, args: argparse.Namespace, settled: Settled) -> Outcome:
    from cutaway.cli.progress import TerminalProgress
    from cutaway.cli.shared import STYLES, color_wanted, db_option, run_label
    from cutaway.environment import capture_environment
    from cutaway.runner.runner import run_experiment

    _, bar, lines = STYLES[args.style]
    listeners: list[Listener] = []
    with TerminalProgress(
        bar=bar,
        lines=lines and not args.quiet,
        color=color_wanted(args),
        db_option=db_option(args.db),
    ) as progress:
        listeners.append(progress)
        return run_experiment(
            spec,
            store,
            environment=capture_environment(),
            listeners=listeners,
            label=run_label(args),
            settled=settled,
        )


def _experiment_failure(outcome: Outcome) -> str | None:
    """Why the measurement itself failed (a CI job must not pass on commands that did not
    work), None when it did not."""
    if outcome.reason == "no-pairs":
        return "no round in which every variant succeeded: nothing was compared"
    if outcome.failed_runs:
        return f"{outcome.failed_runs} counted run(s) failed (see the report): the check fails"
    return None


def _stopped(verdict: GateVerdict, outcome: Outcome, rounds: int, max_rounds: int) -> str:
    if verdict != "inconclusive":
        return "stopped when the verdict was settled"
    if outcome.reason == "budget":
        return "stopped when the time budget (--max-time) was spent"
    if rounds >= max_rounds:
        return f"stopped when the budget of {max_rounds} rounds was spent"
    return "stopped"


def _append_step_summary(path: str, markdown: str) -> None:
    """GitHub Actions shows what a step appends to this file on the run's page. Its path was
    checked before the runs (cutaway.output_files' rule); what fails now (a full disk, a FIFO
    nobody reads) is a warning: the gate's verdict stands."""
    from cutaway.output_files import OutputWriteError, append_output_file

    try:
        append_output_file(path, markdown + "\n", STEP_SUMMARY_OPTION)
    except OutputWriteError as error:
        print(visible(f"cutaway: warning: {error}"), file=sys.stderr)
