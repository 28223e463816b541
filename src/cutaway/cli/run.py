"""`cutaway run`: an experiment file or quick mode measured, then analysed and reported; or,
with --max-rate-under, the highest rate each server keeps under a latency target."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from cutaway import interrupts
from cutaway.cli.run_spec import quick_hooks, quick_mode, spec_from_args
from cutaway.cli.shared import (
    EXIT_ERROR,
    EXIT_OK,
    STYLES,
    UsageError,
    check_outputs,
    color_wanted,
    db_option,
    emit,
    exports,
    run_label,
    stored_line,
)
from cutaway.cli.streams import stdout_closed
from cutaway.visible import visible

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cutaway.environment import GitCommit
    from cutaway.model import Spec
    from cutaway.runner.runner import Outcome
    from cutaway.store import Store


def cmd_run(args: argparse.Namespace) -> int:
    from cutaway.environment import GitCommit

    asked = _probe_run_mode(args)
    if asked is not None:
        return asked
    # The working directory's commit, for the environment's fingerprint: git runs while the
    # runner's modules are imported, instead of being waited for as the experiment starts.
    git = None if args.resume else GitCommit(os.getcwd())
    try:
        return _run_command(args, git)
    finally:
        if git is not None:
            git.read()  # waited for on every path (bad input too): no child is left behind


def _run_command(args: argparse.Namespace, git: GitCommit | None) -> int:
    from cutaway.environment import capture_environment
    from cutaway.probes.core import check_stored_settings
    from cutaway.runner.executor import program_problem
    from cutaway.runner.runner import refuse_unrunnable
    from cutaway.store import Store

    # Before anything else: a typo in an export's directory must cost no measurement.
    check_outputs(args, [(option, path) for option, _, path in exports(args)])
    label = run_label(args)  # before measuring: a bad --version-from exits 2 at once
    if args.resume:
        if args.file or args.cmd:
            raise UsageError("--resume continues a stored experiment: give no file or -c")
        store = Store(args.db, create=False)
        experiment_id = store.resolve(args.resume)
        stored = store.experiment(experiment_id)
        check_stored_settings(store.location, experiment_id, stored.spec)
        if stored.status == "complete":
            raise UsageError(f"experiment #{experiment_id} is complete: nothing to resume")
        spec, resume_id, environment = stored.spec, experiment_id, stored.environment
    else:
        # The spec first: bad input must leave nothing behind, not even an empty store.
        spec = spec_from_args(args)
        refuse_unrunnable(spec, program_problem)  # a typo in a command: not even a store
        resume_id, environment = None, capture_environment(git=git)
        store = Store(args.db)
    try:
        return _run_and_report(args, spec, store, resume_id, environment, label)
    finally:
        store.close()  # its WAL checkpointed into the file now: the process may end at once


def _run_and_report(
    args: argparse.Namespace,
    spec: Spec,
    store: Store,
    resume_id: int | None,
    environment: Mapping[str, object],
    label: str | None,
) -> int:
    """The runs, then the analysis and the report (or, when interrupted, where the runs are)."""
    from cutaway.cli.progress import TerminalProgress
    from cutaway.output_files import OutputWriteError
    from cutaway.runner.runner import run_experiment

    _, bar, lines = STYLES[args.style]
    # The analysis and the reports (numpy, rich) are imported after the runs, never during
    # them: on 2 cores an import competes with the measured command.
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
            listeners=[progress],
            label=label,
            resume_id=resume_id,
        )
    if outcome.reason == "interrupted":
        # Stopping is what was asked: no analysis (minutes with thousands of variants), only
        # where the runs are stored; `cutaway report N` reports them.
        if not args.quiet:
            print(visible(stored_line(outcome.experiment_id, args.db)), file=sys.stderr)
        return interrupts.exit_status()
    from cutaway.kept_analysis import analysis_of  # analysed, and kept for `cutaway report`

    try:
        emit(analysis_of(store, outcome.experiment_id, all_pairs=args.all_pairs), args)
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


def _probe_run_mode(args: argparse.Namespace) -> int | None:
    """A probe's own mode of ``cutaway run`` asked for by its option (``--max-rate-under``:
    the load plugin's search), which prints its answer and stores nothing; None when none was
    asked for."""
    from cutaway.probes.plugin import RunModeError
    from cutaway.probes.registry import run_modes

    def quick_spec() -> Spec | None:
        """The experiment of the plugin's quick mode given (the --url servers), built when the
        mode asks."""
        quick = quick_mode(args)
        return None if quick is None else quick.spec(args, quick_hooks(args))

    for mode in run_modes():
        value = getattr(args, mode.dest, None)
        if value is None:
            continue
        try:
            for line in mode.run(value, quick_spec):
                print(visible(line))
        except RunModeError as error:
            raise UsageError(str(error)) from None
        return EXIT_OK
    return None
