"""Run an experiment: hooks, calibration, warmup and counted rounds in balanced orders.

Each completed run is written to the store as soon as it finishes (one transaction), or, when
runs are made in blocks (run_blocks: nothing to do between two runs), as soon as its block of
about 0.1 s ends: so an interruption loses at most the run in progress, a crash at most that
and its block's finished runs. What a run leaves running after it
ends is counted with it, and stopped by the fork server unless Spec.keep_leftovers. Ctrl-C and
SIGTERM stop the running command's process group (and what it left outside it); the current
run's ``conclude`` and every started variant's ``cleanup`` still run; the experiment is marked
incomplete and ``cutaway run --resume`` continues it, skipping every (round, variant) already
stored. A load phase is stopped more gently (SIGINT, a grace period): the generator's summary
of what it measured is stored with the run, whose status ``interrupted`` keeps it out of
every figure and lets the resumed experiment run it again.

Its length: the run loop, its hooks and its interruption handling are one state machine (a
signal's effect depends on the step it lands in), kept in one module so that every step's
cleanup is in sight of the step."""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from cutaway import __version__, events, interrupts
from cutaway.environment import capture_end
from cutaway.metrics.collect import MetricCollector, MetricError
from cutaway.model import TIMED, Run, RunData, RunStatus, Spec, Variant
from cutaway.probes.base import (
    Attachment,
    MeasuredPhase,
    Measurement,
    Overhead,
    PhaseError,
    PhaseRun,
    Probe,
    ProbeError,
)
from cutaway.probes.core import build_probes, measured_phase
from cutaway.runner import calibration
from cutaway.runner.adaptive import ADAPTIVE_MAX_ROUNDS, load_analysis, widest_interval
from cutaway.runner.errors import ProbeUnavailable, UnrunnableCommand
from cutaway.runner.errors import RunnerError as RunnerError
from cutaway.runner.executor import (
    BlockExecutor,
    BlockInterrupted,
    Executor,
    ProcessExecutor,
    RunInterrupted,
)
from cutaway.runner.forkserver import executable_path
from cutaway.runner.hooks import HookResult, Restoring, run_hook
from cutaway.runner.order import round_order, williams_row_count
from cutaway.store import Store, StoreError
from cutaway.store.lease import Owner
from cutaway.value_class import value_class
from cutaway.variant_environment import run_environment
from cutaway.versions import variant_versions
from cutaway.visible import display

_NOTHING_ATTACHED = Attachment()  # a run without probes (immutable: one for all of them)
# A block of plain runs (ExperimentRunner.run_blocks) ends after this long, or this many runs:
# what a kill of cutaway may lose of runs that ended (Ctrl-C loses none), and how long the
# progress shown may lag behind.
BLOCK_SECONDS = 0.1
BLOCK_RUNS = 1000
_LEAST_BLOCK_SECONDS = 1e-6  # a block's time limit is positive: it makes one run at least

# Asked after the planned rounds and after every adaptive round: None to go on, else why the
# experiment may stop (cutaway.gate stops as soon as its verdict is settled).
Settled = Callable[[Store, int], str | None]


@value_class
class Outcome:
    """How an invocation ended. ``failed_runs`` counts the counted runs that did not succeed
    (failed, crashed, timed out) in it: cutaway's exit status is non-zero when there are any."""

    experiment_id: int
    status: str  # "complete" or "incomplete"
    reason: str  # "done", "budget", "interrupted", "error", "no-pairs"
    failed_runs: int = 0


