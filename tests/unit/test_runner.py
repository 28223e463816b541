"""The runner's scheduling, driven by a fake executor (no processes): which runs happen in
which order, what is stored, what resuming skips, when adaptive mode and budgets stop."""

from __future__ import annotations

import dataclasses
import itertools
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from cutaway import events
from cutaway.model import Hooks, MetricSpec, RunStatus, Spec, Variant
from cutaway.probes.base import Attachment
from cutaway.runner.adaptive import widest_interval
from cutaway.runner.errors import UnrunnableCommand
from cutaway.runner.executor import Measurement
from cutaway.runner.order import round_order, williams_row_count, williams_rows
from cutaway.runner.runner import RunnerError, run_experiment
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
        if argv[0] == "crash":
            return Measurement(RunStatus.FAILED, None, 11, {"wall": 0.001}, "signal 11")
        if argv[0] == "flaky" and self.calls.count(variant.name) % int(argv[1]) == 0:
            # Every Nth run of the variant fails, never its first.
            return Measurement(RunStatus.FAILED, 3, None, {"wall": 0.0001}, "exit status 3: oops")
        seconds = float(argv[1])
        metrics = {"wall": seconds, "user": seconds / 2, "sys": 0.0, "cpu": seconds / 2}
        return Measurement(RunStatus.OK, 0, None, metrics)

    def close(self) -> None:
        self.closed = True

    def check(self, variant: Variant) -> str | None:
        return "no program 'missing' in PATH" if variant.command[0] == "missing" else None


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


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_over_a_cycle_of_blocks_every_variant_takes_every_place_once(k: int) -> None:
    # Something that recurs with the block's period (for 2 variants every 4 runs) falls on each
    # variant equally: blocks relabelled independently would hand it to whichever variant each
    # block's draw put there, an offset fixed by the seed.
    block_rounds = williams_row_count(k)
    for seed in range(5):
        for cycle in (-1, 0, 3):
            places: Counter[tuple[int, int, int]] = Counter()
            for block in range(cycle * k, (cycle + 1) * k):
                for row in range(block_rounds):
                    order = round_order(k, block * block_rounds + row, seed)
                    places.update((row, position, v) for position, v in enumerate(order))
            assert len(places) == block_rounds * k * k and set(places.values()) == {1}


def test_two_variants_alternate_which_opens_the_block() -> None:
    for seed in range(20):
        openers = [round_order(2, 2 * block, seed)[0] for block in range(40)]
        assert all(a != b for a, b in zip(openers[::2], openers[1::2], strict=True))


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


def test_intermittent_failures_are_stored_counted_and_not_timed(store: Store) -> None:
    spec = make_spec(
        variants=(Variant("a", ("sleep", "0.1")), Variant("flaky", ("flaky", "3"))), rounds=8
    )
    outcome = run_experiment(spec, store, environment={}, executor=FakeExecutor())
    assert outcome.status == "complete"
    # Runs 3, 6 and 9 of "flaky" fail; the first of the nine is the warmup, so 3 counted.
    assert outcome.failed_runs == 3
    table = store.metric_table(outcome.experiment_id, "wall")
    flaky = table.values[:, table.variants.index("flaky")]
    assert int(np.isnan(flaky).sum()) == 3  # never counted as (fast) times
    failed = [r for r in store.runs(outcome.experiment_id) if r.status is RunStatus.FAILED]
    assert len(failed) == 3 and all("oops" in r.message for r in failed)


def test_a_variant_whose_first_run_fails_stops_the_experiment(store: Store) -> None:
    spec = make_spec(
        variants=(
            Variant("a", ("sleep", "0.1"), hooks=Hooks(setup="true", cleanup="true")),
            Variant("bad", ("fail",)),
        )
    )
    seen: list[events.Event] = []
    with pytest.raises(RunnerError) as raised:
        run_experiment(
            spec, store, environment={}, executor=FakeExecutor(), listeners=[seen.append]
        )
    message = str(raised.value)
    assert "'bad' failed on its warmup run: `fail`" in message
    assert "exit status 1" in message and "--ignore-failure" in message
    assert [e.hook for e in seen if isinstance(e, events.HookRan)] == ["setup", "cleanup"]
    (stored,) = store.list_experiments()
    assert stored.status == "incomplete"


