"""Run an experiment: hooks, calibration, warmup and counted rounds in balanced orders.

Each completed run is written to the store as soon as it finishes (one transaction), so an
interruption or a crash loses at most the run in progress. Ctrl-C and SIGTERM stop the running
command's process group; the current run's ``conclude`` and every started variant's ``cleanup``
still run; the experiment is marked incomplete and ``cutaway run --resume`` continues it, skipping
every (round, variant) already stored."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from cutaway import __version__, events
from cutaway.environment import capture_end
from cutaway.model import Calibration, Run, RunStatus, Spec, Variant
from cutaway.probes.base import Attachment, Probe, ProbeError
from cutaway.probes.registry import build_probes
from cutaway.runner.adaptive import ADAPTIVE_MAX_ROUNDS, widest_interval
from cutaway.runner.errors import RunnerError as RunnerError
from cutaway.runner.executor import Executor, ProcessExecutor, run_environment
from cutaway.runner.hooks import HookResult, run_hook
from cutaway.runner.order import round_order
from cutaway.store import Store

CALIBRATION_RUNS = 30
CALIBRATION_VARIANT = Variant(name="(calibration)", command=("true",))


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM, so it stops an experiment the way Ctrl-C does."""


@dataclass(frozen=True)
class Outcome:
    experiment_id: int
    status: str  # "complete" or "incomplete"
    reason: str  # "done", "budget", "interrupted", "error"


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _shielded() -> Iterator[None]:
    """Ignore Ctrl-C and SIGTERM while cleaning up: a second Ctrl-C must not skip a cleanup."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
    ) -> None:
        self.spec = spec
        self.store = store
        self.experiment_id = experiment_id
        self.executor = executor
        self.listeners = tuple(listeners)
        self.probes = tuple(probes)
        self.clock = clock
        self.done = store.completed_slots(experiment_id)
        self.set_up: list[Variant] = []  # variants whose setup ran, in order: their cleanup runs
        self.runs_done = 0
        self.started = clock()

    def emit(self, event: events.Event) -> None:
        for listener in self.listeners:
            listener(event)

    # -- hooks ---------------------------------------------------------------------------------

    def hook(self, variant: Variant, name: str) -> HookResult | None:
        result = run_hook(variant, name)
        if result is not None:
            self.emit(events.HookRan(variant.name, name, result.command, result.exit_code))
        return result

    def setup_all(self) -> None:
        for variant in self.spec.variants:
            result = self.hook(variant, "setup")
            self.set_up.append(variant)
            if result is not None and not result.ok:
                raise RunnerError(_hook_failure(variant, result))

    def cleanup_all(self) -> None:
        with _shielded():
            for variant in reversed(self.set_up):
                result = self.hook(variant, "cleanup")
                if result is not None and not result.ok:
                    self.emit(events.Notice(_hook_failure(variant, result)))
            self.set_up.clear()

    # -- runs ----------------------------------------------------------------------------------

    def calibrate(self) -> None:
        if self.store.experiment(self.experiment_id).calibration is not None:
            return
        walls = []
        for _ in range(CALIBRATION_RUNS):
            measured = self.executor.measure(CALIBRATION_VARIANT, None)
            if measured.status is RunStatus.OK:
                walls.append(measured.metrics["wall"])
        if not walls:
            return
        walls.sort()
        calibration = Calibration("true", len(walls), walls[len(walls) // 2], walls[0])
        self.store.set_calibration(self.experiment_id, calibration)
        self.emit(events.CalibrationDone(calibration))

    def attach(self, variant: Variant) -> Attachment:
        """Every probe's attachment to the variant's next run, combined in probe order."""
        env: dict[str, str] = {}
        prefix: tuple[str, ...] = ()
        base = run_environment(variant)
        for probe in self.probes:
            attachment = probe.before_run({**base, **env})
            env.update(attachment.env)
            prefix += attachment.argv_prefix
        return Attachment(env, prefix)

    def run_one(self, variant: Variant, round_index: int, position: int, planned: int) -> None:
        self.emit(events.RunStarted(variant.name, round_index, position))
        prepared = self.hook(variant, "prepare")
        if prepared is not None and not prepared.ok:
            raise RunnerError(_hook_failure(variant, prepared))
        started_at = time.time()
        attachment = self.attach(variant)
        try:
            measured = self.executor.measure(variant, self.spec.timeout_seconds, attachment)
        finally:
            data = [item for probe in self.probes for item in probe.after_run()]
            with _shielded():
                concluded = self.hook(variant, "conclude")
        run = Run(
            variant=variant.name,
            round_index=round_index,
            order_in_round=position,
            status=measured.status,
            exit_code=measured.exit_code,
            signal=measured.signal,
            metrics=measured.metrics,
            started_at=started_at,
            message=measured.message,
        )
        self.store.add_run(self.experiment_id, run, data)
        self.done.add((round_index, variant.name))
        self.runs_done += 1
        elapsed = self.clock() - self.started
        self.emit(events.RunFinished(run, self.runs_done, planned, elapsed))
        if concluded is not None and not concluded.ok:
            self.emit(events.Notice(_hook_failure(variant, concluded)))

    def run_round(self, round_index: int, planned: int) -> None:
        order = round_order(len(self.spec.variants), round_index, self.spec.seed)
        for position, index in enumerate(order):
            variant = self.spec.variants[index]
            if (round_index, variant.name) not in self.done:
                self.run_one(variant, round_index, position, planned)
        if round_index >= 0:
            self.emit(events.RoundFinished(round_index, self.spec.rounds))

    def over_budget(self) -> bool:
        budget = self.spec.max_time_seconds
        return budget is not None and self.clock() - self.started >= budget

    def rounds(self) -> Iterator[int]:
        """Round indices to run: warmup, the planned rounds, then adaptive rounds if asked."""
        yield from range(-self.spec.warmup_rounds, self.spec.rounds)
        if self.spec.until_width is None:
            return
        round_index = self.spec.rounds
        while round_index < ADAPTIVE_MAX_ROUNDS:
            width = widest_interval(self.store, self.experiment_id, self.spec)
            if width is not None and width <= self.spec.until_width:
                self.emit(events.Notice(f"every interval is within {self.spec.until_width:.2%}"))
                return
            yield round_index
            round_index += 1

    def run_all(self) -> str:
        """Run every round not yet stored. Returns the reason it stopped: "done" or "budget"."""
        per_round = len(self.spec.variants)
        planned = (self.spec.warmup_rounds + self.spec.rounds) * per_round - len(self.done)
        for round_index in self.rounds():
            if self.over_budget():
                self.emit(events.Notice("stopped: the time budget (max_time) is spent"))
                return "budget"
            self.run_round(round_index, max(planned, self.runs_done + per_round))
        return "done"


def run_experiment(
    spec: Spec,
    store: Store,
    *,
    environment: Mapping[str, object],
    listeners: Iterable[events.Listener] = (),
    label: str | None = None,
    resume_id: int | None = None,
    executor: Executor | None = None,
) -> Outcome:
    """Run (or resume) an experiment to its end, an interruption, or an error.

    Ctrl-C or SIGTERM stops the running command; every cleanup runs, the experiment is marked
    incomplete and the Outcome says "interrupted". A failing setup or prepare hook raises
    RunnerError after the same cleaning up. A probe that cannot work here raises RunnerError
    before anything is stored or run."""
    probes, described = _checked_probes(spec)
    if resume_id is None:
        experiment_id = store.create_experiment(spec, environment, label, __version__)
    else:
        experiment_id = resume_id
        store.set_status(experiment_id, "running")
    executor = executor or ProcessExecutor()
    runner = ExperimentRunner(spec, store, experiment_id, executor, listeners, probes)
    resumed = len(runner.done)
    names = tuple(v.name for v in spec.variants)
    runner.emit(
        events.ExperimentStarted(
            experiment_id, spec.name, names, spec.rounds, spec.warmup_rounds, resumed
        )
    )
    for probe, description in zip(probes, described, strict=True):
        if resume_id is None or not any(p.name == probe.name for p in store.probes(experiment_id)):
            cost = probe.overhead()
            store.set_probe(
                experiment_id, probe.name, description, cost.per_event, cost.per_process
            )
        runner.emit(events.Notice(f"probe {probe.name}: {description}"))
    status, reason = "incomplete", "error"
    try:
        with _sigterm_as_interrupt():
            try:
                runner.setup_all()
                runner.calibrate()
                reason = runner.run_all()
                status = "complete"
            except KeyboardInterrupt:
                reason = "interrupted"
            finally:
                runner.cleanup_all()
    finally:
        executor.close()
        for probe in probes:
            probe.close()
        store.finish_experiment(experiment_id, status, capture_end())
        runner.emit(events.ExperimentFinished(experiment_id, status, reason))
    return Outcome(experiment_id, status, reason)


def _checked_probes(spec: Spec) -> tuple[list[Probe], list[str]]:
    """The spec's probes, each checked (its backend described), or RunnerError saying why one
    cannot work here; nothing is left behind either way."""
    probes = _built_probes(spec)
    try:
        return probes, [probe.check() for probe in probes]
    except (ProbeError, OSError) as error:
        for probe in probes:
            probe.close()
        raise RunnerError(f"probe cannot run here: {error}") from None


def _built_probes(spec: Spec) -> list[Probe]:
    try:
        return build_probes(spec.probes)
    except OSError as error:
        raise RunnerError(f"probe cannot run here: {error}") from None


def _hook_failure(variant: Variant, result: HookResult) -> str:
    detail = f": {result.output}" if result.output else ""
    return (
        f"variant {variant.name!r}: {result.hook} hook `{result.command}` "
        f"exited with status {result.exit_code}{detail}"
    )