class ExperimentRunner:
    """One invocation of an experiment (new or resumed). Use :func:`run_experiment`."""

    def __init__(
        self,
        spec: Spec,
        store: Store,
        experiment_id: int,
        executor: Executor,
        listeners: Iterable[events.Listener],
        probes: Sequence[Probe] = (),
        clock: Callable[[], float] = time.monotonic,
        settled: Settled | None = None,
        calibrations: calibration.CalibrationCache | None = None,
        phase: MeasuredPhase | None = None,
    ) -> None:
        self.spec = spec
        self.phase = phase  # what every measured run runs, when a probe owns it (the load phase)
        self.settled = settled
        self.calibrations = calibrations  # None: the harness's cost is measured every time
        self.store = store
        self.experiment_id = experiment_id
        self.executor = executor
        self.listeners = tuple(listeners)
        # Probes attached to every timed run, and probes that get untimed runs of their own.
        self.probes = tuple(probe for probe in probes if not probe.own_runs)
        self.separate = tuple(probe for probe in probes if probe.own_runs)
        self.clock = clock
        self.done = store.completed_slots(experiment_id)
        # (variant, purpose) that have run successfully at least once: a failure of any other
        # is its first run failing, which stops the experiment (a command that cannot work).
        stored = store.runs(experiment_id, purpose=None)
        self.proven = {(run.variant, run.purpose) for run in stored if run.ok}
        # Whether a slot may hold a stored run (an interrupted one, when resuming), which the
        # run stored there replaces: in a new experiment none can, and none is looked for.
        self.replacing = bool(stored)
        self.failed_runs = 0  # counted runs that did not succeed, in this invocation
        self.metrics = MetricCollector(spec.metrics)  # declared metrics ([[metrics]])
        self.set_up: list[Variant] = []  # variants whose setup ran, in order: their cleanup runs
        # The cleanup hooks: the first interrupt is announced, the next one stops them.
        self.restoring = Restoring(self._announce_restoring)
        self.left_behind: set[str] = set()  # variants whose runs left processes running
        self.runs_done = 0
        self.started = clock()

    def emit(self, event: events.Event) -> None:
        for listener in self.listeners:
            listener(event)

    # -- hooks ---------------------------------------------------------------------------------

    def hook(self, variant: Variant, name: str) -> HookResult | None:
        result = run_hook(
            variant, name, timeout_seconds=self.spec.hook_timeout_seconds, restoring=self.restoring
        )
        if result is not None:
            self.emit(events.HookRan(variant.name, name, result.command, result.exit_code))
        return result

    def setup_all(self) -> None:
        families: set[str] = set()
        for variant in self.spec.variants:
            # The copies of one variant under [[conditions]] share its setup and cleanup.
            if variant.family_name in families:
                continue
            families.add(variant.family_name)
            # Before the hook runs: a setup interrupted half-way is cleaned up too.
            interrupts.check()
            self.set_up.append(variant)
            result = self.hook(variant, "setup")
            interrupts.check()
            if result is not None and not result.ok:
                raise RunnerError(_hook_failure(variant, result))

    def wait_until_ready(self) -> None:
        """Each variant is ready for the measured phase's runs before the first round: a load
        experiment's servers, started by setup hooks, accept connections (each bounded by
        ``ready_timeout``)."""
        if self.phase is None:
            return
        for variant in self.spec.variants:
            try:
                _wait_until_ready(self.phase, variant)
            except PhaseError as error:
                raise RunnerError(str(error)) from None

    def measured_variant(self, variant: Variant) -> Variant:
        """What the executor runs for ``variant``: its command, or the measured phase's (the
        load generator)."""
        return variant if self.phase is None else self.phase.measured_variant(variant)

    def preflight(self) -> None:
        """Every variant's program can start: checked once, after setup hooks (which may build
        or install it) and before the first run, so a typo costs no rounds."""
        for variant in self.spec.variants:
            problem = self.executor.check(self.measured_variant(variant))
            if problem is not None:
                raise RunnerError(
                    f"variant {display(variant.name)!r} cannot run: {problem} "
                    f"(command: {_command_text(variant)})"
                )

    def probe_warnings(self) -> None:
        """What each probe has to say about each variant's program before the first run (a
        binary without symbols for the profile probe), as notices."""
        probes = (*self.probes, *self.separate)
        if not probes:
            return
        for variant in self.spec.variants:
            if isinstance(variant.command, str) or variant.shell:
                continue  # a shell command line: its programs are not known before it runs
            path = run_environment(variant).get("PATH", os.defpath)
            program = shutil.which(variant.command[0], path=path)
            for probe in probes:
                warning = None if program is None else probe.check_program(program)
                if warning is not None:
                    self.emit(events.Notice(f"variant {display(variant.name)!r}: {warning}"))

    def _announce_restoring(self, variant: str, hook: str) -> None:
        self.emit(
            events.Notice(
                f"interrupted: the {hook} hook of {display(variant)!r} runs to its end first, "
                "and every cleanup after it (another interrupt stops them)"
            )
        )

    @interrupts.holding
    def cleanup_all(self) -> None:
        """Every started variant's cleanup, in reverse order. Interrupts are held. After an
        interrupt they run to their end, announced; one that comes after the announcement
        stops the cleanup that runs (run_hook) and the ones after it, which are named."""
        cleanups = [variant.name for variant in self.set_up if variant.hooks.cleanup]
        if cleanups and interrupts.count() and not self.restoring.stopped():
            # They run to their end: without a word, the stop asked for would look ignored.
            self.emit(events.Notice(_cleaning_up_notice(cleanups)))
            self.restoring.mark_announced()
        left: list[tuple[Variant, str]] = []  # not cleaned up: (variant, how)
        for variant in reversed(self.set_up):
            if variant.hooks.cleanup and self.restoring.stopped():
                left.append((variant, "did not run"))
                continue
            result = self.hook(variant, "cleanup")
            if result is not None and result.stopped:
                left.append((variant, "was stopped half way"))
            elif result is not None and not result.ok:
                self.emit(events.Notice(_hook_failure(variant, result)))
        if left:
            self.emit(events.Notice(_not_cleaned_up_notice(left)))
        self.set_up.clear()

    # -- runs ----------------------------------------------------------------------------------

    def calibrate(self, resumed: bool) -> None:
        """The harness's cost, before the first run: reused while the machine is unchanged,
        else measured now (cutaway.runner.calibration). A resumed experiment keeps its own."""
        if resumed and self.store.experiment(self.experiment_id).calibration is not None:
            return
        measured = calibration.calibrate(self.executor, self.calibrations)
        if measured is None:
            return
        self.store.set_calibration(self.experiment_id, measured.calibration)
        self.emit(
            events.CalibrationDone(measured.calibration, measured.measured_at, measured.reused)
        )

    def attach(self, variant: Variant, probes: Sequence[Probe]) -> Attachment:
        """Every probe's attachment to the variant's next run, combined in probe order."""
        if not probes:
            return _NOTHING_ATTACHED
        env: dict[str, str] = {}
        prefix: tuple[str, ...] = ()
        base = run_environment(variant)
        for probe in probes:
            attachment = probe.before_run({**base, **env})
            env.update(attachment.env)
            prefix += attachment.argv_prefix
        return Attachment(env, prefix)

    def run_one(
        self,
        variant: Variant,
        round_index: int,
        position: int,
        planned: int,
        purpose: str = TIMED,
    ) -> None:
        """One run of ``variant``: timed, with every attached probe, or (``purpose`` naming a
        probe with runs of its own) untimed, with that probe alone."""
        probes = self.probes
        if purpose != TIMED:
            probes = tuple(probe for probe in self.separate if probe.name == purpose)
        interrupts.check()
        self.emit(events.RunStarted(variant.name, round_index, position, purpose))
        prepared = self.hook(variant, "prepare") if variant.hooks.prepare is not None else None
        interrupts.check()  # one that stopped the prepare hook: before measuring anything
        if prepared is not None and not prepared.ok:
            raise RunnerError(_hook_failure(variant, prepared))
        started_at = time.time()
        # Declared metrics: sampled during the run, read after it (cutaway.metrics.collect).
        try:
            collecting = self.metrics.start(variant)
        except MetricError as error:
            raise RunnerError(str(error)) from None
        attachment = collecting.attach(self.attach(variant, probes))
        timeout = self.spec.timeout_seconds
        phase_run: PhaseRun | None = None
        phase_data: list[RunData] = []
        interruption: BaseException | None = None
        ended_on_its_own = False  # an interrupted run that had ended before the interrupt

        if self.phase is not None:
            try:
                phase_run = self.phase.start_run(variant, attachment, timeout)
            except PhaseError as error:
                collecting.stop()
                raise RunnerError(str(error)) from None
            attachment, timeout = phase_run.attachment, phase_run.timeout_seconds
        try:
            try:
                # The executor lets an interrupt stop the run itself, and holds it otherwise
                # (cutaway.interrupts): from here the run, once ended, is stored and counted.
                measured = self.executor.measure(
                    self.measured_variant(variant), timeout, attachment
                )
            except RunInterrupted as stopped:
                measured, interruption = stopped.measurement, stopped.interruption
                ended_on_its_own = stopped.ended_on_its_own
            if self.spec.ignore_failure:
                measured = _failure_ignored(measured)
            if phase_run is not None:
                measured, phase_data = phase_run.finish(measured)
            measured = collecting.after_run(measured)
            if interruption is None and measured.status is RunStatus.INTERRUPTED:
                # An interrupt stopped a metric's command after the run: the interrupt is
                # raised once the run is stored, as one that stopped the run itself.
                interruption = interrupts.take() or interrupts.Stopped(
                    interrupts.first_signal() or signal.SIGINT
                )
        finally:
            if phase_run is not None:
                phase_run.stop()
            data = list(phase_data)
            measured_by_probes: dict[str, float] = {}
            if probes:
                data[:0] = _probe_data(probes)
                measured_by_probes = {
                    name: value for probe in probes for name, value in probe.run_metrics().items()
                }
            data += collecting.stop()
            concluded = (
                self.hook(variant, "conclude") if variant.hooks.conclude is not None else None
            )
        metrics = measured.metrics  # Run keeps a copy of its own
        if measured_by_probes:
            metrics = {**metrics, **measured_by_probes}
        run = _run_of(variant, round_index, position, purpose, measured, metrics, started_at)
        self.store.add_run(self.experiment_id, run, data, replace=self.replacing)
        self.count(variant, run, planned, concluded, interruption, ended_on_its_own)

    def count(
        self,
        variant: Variant,
        run: Run,
        planned: int,
        concluded: HookResult | None = None,
        interruption: BaseException | None = None,
        ended_on_its_own: bool = False,
    ) -> None:
        """Count a run just stored and say so; then raise what it calls for: the interruption
        that came during it, or a RunnerError when it was the first run of its variant and
        failed (a command that cannot work)."""
        if interruption is not None and not ended_on_its_own:
            # Kept for what it measured, never counted: a resumed experiment runs it again.
            self.emit(events.Notice(_interrupted_notice(run)))
            raise interruption
        purpose = run.purpose
        self.done.add((run.round_index, variant.name, purpose))
        self.runs_done += 1
        elapsed = self.clock() - self.started
        self.emit(events.RunFinished(run, self.runs_done, planned, elapsed))
        if concluded is not None and not concluded.ok:
            self.emit(events.Notice(_hook_failure(variant, concluded)))
        if run.leftover_processes and variant.name not in self.left_behind:
            self.left_behind.add(variant.name)  # said once per variant; the report counts all
            self.emit(events.Notice(_leftover_notice(variant, run, self.spec.keep_leftovers)))
        if interruption is not None:  # it came after the run had ended: stored and counted
            raise interruption
        if run.ok:
            self.proven.add((variant.name, purpose))
            return
        if (variant.name, purpose) not in self.proven:
            ignoring = self.spec.ignore_failure or self.phase is not None
            raise RunnerError(_first_run_failure(variant, run, ignoring))
        if run.round_index >= 0:
            self.failed_runs += 1

    def purposes(self, round_index: int) -> tuple[str, ...]:
        """What each variant runs for in a round: timed, then (counted rounds only: warmup
        exists to warm the timed runs) once for each probe that needs runs of its own."""
        if round_index < 0:
            return (TIMED,)
        return (TIMED, *(probe.name for probe in self.separate))

    def run_round(self, round_index: int, planned: int) -> None:
        order = round_order(len(self.spec.variants), round_index, self.spec.seed)
        # The timed runs first, undisturbed, then each separate probe's runs in the same order.
        for purpose in self.purposes(round_index):
            for position, index in enumerate(order):
                variant = self.spec.variants[index]
                if (round_index, variant.name, purpose) not in self.done:
                    self.run_one(variant, round_index, position, planned, purpose)
                    interrupts.check()  # one held while the run was analysed and stored

        if round_index >= 0:
            self.emit(events.RoundFinished(round_index, self.spec.rounds))

    def kept(self) -> tuple[int, int]:
        """(runs, complete counted rounds) stored so far, resumed ones included."""
        variants_by_round: dict[int, int] = {}
        for round_index, _, purpose in self.done:
            if purpose == TIMED:  # a round is complete when every variant's timed run is stored
                variants_by_round[round_index] = variants_by_round.get(round_index, 0) + 1
        complete = sum(
            1
            for round_index, count in variants_by_round.items()
            if round_index >= 0 and count == len(self.spec.variants)
        )
        return len(self.done), complete

    def over_budget(self) -> bool:
        budget = self.spec.max_time_seconds
        return budget is not None and self.clock() - self.started >= budget

    def rounds(self) -> Iterator[int]:
        """Round indices to run: warmup, the planned rounds, then adaptive rounds if asked
        (adaptive_rounds)."""
        yield from range(-self.spec.warmup_rounds, self.spec.rounds)
        yield from self.adaptive_rounds()

    def adaptive_rounds(self) -> Iterator[int]:
        """Rounds after the planned ones: until every interval is narrow enough
        (``until_width``, asked only when the counted rounds fill whole blocks of orders), or
        until the caller's ``settled`` says so (cutaway.gate), whichever comes first."""
        if self.spec.until_width is None and self.settled is None:
            return
        round_index = self.spec.rounds
        block_rounds = williams_row_count(len(self.spec.variants))
        while round_index < ADAPTIVE_MAX_ROUNDS:
            if self.settled is not None:
                answer = self.settled(self.store, self.experiment_id)
                if answer is not None:
                    self.emit(events.Notice(answer))
                    return
            if self.spec.until_width is None:
                yield round_index
                round_index += 1
                continue
            # Measured before every round, acted on at the end of a block only: the work between
            # rounds stays the same before each one, whichever variant runs first in it, while
            # stopping inside a block would leave some variant first in a round more often than
            # another, and that position's effect in the comparison.
            width = widest_interval(self.store, self.experiment_id, self.spec)
            block_done = round_index % block_rounds == 0
            if block_done and width is not None and width <= self.spec.until_width:
                self.emit(events.Notice(f"every interval is within {self.spec.until_width:.2%}"))
                return
            yield round_index
            round_index += 1

    def run_all(self) -> str:
        """Run every round not yet stored. Returns the reason it stopped: "done" or "budget"."""
        per_round = len(self.spec.variants) * (1 + len(self.separate))
        planned = (
            self.spec.warmup_rounds * len(self.spec.variants)
            + self.spec.rounds * per_round
            - len(self.done)
        )
        if self.spec.until_width is not None or self.settled is not None:
            load_analysis()
        if self.in_blocks():
            # Every round in blocks, the adaptive ones too (a block a round): runs made one at
            # a time measure a little slower than in a block (docs/how-it-works.md).
            if not self.run_blocks(range(-self.spec.warmup_rounds, self.spec.rounds), planned):
                return "budget"
            for round_index in self.adaptive_rounds():
                more = max(planned, self.runs_done + per_round)
                if not self.run_blocks(range(round_index, round_index + 1), more):
                    return "budget"
            return "done"
        for round_index in self.rounds():
            if self.over_budget():
                self.emit(events.Notice("stopped: the time budget (max_time) is spent"))
                return "budget"
            self.run_round(round_index, max(planned, self.runs_done + per_round))
        return "done"

    # -- blocks of plain runs --------------------------------------------------------------

    def in_blocks(self) -> bool:
        """Whether the runs go to the executor in blocks (BlockExecutor.measure_block): when
        nothing happens between two runs but the storing of the first, so that the fork server
        may run them one after the other, as hyperfine does, without a round trip to this
        process for each. Nothing happens when no variant has a prepare or conclude hook, no
        probe attaches to runs or has runs of its own, no metric is declared, no phase owns
        the runs, and the executor can run every variant's command plainly (nothing to feed
        it, no output to keep)."""
        executor = self.executor
        variants = self.spec.variants
        return (
            isinstance(executor, BlockExecutor)
            and self.phase is None
            and not self.probes
            and not self.separate
            and not self.metrics.metrics
            and len({variant.stdout for variant in variants}) == 1
            and all(
                variant.hooks.prepare is None
                and variant.hooks.conclude is None
                and executor.can_block(variant)
                for variant in variants
            )
        )

    def run_blocks(self, round_indices: range, planned: int) -> bool:
        """Run the timed runs of ``round_indices`` not stored yet, in their rounds' orders, in
        blocks of at most BLOCK_RUNS runs and about BLOCK_SECONDS each; store and announce each
        block's runs once it has ended. The time budget is looked at before each round, as
        run_round's caller does. False when it stopped the runs."""
        assert isinstance(self.executor, BlockExecutor)
        variants = self.spec.variants
        slots = [
            (round_index, position, index)
            for round_index in round_indices
            for position, index in enumerate(
                round_order(len(variants), round_index, self.spec.seed)
            )
            if (round_index, variants[index].name, TIMED) not in self.done
        ]
        budget = self.spec.max_time_seconds
        done = 0
        while done < len(slots):
            round_starts = done == 0 or slots[done - 1][0] != slots[done][0]
            if round_starts and self.over_budget():
                self.emit(events.Notice("stopped: the time budget (max_time) is spent"))
                return False
            seconds = BLOCK_SECONDS
            if budget is not None:  # the block ends when the budget is spent, at the latest
                # Spent inside a round (looked at before it only): the round is finished, a
                # run a block, as runs made alone finish it.
                left = budget - (self.clock() - self.started)
                seconds = min(seconds, max(left, _LEAST_BLOCK_SECONDS))
            block = slots[done : done + BLOCK_RUNS]
            started_at = time.time()
            interruption: BaseException | None = None
            try:
                measurements = self.executor.measure_block(
                    variants, [index for _, _, index in block], self.spec.timeout_seconds, seconds
                )
            except BlockInterrupted as stopped:
                measurements, interruption = stopped.measurements, stopped.interruption
            # Runs follow each other closely in a block: each started when the one before it
            # ended, as near as the block's results say.
            runs = []
            for (round_index, position, index), measured in zip(
                block[: len(measurements)], measurements, strict=True
            ):
                if self.spec.ignore_failure:
                    measured = _failure_ignored(measured)
                variant = variants[index]
                metrics = measured.metrics
                runs.append(
                    _run_of(variant, round_index, position, TIMED, measured, metrics, started_at)
                )
                started_at += measured.metrics.get("wall", 0.0)
            # One transaction for the block: its runs reached cutaway together. If it cannot
            # be stored (a full disk), one at a time: the runs that fit are kept and counted,
            # and the error names the first that does not, as without blocks.
            together = True
            try:
                self.store.add_runs(
                    self.experiment_id, [(run, ()) for run in runs], replace=self.replacing
                )
            except StoreError:
                together = False
            for (round_index, position, index), run in zip(block, runs, strict=False):
                variant = variants[index]
                if not together:
                    self.store.add_run(self.experiment_id, run, replace=self.replacing)
                self.emit(events.RunStarted(variant.name, round_index, position, TIMED))
                self.count(variant, run, planned)
                done += 1
                next_round = slots[done][0] if done < len(slots) else None
                if round_index >= 0 and next_round != round_index:
                    self.emit(events.RoundFinished(round_index, self.spec.rounds))
            if interruption is not None:
                raise interruption
            interrupts.check()  # one held while the block's runs were stored
        return True


