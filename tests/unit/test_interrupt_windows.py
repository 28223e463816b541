"""A stop signal that lands where raising would break something: while a finished run is
stored. The run is stored and counted, the experiment stops as interrupted, and the count it
reports is the count stored (a real signal, a real store; a fake executor)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from cutaway import events, interrupts
from cutaway.model import Hooks, MetricSpec, RunData, RunStatus, Spec, Variant
from cutaway.probes.base import Attachment, Measurement, Overhead
from cutaway.runner import runner as runner_module
from cutaway.runner.hooks import STOPPED
from cutaway.runner.runner import run_experiment
from cutaway.store import Store


class QuickExecutor:
    def measure(
        self,
        variant: Variant,
        timeout_seconds: float | None,
        attachment: Attachment | None = None,
    ) -> Measurement:
        return Measurement(RunStatus.OK, 0, None, {"wall": 0.001})

    def check(self, variant: Variant) -> str | None:
        return None

    def close(self) -> None:
        pass


def _run_to_the_end(spec: Spec, store: Store) -> tuple[int, events.ExperimentFinished]:
    """Run ``spec`` with the quick executor: the experiment's id and its end event; it must
    have stopped as interrupted."""
    finished: list[events.ExperimentFinished] = []
    outcome = run_experiment(
        spec,
        store,
        environment={},
        executor=QuickExecutor(),
        listeners=[
            lambda e: finished.append(e) if isinstance(e, events.ExperimentFinished) else None
        ],
    )
    assert outcome.reason == "interrupted"
    (end,) = finished
    return outcome.experiment_id, end


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_a_run_is_stored_keeps_and_counts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_signal: int
) -> None:
    store = Store(tmp_path / "db.sqlite")
    add_run = store.add_run
    stored_runs: list[int] = []

    def add_run_signalled(*arguments: object, **options: object) -> None:
        stored_runs.append(1)
        if len(stored_runs) == 3:  # the third run: the signal lands inside the store's write
            os.kill(os.getpid(), stop_signal)
        add_run(*arguments, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "add_run", add_run_signalled)
    spec = Spec(
        name="windows",
        variants=(Variant("a", ("true",)), Variant("b", ("true",))),
        baseline="a",
        rounds=10,
        warmup_rounds=0,
    )
    experiment_id, end = _run_to_the_end(spec, store)
    assert interrupts.first_signal() == stop_signal
    experiment = store.experiment(experiment_id)
    assert experiment.status == "incomplete"
    assert len(store.completed_slots(experiment_id)) == 3  # the third is kept
    assert end.runs_kept == 3


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_just_before_a_prepare_hook_stops_the_hook(
    tmp_path: Path, stop_signal: int
) -> None:
    """The signal lands after the runner's last look for interrupts and before the prepare hook
    starts (here, in the RunStarted listener): the hook is stopped at once, as one that lands
    while it runs, instead of running to its end (found by a hostile re-run)."""
    store = Store(tmp_path / "db.sqlite")
    spec = Spec(
        name="windows",
        variants=(Variant("a", ("true",), hooks=Hooks(prepare="sleep 5")),),
        baseline="a",
        rounds=3,
        warmup_rounds=0,
    )
    hooks_ran: list[events.HookRan] = []

    def listener(event: events.Event) -> None:
        if isinstance(event, events.RunStarted):
            os.kill(os.getpid(), stop_signal)
        if isinstance(event, events.HookRan):
            hooks_ran.append(event)

    outcome = run_experiment(
        spec, store, environment={}, executor=QuickExecutor(), listeners=[listener]
    )
    assert outcome.reason == "interrupted"
    assert interrupts.first_signal() == stop_signal
    assert [(event.hook, event.exit_code) for event in hooks_ran] == [("prepare", STOPPED)]
    assert store.experiment(outcome.experiment_id).status == "incomplete"


def test_cleanup_hooks_that_run_after_an_interrupt_are_announced(tmp_path: Path) -> None:
    """After an interrupt the cleanup hooks run to their end (they stop servers): said at once,
    else a slow cleanup looks like a Ctrl-C ignored."""
    store = Store(tmp_path / "db.sqlite")
    spec = Spec(
        name="windows",
        variants=(Variant("a", ("true",), hooks=Hooks(cleanup="true")),),
        baseline="a",
        rounds=3,
        warmup_rounds=0,
    )
    notices: list[str] = []

    def listener(event: events.Event) -> None:
        if isinstance(event, events.RunStarted):
            os.kill(os.getpid(), signal.SIGTERM)
        if isinstance(event, events.Notice):
            notices.append(event.message)

    outcome = run_experiment(
        spec, store, environment={}, executor=QuickExecutor(), listeners=[listener]
    )
    assert outcome.reason == "interrupted"
    assert notices == [
        "interrupted: running the cleanup hooks of 'a' first (another interrupt stops them)"
    ]


def test_main_called_by_a_program_leaves_its_signals_as_they_were(tmp_path: Path) -> None:
    """The `cutaway` process holds and then ignores the stop signals around its command
    (cli/main.py); a program (or a test) that calls main(argv) keeps its own: still able to
    be stopped by SIGTERM afterwards."""
    from cutaway.cli.main import main

    stop_signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    mask_before = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    handlers_before = [signal.getsignal(number) for number in stop_signals]
    main(["run", "-c", "true", "--rounds", "1", "--warmup", "0", "--db", str(tmp_path / "x.db")])
    assert signal.pthread_sigmask(signal.SIG_BLOCK, ()) == mask_before
    assert [signal.getsignal(number) for number in stop_signals] == handlers_before


@pytest.mark.parametrize("interrupted_run", [1, 3])
@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_metric_command_runs_interrupts_the_experiment(
    tmp_path: Path, stop_signal: int, interrupted_run: int
) -> None:
    """The signal lands while a declared metric's command runs after a run (the command is
    stopped with its process group): the experiment ends as interrupted, not as a failed run,
    whether or not the variant had a successful run before."""
    counter = tmp_path / "count"
    command = (
        f"n=$(($(cat {counter} 2>/dev/null || echo 0) + 1)); echo $n > {counter}; "
        f"if [ $n -eq {interrupted_run} ]; then kill -{signal.Signals(stop_signal).name[3:]} "
        f"$PPID; sleep 5; fi; echo 1"
    )
    store = Store(tmp_path / "db.sqlite")
    spec = Spec(
        name="windows",
        variants=(Variant("a", ("true",)),),
        baseline="a",
        rounds=5,
        warmup_rounds=0,
        metrics=(MetricSpec(name="answer", source="command", command=command),),
    )
    experiment_id, end = _run_to_the_end(spec, store)
    assert interrupts.first_signal() == stop_signal
    assert store.experiment(experiment_id).status == "incomplete"
    runs = store.runs(experiment_id)
    assert [run.status for run in runs] == [RunStatus.OK] * (interrupted_run - 1) + [
        RunStatus.INTERRUPTED
    ]
    assert "stopped by an interrupt" in runs[-1].message
    assert end.runs_kept == interrupted_run - 1  # the interrupted one is kept, never counted


class SlowStartProbe:
    """A probe whose check or overhead measurement takes seconds (perf, strace and valgrind
    trial runs do) and is interrupted by SIGTERM as it starts."""

    name = "slow-start"
    own_runs = False

    def __init__(self, slow_step: str) -> None:
        self.slow_step = slow_step
        self.finished: list[str] = []  # the slow steps that ran to their end
        self.closed = False

    def _step(self, step: str) -> None:
        if step == self.slow_step:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        self.finished.append(step)

    def check(self) -> str:
        self._step("check")
        return "slow to start"

    def overhead(self) -> Overhead:
        self._step("overhead")
        return Overhead(None, None)

    def check_program(self, program: str) -> str | None:
        return None

    def before_run(self, environment: Mapping[str, str]) -> Attachment:
        return Attachment({}, ())

    def after_run(self) -> list[RunData]:
        return []

    def run_metrics(self) -> Mapping[str, float]:
        return {}

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("slow_step", ["check", "overhead"])
def test_a_signal_while_a_probe_starts_stops_it_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow_step: str
) -> None:
    """The probes' checks and overhead measurements (seconds of trial runs) held interrupts to
    their end: 24 s after Ctrl-C with --profile on a busy machine (found by a hostile re-run).
    Interrupted in its check, nothing is stored; in its overhead, the experiment is made
    already and ends as interrupted, with no run; the probe is closed either way."""
    probe = SlowStartProbe(slow_step)
    monkeypatch.setattr(runner_module, "build_probes", lambda spec: [probe])
    store = Store(tmp_path / "db.sqlite")
    spec = Spec(name="windows", variants=(Variant("a", ("true",)),), baseline="a", rounds=2)
    if slow_step == "check":
        with pytest.raises(interrupts.Stopped):
            run_experiment(spec, store, environment={}, executor=QuickExecutor())
        assert store.list_experiments() == []
    else:
        outcome = run_experiment(spec, store, environment={}, executor=QuickExecutor())
        assert outcome.reason == "interrupted"
        assert store.experiment(outcome.experiment_id).status == "incomplete"
        assert store.runs(outcome.experiment_id) == []
    assert interrupts.first_signal() == signal.SIGTERM
    assert slow_step not in probe.finished
    assert probe.closed
