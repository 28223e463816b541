"""The runner hands plain runs to the executor in blocks (ExperimentRunner.run_blocks): the same
runs in the same orders as one at a time, stored and announced as each block ends, the budget
looked at before each round, an interrupted block's finished runs kept, and no block where
something must happen between two runs. Driven by a fake executor (no processes); the real
fork server's blocks are tested in test_forkserver_block.py, a whole session in
tests/integration/test_cli_run.py."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from cutaway import events
from cutaway.model import Hooks, MetricSpec, RunStatus, Spec, Variant
from cutaway.probes.base import Attachment, Measurement
from cutaway.runner.executor import BlockExecutor, BlockInterrupted
from cutaway.runner.runner import RunnerError, run_experiment
from cutaway.store import Store


class OneAtATime:
    """Runs `sleep X` as exactly X seconds (its clock advances by it); `fail` fails and
    `flaky N` fails every Nth run of its variant (never the first)."""

    def __init__(self, sleep: bool = False) -> None:
        self.calls: list[str] = []  # every run made, in order
        self.clock = 0.0
        self.sleep = sleep  # whether a run also takes its time for real (the runner's clock)

    def outcome(self, variant: Variant) -> Measurement:
        self.calls.append(variant.name)
        argv = list(variant.command)
        if argv[0] == "fail":
            return Measurement(RunStatus.FAILED, 1, None, {"wall": 0.001}, "exit status 1: no")
        if argv[0] == "flaky" and self.calls.count(variant.name) % int(argv[1]) == 0:
            return Measurement(RunStatus.FAILED, 3, None, {"wall": 0.001}, "exit status 3: oops")
        seconds = float(argv[1]) if len(argv) > 1 and argv[0] != "flaky" else 0.001
        self.clock += seconds
        if self.sleep:
            time.sleep(seconds)
        return Measurement(RunStatus.OK, 0, None, {"wall": seconds, "cpu": seconds / 2})

    def measure(
        self,
        variant: Variant,
        timeout_seconds: float | None,
        attachment: Attachment | None = None,
    ) -> Measurement:
        if variant.name == "(calibration)":
            return Measurement(RunStatus.OK, 0, None, {"wall": 0.0005})
        return self.outcome(variant)

    def check(self, variant: Variant) -> str | None:
        return None

    def close(self) -> None:
        pass


class InBlocks(OneAtATime):
    """OneAtATime that also runs blocks, as the fork server does: it stops after ``seconds``
    of its clock, after a run that did not succeed, or (``interrupt_after``) raises
    BlockInterrupted once that many runs of the experiment have been made."""

    def __init__(
        self,
        interrupt_after: int | None = None,
        block_runs: int | None = None,
        sleep: bool = False,
    ) -> None:
        super().__init__(sleep)
        self.blocks: list[list[str]] = []  # each block's runs, as made
        self.interrupt_after = interrupt_after
        self.block_runs = block_runs  # at most this many runs a block (None: no limit)
        self.singles = 0  # runs made one at a time (measure)

    def measure(
        self,
        variant: Variant,
        timeout_seconds: float | None,
        attachment: Attachment | None = None,
    ) -> Measurement:
        if variant.name != "(calibration)":
            self.singles += 1
        return super().measure(variant, timeout_seconds, attachment)

    def can_block(self, variant: Variant) -> bool:
        return variant.stdin is None and variant.stdout in ("null", "inherit")

    def measure_block(
        self,
        variants: Sequence[Variant],
        order: Sequence[int],
        timeout_seconds: float | None,
        seconds: float,
    ) -> list[Measurement]:
        if not seconds > 0:  # as the fork server refuses it
            raise ValueError(f"seconds must be positive, not {seconds}")
        if variants[0].name == "(calibration)":
            return [Measurement(RunStatus.OK, 0, None, {"wall": 0.0005}) for _ in order]
        made: list[Measurement] = []
        self.blocks.append([])
        started = self.clock
        for index in order:
            if self.interrupt_after is not None and len(self.calls) == self.interrupt_after:
                raise BlockInterrupted(made, KeyboardInterrupt())
            measured = self.outcome(variants[index])
            self.blocks[-1].append(variants[index].name)
            made.append(measured)
            if measured.status is not RunStatus.OK or self.clock - started >= seconds:
                break
            if self.block_runs is not None and len(made) == self.block_runs:
                break
        return made


def make_spec(**changes: object) -> Spec:
    fields: dict[str, object] = {
        "name": "blocks",
        "variants": (
            Variant("a", ("sleep", "0.001")),
            Variant("b", ("sleep", "0.002")),
            Variant("c", ("sleep", "0.001")),
        ),
        "baseline": "a",
        "rounds": 12,
        "warmup_rounds": 1,
    }
    fields.update(changes)
    return Spec(**fields)  # type: ignore[arg-type]


def slots(store: Store, experiment_id: int) -> list[tuple[int, int, str, RunStatus]]:
    return [
        (run.round_index, run.order_in_round, run.variant, run.status)
        for run in store.runs(experiment_id)
    ]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "db.sqlite")


@pytest.fixture
def other_store(tmp_path: Path) -> Store:
    return Store(tmp_path / "other.sqlite")


def run(spec: Spec, store: Store, executor: OneAtATime, **options: object) -> tuple[int, list]:
    seen: list[events.Event] = []
    outcome = run_experiment(
        spec,
        store,
        environment={},
        executor=executor,  # type: ignore[arg-type]
        listeners=[seen.append],
        **options,  # type: ignore[arg-type]
    )
    return outcome.experiment_id, seen


def test_the_fake_is_a_block_executor_and_the_plain_one_is_not() -> None:
    assert isinstance(InBlocks(), BlockExecutor)
    assert not isinstance(OneAtATime(), BlockExecutor)


def test_blocks_make_the_same_runs_in_the_same_orders_as_one_at_a_time(
    store: Store, other_store: Store
) -> None:
    spec = make_spec(seed=5)
    blocked = InBlocks(block_runs=7)  # blocks that end inside rounds
    blocked_id, blocked_events = run(spec, store, blocked)
    single = OneAtATime()
    single_id, single_events = run(spec, other_store, single)

    assert len(blocked.blocks) > 1 and all(len(block) <= 7 for block in blocked.blocks)
    assert blocked.calls == single.calls
    assert slots(store, blocked_id) == slots(other_store, single_id)
    assert store.experiment(blocked_id).status == "complete"

    def announced(seen: list[events.Event]) -> list[object]:
        return [
            (type(event).__name__, getattr(event, "round_index", None))
            for event in seen
            if isinstance(event, events.RunStarted | events.RoundFinished)
        ]

    assert announced(blocked_events) == announced(single_events)
    finished = [event for event in blocked_events if isinstance(event, events.RunFinished)]
    assert [event.runs_done for event in finished] == list(range(1, 3 * 13 + 1))


def test_adaptive_rounds_are_made_in_blocks_too(store: Store) -> None:
    # A run made alone measures a little slower than one in a block: an experiment makes all
    # its runs the same way. The noiseless fake settles at the end of the first block of
    # orders (6 rounds for 3 variants): one adaptive round after the 5 planned.
    executor = InBlocks()
    experiment_id, _ = run(make_spec(rounds=5, until_width=0.01), store, executor)
    assert executor.singles == 0
    assert executor.blocks[-1] == [run.variant for run in store.runs(experiment_id)][-3:]
    assert len(store.runs(experiment_id, include_warmup=False)) == 18


def test_a_block_ends_at_its_time_and_the_next_one_goes_on(store: Store) -> None:
    executor = InBlocks()
    experiment_id, _ = run(make_spec(rounds=200), store, executor)
    # About 0.1 s of the fake's clock a block (its runs take 1-2 ms): many blocks, none empty.
    assert len(executor.blocks) > 5 and all(executor.blocks)
    assert all(len(block) < 120 for block in executor.blocks)
    assert len(store.runs(experiment_id)) == 3 * 201


def test_the_budget_is_looked_at_before_each_round(store: Store) -> None:
    executor = InBlocks(sleep=True)  # 3 s of runs for a budget of 0.3 s
    experiment_id, seen = run(make_spec(rounds=1000, max_time_seconds=0.3), store, executor)
    runs = store.runs(experiment_id)
    assert 0 < len(runs) < 3 * 1001
    assert len(runs) % 3 == 0  # whole rounds: the budget is looked at before each one
    assert any(
        isinstance(event, events.Notice) and "time budget" in event.message for event in seen
    )


def test_a_budget_spent_inside_a_round_finishes_the_round(store: Store) -> None:
    # Blocks that end inside rounds (7 runs of 3 variants), each taking 7 ms for real: the
    # budget runs out inside a round, which is finished (a run a block), and none after it.
    executor = InBlocks(block_runs=7, sleep=True)
    spec = make_spec(rounds=1000, max_time_seconds=0.05, warmup_rounds=0)
    experiment_id, _ = run(spec, store, executor)
    runs = store.runs(experiment_id)
    assert 0 < len(runs) < 3 * 1000 and len(runs) % 3 == 0
    assert any(len(block) < 7 for block in executor.blocks)


def test_a_spent_budget_runs_nothing(store: Store) -> None:
    executor = InBlocks()
    experiment_id, _ = run(make_spec(rounds=1000, max_time_seconds=0.0), store, executor)
    assert executor.calls == [] and store.runs(experiment_id) == []


def test_a_failed_run_ends_its_block_and_is_stored_with_its_message(store: Store) -> None:
    variants = (Variant("a", ("sleep", "0.001")), Variant("b", ("flaky", "4")))
    executor = InBlocks()
    outcome = run_experiment(
        make_spec(variants=variants, rounds=10),
        store,
        environment={},
        executor=executor,  # type: ignore[arg-type]
    )
    failed = [run for run in store.runs(outcome.experiment_id) if not run.ok]
    assert len(failed) == 2 and all(run.message == "exit status 3: oops" for run in failed)
    assert outcome.failed_runs == 2 and len(store.runs(outcome.experiment_id)) == 22
    # Each failure was its block's last run.
    assert all(block[-1] == "b" for block in executor.blocks[:-1])


def test_a_first_run_that_fails_stops_the_experiment_as_one_at_a_time(store: Store) -> None:
    variants = (Variant("a", ("sleep", "0.001")), Variant("b", ("fail",)))
    with pytest.raises(RunnerError, match="'b'"):
        run(make_spec(variants=variants), store, InBlocks())


def test_an_interrupted_block_keeps_its_finished_runs_and_resume_completes(
    store: Store,
) -> None:
    spec = make_spec()
    outcome = run_experiment(
        spec,
        store,
        environment={},
        executor=InBlocks(interrupt_after=17),  # type: ignore[arg-type]
    )
    assert (outcome.status, outcome.reason) == ("incomplete", "interrupted")
    assert len(store.runs(outcome.experiment_id)) == 17

    again = InBlocks()
    resumed = run_experiment(
        spec,
        store,
        environment={},
        executor=again,  # type: ignore[arg-type]
        resume_id=outcome.experiment_id,
    )
    assert resumed.status == "complete"
    assert len(again.calls) == 3 * 13 - 17
    stored = [(run.round_index, run.variant) for run in store.runs(outcome.experiment_id)]
    assert len(stored) == len(set(stored)) == 3 * 13


@pytest.mark.parametrize(
    "change",
    [
        {"variants": (Variant("a", ("sleep", "0.001"), hooks=Hooks(prepare="true")),)},
        {"variants": (Variant("a", ("sleep", "0.001"), hooks=Hooks(conclude="true")),)},
        {"variants": (Variant("a", ("sleep", "0.001"), stdout="pipe"),)},
        {"variants": (Variant("a", ("sleep", "0.001"), stdin="/dev/null"),)},
        {
            "variants": (
                Variant("a", ("sleep", "0.001")),
                Variant("b", ("sleep", "0.001"), stdout="inherit"),
            )
        },
        {"metrics": (MetricSpec(name="m", source="command", command="echo 1"),)},
    ],
    ids=["prepare", "conclude", "pipe", "stdin", "two-stdouts", "metric"],
)
def test_no_block_where_something_happens_between_runs(
    store: Store, change: dict[str, object]
) -> None:
    spec = make_spec(**change)
    if "variants" in change:
        spec = dataclasses.replace(spec, baseline=spec.variants[0].name)
    executor = InBlocks()
    run(spec, store, executor)
    assert executor.blocks == []
    assert executor.calls and executor.singles == len(executor.calls)