def run_experiment(
    spec: Spec,
    store: Store,
    *,
    environment: Mapping[str, object],
    listeners: Iterable[events.Listener] = (),
    label: str | None = None,
    resume_id: int | None = None,
    executor: Executor | None = None,
    settled: Settled | None = None,
) -> Outcome:
    """Run (or resume) an experiment to its end, an interruption, or an error.

    Ctrl-C, SIGTERM or SIGHUP stops the running command (or hook); every finished run is
    stored and counted, every cleanup runs, the experiment is marked incomplete and the Outcome
    says "interrupted" (cutaway.interrupts.first_signal() says which signal). Interrupts are
    held everywhere but where one may land safely (the waits for a run or a hook), and raised
    between steps. A failing setup or prepare hook raises
    RunnerError after the same cleaning up. A probe that cannot work here raises RunnerError,
    and a variant's version that cannot be read (cutaway.versions) SpecError, before anything
    is stored or run; a resumed experiment keeps the versions read when it started."""
    with interrupts.handling():
        return _run_experiment(
            spec,
            store,
            environment=environment,
            listeners=listeners,
            label=label,
            resume_id=resume_id,
            executor=executor,
            settled=settled,
        )


@interrupts.holding
def _run_experiment(
    spec: Spec,
    store: Store,
    *,
    environment: Mapping[str, object],
    listeners: Iterable[events.Listener] = (),
    label: str | None = None,
    resume_id: int | None = None,
    executor: Executor | None = None,
    settled: Settled | None = None,
) -> Outcome:
    probes, described = _checked_probes(spec)
    owner = Owner.current()
    cache = None
    if executor is None:  # the real harness: its cost is worth keeping between experiments
        executor = ProcessExecutor(keep_leftovers=spec.keep_leftovers)
        cache = calibration.CalibrationCache(
            calibration.cache_path(), calibration.machine_key(environment, executable_path())
        )
    try:
        if resume_id is None:
            # Before anything is stored: a command that cannot be found is a typo, refused at
            # once as hyperfine does (one that a setup hook may install is checked after it).
            refuse_unrunnable(spec, executor.check)
            # Read before anything runs: a version that cannot be read stores nothing.
            versions = variant_versions(spec, run_environment)
            experiment_id = store.create_experiment(
                spec, environment, label, __version__, owner, versions=versions
            )
        else:
            experiment_id = resume_id
            store.claim(experiment_id, owner)  # refuses an experiment a live process runs
    except BaseException:
        executor.close()
        for probe in probes:
            probe.close()
        raise
    runner = ExperimentRunner(
        spec,
        store,
        experiment_id,
        executor,
        listeners,
        probes,
        settled=settled,
        calibrations=cache,
        phase=measured_phase(spec),
    )
    resumed = len(runner.done)
    names = tuple(v.name for v in spec.variants)
    runner.emit(
        events.ExperimentStarted(
            experiment_id, spec.name, names, spec.rounds, spec.warmup_rounds, resumed
        )
    )
    # A resumed experiment keeps the probe costs it measured (read here: a damaged store is
    # named before anything runs).
    measured = set() if resume_id is None else {p.name for p in store.probes(experiment_id)}
    status, reason = "incomplete", "error"
    stopped_by: BaseException | None = None  # the error that ends the experiment, if any
    try:
        try:
            interrupts.check()
            for probe, description in zip(probes, described, strict=True):
                if probe.name not in measured:
                    cost = _probe_overhead(probe)
                    store.set_probe(
                        experiment_id, probe.name, description, cost.per_event, cost.per_process
                    )
                runner.emit(events.Notice(f"probe {probe.name}: {description}"))
            interrupts.check()
            runner.setup_all()
            runner.wait_until_ready()
            runner.preflight()
            runner.probe_warnings()
            runner.calibrate(resumed=resume_id is not None)
            reason = runner.run_all()
            interrupts.check()
            status = "complete"
            if not store.has_usable_rounds(experiment_id):
                # Runs failed so often that no round holds every variant's success: there
                # is nothing to compare, and "complete" would suggest otherwise.
                status = "incomplete"
                reason = reason if reason == "budget" else "no-pairs"
        except KeyboardInterrupt:
            reason = "interrupted"
        finally:
            runner.cleanup_all()
    except BaseException as error:
        stopped_by = error
        raise
    finally:
        executor.close()
        for probe in probes:
            probe.close()
        if interrupts.discard() and stopped_by is None:
            reason = "interrupted"  # it came once the runs were over: they are all stored
        recorded = _finish(runner, status, stopped_by)
        runner.emit(
            events.ExperimentFinished(
                experiment_id, status if recorded else "running", reason, *runner.kept()
            )
        )
    return Outcome(experiment_id, status, reason, runner.failed_runs)


