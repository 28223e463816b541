"""The runner's scheduling, driven by a fake executor (no processes): which runs happen in
which order, what is stored, what resuming skips, when adaptive mode and budgets stop."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from cutaway import events
from cutaway.model import RunStatus, Spec, Variant
from cutaway.probes.base import Attachment
from cutaway.runner.executor import Measurement
from cutaway.runner.order import round_order, williams_rows
from cutaway.runner.runner import run_experiment
from cutaway.store import Store


class FakeExecutor:
    """Turns `sleep X` into exactly X seconds of wall time, like hyperfine's mock executor;
    `fail` fails; a KeyboardInterrupt is raised at the run number given."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.calls: list[str] = []
        self.interrupt_at = interrupt_at
        self.closed = False

    def measure(
        self,
        variant: Variant,
        timeout_seconds: float | None,
        attachment: Attachment | None = None,
    ) -> Measurement:
        if variant.name == "(calibration)":
            return Measurement(RunStatus.OK, 0, None, {"wall": 0.0005})
        self.calls.append(variant.name)
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt
        argv = list(variant.command)
        if argv[0] == "fail":
            return Measurement(RunStatus.FAILED, 1, None, {"wall": 0.001}, "exit status 1")
        seconds = float(argv[1])
        metrics = {"wall": seconds, "user": seconds / 2, "sys": 0.0, "cpu": seconds / 2}
        return Measurement(RunStatus.OK, 0, None, metrics)

    def close(self) -> None:
        self.closed = True


def make_spec(**changes: object) -> Spec:
    variants = (
        Variant("a", ("sleep", "0.100")),
        Variant("b", ("sleep", "0.102")),
        Variant("c", ("sleep", "0.100")),
    )
    fields: dict[str, object] = {
        "name": "fake",
        "variants": variants,
        "baseline": "a",
        "rounds": 6,
        "warmup_rounds": 1,
    }
    fields.update(changes)
    return Spec(**fields)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "db.sqlite")


def test_williams_rows_balance_position_and_carry_over() -> None:
    for k in range(2, 8):
        rows = williams_rows(k)
        positions = Counter((i, v) for row in rows for i, v in enumerate(row))
        followers = Counter((a, b) for row in rows for a, b in itertools.pairwise(row))
        assert len(set(positions.values())) == 1, k
        assert len(set(followers.values())) == 1 and len(followers) == k * (k - 1), k


def test_round_orders_change_and_are_reproducible() -> None:
    orders = [tuple(round_order(3, r, seed=7)) for r in range(12)]
    assert len(set(orders)) > 1
    assert orders == [tuple(round_order(3, r, seed=7)) for r in range(12)]
    assert all(sorted(order) == [0, 1, 2] for order in orders)


def test_every_variant_runs_once_per_round_and_warmup_is_not_counted(store: Store) -> None:
    executor = FakeExecutor()
    outcome = run_experiment(make_spec(), store, environment={}, executor=executor)
    assert outcome.status == "complete" and outcome.reason == "done"
    assert executor.closed
    runs = store.runs(outcome.experiment_id)
    assert len(runs) == 3 * 7
    per_round = Counter(run.round_index for run in runs)
    assert set(per_round) == set(range(-1, 6)) and set(per_round.values()) == {3}
    counted = store.runs(outcome.experiment_id, include_warmup=False)
    assert len(counted) == 18
    assert store.experiment(outcome.experiment_id).calibration is not None


def test_runs_follow_the_round_orders(store: Store) -> None:
    executor = FakeExecutor()
    run_experiment(make_spec(seed=3), store, environment={}, executor=executor)
    expected = ["abc"[index] for r in range(-1, 6) for index in round_order(3, r, seed=3)]
    assert executor.calls == expected


def test_failed_runs_are_stored_and_not_counted_as_fast(store: Store) -> None:
    spec = make_spec(variants=(Variant("a", ("sleep", "0.1")), Variant("bad", ("fail",))))
    outcome = run_experiment(spec, store, environment={}, executor=FakeExecutor())
    table = store.metric_table(outcome.experiment_id, "wall")
    bad = table.values[:, table.variants.index("bad")]
    assert bad.size == 6 and all(value != value for value in bad)  # all NaN
    statuses = {run.status for run in store.runs(outcome.experiment_id) if run.variant == "bad"}
    assert statuses == {RunStatus.FAILED}


def test_interrupt_marks_incomplete_and_resume_completes_without_repeats(store: Store) -> None:
    seen: list[events.Event] = []
    outcome = run_experiment(
        make_spec(), store, environment={}, executor=FakeExecutor(10), listeners=[seen.append]
    )
    assert (outcome.status, outcome.reason) == ("incomplete", "interrupted")
    assert store.experiment(outcome.experiment_id).status == "incomplete"
    saved = len(store.runs(outcome.experiment_id))
    assert saved == 9
    assert isinstance(seen[-1], events.ExperimentFinished)

    executor = FakeExecutor()
    again = run_experiment(
        make_spec(), store, environment={}, executor=executor, resume_id=outcome.experiment_id
    )
    assert again.status == "complete"
    assert len(executor.calls) == 21 - saved
    slots = [(run.round_index, run.variant) for run in store.runs(outcome.experiment_id)]
    assert len(slots) == len(set(slots)) == 21


def test_adaptive_mode_adds_rounds_until_the_interval_is_narrow(store: Store) -> None:
    spec = make_spec(rounds=5, until_width=0.01)
    executor = FakeExecutor()
    outcome = run_experiment(spec, store, environment={}, executor=executor)
    # The fake is noiseless, so the first check after the planned rounds already settles it.
    assert outcome.status == "complete"
    assert len(store.runs(outcome.experiment_id, include_warmup=False)) == 15


def test_time_budget_stops_between_rounds(store: Store) -> None:
    spec = make_spec(rounds=1000, max_time_seconds=0.0)
    outcome = run_experiment(spec, store, environment={}, executor=FakeExecutor())
    assert (outcome.status, outcome.reason) == ("complete", "budget")
    assert store.runs(outcome.experiment_id) == []