def test_a_run_failed_by_its_metric_is_not_sent_to_ignore_failure(store: Store) -> None:
    """A run whose command exited 0 but whose declared metric printed no number failed: the
    hint that a command exiting non-zero by design wants --ignore-failure was given for it
    too (found by a hostile re-run), and --ignore-failure does not make such a run count."""
    spec = make_spec(
        variants=(Variant("a", ("sleep", "0.1")),),
        metrics=(MetricSpec(name="m", source="command", command="echo not-a-number"),),
    )
    with pytest.raises(RunnerError) as raised:
        run_experiment(spec, store, environment={}, executor=FakeExecutor())
    message = str(raised.value)
    assert "'a' failed on its warmup run" in message and "not a number" in message
    assert "--ignore-failure" not in message


def test_a_huge_failing_command_and_name_are_quoted_cut_short(store: Store) -> None:
    """A 1 MB command made a 1 MB error message: quoted as every message quotes
    text, 200 characters and a count of the rest."""
    huge = "f" * 1_000_000
    spec = make_spec(variants=(Variant("a", ("sleep", "0.1")), Variant(huge, ("fail", huge))))
    with pytest.raises(RunnerError) as raised:
        run_experiment(spec, store, environment={}, executor=FakeExecutor())
    message = str(raised.value)
    assert len(message) < 2_000
    assert f"variant '{'f' * 200}... (999,800 more characters)' failed" in message
    assert f"`fail {'f' * 195}... (999,805 more characters)`" in message


def test_ignore_failure_times_non_zero_exits_but_never_crashes(store: Store) -> None:
    spec = make_spec(
        variants=(Variant("a", ("sleep", "0.1")), Variant("grep", ("fail",))), ignore_failure=True
    )
    outcome = run_experiment(spec, store, environment={}, executor=FakeExecutor())
    assert (outcome.status, outcome.failed_runs) == ("complete", 0)
    table = store.metric_table(outcome.experiment_id, "wall")
    assert np.isfinite(table.values).all()
    crashing = make_spec(
        variants=(Variant("a", ("sleep", "0.1")), Variant("c", ("crash",))), ignore_failure=True
    )
    with pytest.raises(RunnerError, match="killed by SIGSEGV"):
        run_experiment(crashing, store, environment={}, executor=FakeExecutor())


def test_a_program_that_cannot_start_stops_before_any_run(store: Store) -> None:
    executor = FakeExecutor()
    spec = make_spec(variants=(Variant("a", ("sleep", "0.1")), Variant("m", ("missing", "-x"))))
    with pytest.raises(UnrunnableCommand, match=r"'m' cannot run: no program 'missing' in PATH"):
        run_experiment(spec, store, environment={}, executor=executor)
    assert executor.calls == []
    assert store.list_experiments() == []  # refused before anything is stored


def test_a_program_a_setup_hook_may_install_is_looked_for_after_it(store: Store) -> None:
    """A missing program with a setup hook is a failed experiment (exit 1), not bad input:
    the hook may have been meant to install it."""
    executor = FakeExecutor()
    built = Variant("m", ("missing", "-x"), hooks=Hooks(setup="true"))
    spec = make_spec(variants=(Variant("a", ("sleep", "0.1")), built))
    with pytest.raises(RunnerError, match=r"'m' cannot run") as raised:
        run_experiment(spec, store, environment={}, executor=executor)
    assert not isinstance(raised.value, UnrunnableCommand)
    assert [e.status for e in store.list_experiments()] == ["incomplete"]


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
    # The fake is noiseless, so the first check at the end of a block of orders (6 rounds for 3
    # variants) already settles it.
    assert outcome.status == "complete"
    assert len(store.runs(outcome.experiment_id, include_warmup=False)) == 18


@pytest.mark.parametrize(
    ("variant_count", "planned", "stopped_at"), [(2, 5, 6), (2, 7, 8), (3, 5, 6)]
)
def test_adaptive_mode_stops_where_every_variant_ran_first_equally_often(
    store: Store, variant_count: int, planned: int, stopped_at: int
) -> None:
    variants = tuple(Variant(name, ("sleep", "0.1")) for name in "abc"[:variant_count])
    spec = make_spec(variants=variants, rounds=planned, until_width=0.01)
    outcome = run_experiment(spec, store, environment={}, executor=FakeExecutor())
    counted = store.runs(outcome.experiment_id, include_warmup=False)
    assert {run.round_index for run in counted} == set(range(stopped_at))
    first = Counter(run.variant for run in counted if run.order_in_round == 0)
    assert set(first) == set("abc"[:variant_count]) and len(set(first.values())) == 1