def refuse_unrunnable(spec: Spec, check: Callable[[Variant], str | None]) -> None:
    """UnrunnableCommand for the first variant whose program cannot start (``check`` says
    why: Executor.check), among those no setup hook may install; a command run through a
    shell is the shell's to find."""
    owned = measured_phase(spec) is not None  # it runs a program of its own (the load generator)
    for variant in spec.variants:
        if variant.hooks.setup is not None or owned:
            continue
        problem = check(variant)
        if problem is not None:
            raise UnrunnableCommand(
                f"variant {variant.name!r} cannot run: {problem} (command: "
                f"{_command_text(variant)}); nothing was stored"
            )


@interrupts.raising
def _wait_until_ready(phase: MeasuredPhase, variant: Variant) -> None:
    """A wait that stores nothing: an interrupt may land anywhere in it."""
    interrupts.check()
    phase.wait_until_ready(variant)


def _finish(runner: ExperimentRunner, status: str, stopped_by: BaseException | None) -> bool:
    """Record how the experiment ended and release its lease; False when even that failed.
    Its failure is raised only when nothing else went wrong: the error that stopped the
    experiment (a full disk, say) must not be hidden behind the failure to record it."""
    try:
        runner.store.finish_experiment(runner.experiment_id, status, capture_end())
    except StoreError as error:
        if stopped_by is None:
            raise
        runner.emit(events.Notice(f"could not record that the experiment stopped: {error}"))
        return False
    return True


def _probe_data(probes: Sequence[Probe]) -> list[RunData]:
    """What each probe captured in the run just ended; RunnerError if a capture is damaged."""
    try:
        return [item for probe in probes for item in probe.after_run()]
    except ProbeError as error:
        raise RunnerError(str(error)) from None


def _checked_probes(spec: Spec) -> tuple[list[Probe], list[str]]:
    """The spec's probes, each checked (its backend described), or RunnerError saying why one
    cannot work here; nothing is left behind either way, an interrupt included."""
    probes = _built_probes(spec)
    try:
        return probes, _probe_checks(probes)
    except (ProbeError, OSError) as error:
        _close_probes(probes)
        raise ProbeUnavailable(f"probe cannot run here: {error}") from None
    except BaseException:
        _close_probes(probes)
        raise


@interrupts.raising
def _probe_checks(probes: Sequence[Probe]) -> list[str]:
    """Each probe's check: seconds of trial runs of its tool (perf records, strace, valgrind)
    before anything is stored, where an interrupt may land anywhere. Held, it waited for all
    of them: 24 s after Ctrl-C with --profile on a busy machine (found by a hostile re-run)."""
    interrupts.check()
    return [probe.check() for probe in probes]


@interrupts.raising
def _probe_overhead(probe: Probe) -> Overhead:
    """A probe's cost, measured by trial runs of its tool that store nothing: an interrupt may
    land anywhere in them (the experiment then ends as interrupted before its first run)."""
    interrupts.check()
    return probe.overhead()