class ImportWatchingExecutor(FakeExecutor):
    """Notes, at each run of a variant, whether the analysis (cutaway.stats) is imported yet."""

    def __init__(self) -> None:
        super().__init__()
        self.analysis_loaded: list[bool] = []

    def measure(
        self,
        variant: Variant,
        timeout_seconds: float | None,
        attachment: Attachment | None = None,
    ) -> Measurement:
        if variant.name != "(calibration)":  # the harness's own cost, measured before
            self.analysis_loaded.append("cutaway.stats" in sys.modules)
        return super().measure(variant, timeout_seconds, attachment)


def test_an_experiment_that_checks_its_interval_imports_the_analysis_before_its_first_run(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Imported at the first check, it would land between two counted runs, before the same
    # round of every experiment.
    for name in [name for name in sys.modules if name.startswith("cutaway.stats")]:
        monkeypatch.delitem(sys.modules, name)
    executor = ImportWatchingExecutor()
    run_experiment(make_spec(rounds=5, until_width=0.01), store, environment={}, executor=executor)
    assert executor.analysis_loaded and all(executor.analysis_loaded)


class NoisyExecutor(FakeExecutor):
    """`sleep X` takes X seconds give or take a deterministic wobble, different in each run."""

    def measure(
        self,
        variant: Variant,
        timeout_seconds: float | None,
        attachment: Attachment | None = None,
    ) -> Measurement:
        measured = super().measure(variant, timeout_seconds, attachment)
        wobble = 1.0 + 0.02 * np.sin(1.7 * len(self.calls) ** 1.3)
        metrics = {name: value * wobble for name, value in measured.metrics.items()}
        return Measurement(measured.status, measured.exit_code, measured.signal, metrics)


def test_the_width_adaptive_mode_stops_on_is_the_same_whichever_variant_is_the_baseline(
    store: Store,
) -> None:
    # Measured as ci_high - ci_low, the interval of the slower variant against the faster one is
    # wider than that of the faster against the slower, by their ratio: an estimate that fell
    # below 1 would stop sooner than one above.
    variants = (Variant("a", ("sleep", "0.100")), Variant("b", ("sleep", "0.150")))
    spec = make_spec(variants=variants, rounds=12)
    outcome = run_experiment(spec, store, environment={}, executor=NoisyExecutor())
    against_a = widest_interval(store, outcome.experiment_id, spec)
    against_b = widest_interval(
        store, outcome.experiment_id, dataclasses.replace(spec, baseline="b")
    )
    assert against_a is not None and against_b is not None and against_a > 0.005
    assert against_a == pytest.approx(against_b, rel=1e-9)


def test_a_settled_question_adds_rounds_until_it_answers(store: Store) -> None:
    asked: list[int] = []

    def settled(asked_store: Store, experiment_id: int) -> str | None:
        rounds = asked_store.metric_table(experiment_id, "wall").values.shape[0]
        asked.append(rounds)
        return "enough" if rounds >= 9 else None

    notices: list[str] = []
    outcome = run_experiment(
        make_spec(rounds=5),
        store,
        environment={},
        executor=FakeExecutor(),
        settled=settled,
        listeners=[lambda e: notices.append(e.message) if isinstance(e, events.Notice) else None],
    )
    assert (outcome.status, outcome.reason) == ("complete", "done")
    assert asked == [5, 6, 7, 8, 9]  # asked after the planned rounds, then after each one
    assert len(store.runs(outcome.experiment_id, include_warmup=False)) == 27
    assert "enough" in notices


def test_time_budget_stops_between_rounds(store: Store) -> None:
    spec = make_spec(rounds=1000, max_time_seconds=0.0)
    outcome = run_experiment(spec, store, environment={}, executor=FakeExecutor())
    # Nothing was compared, so the experiment is not called complete.
    assert (outcome.status, outcome.reason) == ("incomplete", "budget")
    assert store.runs(outcome.experiment_id) == []