def _close_probes(probes: Sequence[Probe]) -> None:
    for probe in probes:
        probe.close()


def _built_probes(spec: Spec) -> list[Probe]:
    try:
        return build_probes(spec)
    except OSError as error:
        raise ProbeUnavailable(f"probe cannot run here: {error}") from None


def _run_of(
    variant: Variant,
    round_index: int,
    position: int,
    purpose: str,
    measured: Measurement,
    metrics: Mapping[str, float],
    started_at: float,
) -> Run:
    """The stored record of a run that has ended."""
    return Run(
        variant=variant.name,
        round_index=round_index,
        order_in_round=position,
        status=measured.status,
        exit_code=measured.exit_code,
        signal=measured.signal,
        metrics=metrics,
        started_at=started_at,
        message=measured.message,
        leftover_processes=measured.leftover_processes,
        leftover_names=measured.leftover_names,
        purpose=purpose,
    )


def _failure_ignored(measured: Measurement) -> Measurement:
    """A non-zero exit made a success, as ignore_failure asks (grep without a match exits 1 by
    design). A crash or a timeout is never fine; a declared metric read afterwards may still
    fail the run."""
    if measured.status is not RunStatus.FAILED or measured.signal is not None:
        return measured
    return dataclasses.replace(
        measured, status=RunStatus.OK, message=f"{measured.message} (ignored: ignore_failure)"
    )


def _command_text(variant: Variant) -> str:
    """The command as messages quote it: cut short when it is of megabytes."""
    command = variant.command if isinstance(variant.command, str) else shlex.join(variant.command)
    return f"`{display(command)}`"


def _first_run_failure(variant: Variant, run: Run, ignoring: bool) -> str:
    """What the user reads when a variant's first run fails: which command, how it ended
    (exit status, signal, timeout, with the tail of its stderr), and what to do about it."""
    which = "warmup run" if run.warmup else "first run"
    if not run.timed:
        which = f"first run under the {run.purpose} probe (untimed)"
    lines = [f"variant {display(variant.name)!r} failed on its {which}: {_command_text(variant)}"]
    how = run.message or run.status.value
    if run.status is RunStatus.TIMEOUT:
        how = f"timed out: {how}"
    elif run.signal is not None and run.status is RunStatus.FAILED:
        how = f"killed by {_signal_name(run.signal)}: {how}"
    lines.append(f"  {how}")
    # Only for a non-zero exit: a run that exited 0 failed for another reason (a declared
    # metric without its number), which --ignore-failure does not change.
    exited_non_zero = run.exit_code is not None and run.exit_code != 0
    if run.status is RunStatus.FAILED and run.signal is None and exited_non_zero and not ignoring:
        lines.append(
            "  (a command that exits non-zero by design, such as grep without a match, is "
            "timed with --ignore-failure or ignore_failure = true)"
        )
    return "\n".join(lines)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _leftover_notice(variant: Variant, run: Run, kept: bool) -> str:
    count = run.leftover_processes
    processes = "a process" if count == 1 else f"{count} processes"
    names = ", ".join(run.leftover_names)
    fate = (
        "kept running (keep_leftovers)"
        if kept
        else "stopped (keep_leftovers = true or --keep-leftovers keeps them)"
    )
    return f"variant {display(variant.name)!r}: a run left {processes} running ({names}); {fate}"


def _cleaning_up_notice(variants: list[str]) -> str:
    names = ", ".join(repr(name) for name in variants[:3])
    more = f" and {len(variants) - 3} more" if len(variants) > 3 else ""
    return (
        f"interrupted: running the cleanup hooks of {names}{more} first "
        "(another interrupt stops them)"
    )


def _not_cleaned_up_notice(left: list[tuple[Variant, str]]) -> str:
    """What another interrupt left as it was: each variant's cleanup, stopped or not run."""
    hooks = "; ".join(
        f"variant {display(variant.name)!r}: cleanup hook `{display(variant.hooks.cleanup or '')}` "
        f"{how}"
        for variant, how in left
    )
    return (
        f"not cleaned up (another interrupt stopped the cleanup): {hooks}; what they restore "
        "is left as it is"
    )


def _interrupted_notice(run: Run) -> str:
    where = "a warmup round" if run.warmup else f"round {run.round_index}"
    return (
        f"the interrupted run of {run.variant!r} ({where}) is stored with "
        "what it measured, as interrupted: not counted, and run again by --resume"
    )


def _hook_failure(variant: Variant, result: HookResult) -> str:
    detail = f": {result.output}" if result.output else ""
    return (
        f"variant {display(variant.name)!r}: {result.hook} hook `{display(result.command)}` "
        f"{result.outcome()}{detail}"
    )
