"""Analysis of stored runs: which p-values are adjusted, what gets compared, run counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cutaway.compare import _probe_line, analyze
from cutaway.model import PROCESS_METRICS, Run, RunStatus, Spec, Variant, Verdict
from cutaway.stats import holm_adjust, paired_ratio
from cutaway.store import ProbeInfo, Store, StoreError

ROUNDS = 30


def metrics(wall: float, rng: np.random.Generator) -> dict[str, float]:
    values = {m.name: float(rng.uniform(1.0, 2.0)) for m in PROCESS_METRICS}
    values.update(wall=wall, major_faults=0.0, block_in=0.0, block_out=0.0)
    return values


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Store, int]:
    spec = Spec(
        name="t",
        variants=(Variant("a", ("x",)), Variant("b", ("y",))),
        baseline="a",
        rounds=ROUNDS,
        warmup_rounds=0,
    )
    store = Store(tmp_path / "db")
    experiment_id = store.create_experiment(spec, {}, None, "test")
    rng = np.random.default_rng(1)
    for round_index in range(ROUNDS):
        shared = float(rng.normal(0, 0.05))  # what a round shares: pairing cancels it
        for position, (name, factor) in enumerate((("a", 1.0), ("b", 1.006))):
            wall = 0.1 * factor * float(np.exp(shared + rng.normal(0, 0.004)))
            status = RunStatus.OK
            store.add_run(
                experiment_id,
                Run(name, round_index, position, status, 0, None, metrics(wall, rng), 0.0),
            )
    store.add_run(experiment_id, Run("b", -1, 0, RunStatus.FAILED, 1, None, {"wall": 0.1}, 0.0))
    store.finish_experiment(experiment_id, "complete", None)
    return store, experiment_id


def test_wall_is_tested_at_full_alpha_and_the_rest_holm_adjusted(
    stored: tuple[Store, int],
) -> None:
    store, experiment_id = stored
    analysis = analyze(store, experiment_id, resamples=2000)
    by_metric = {c.metric: c for c in analysis.comparisons}
    # all-zero metrics have nothing to compare
    assert {"major_faults", "block_in", "block_out"}.isdisjoint(by_metric)

    table = store.metric_table(experiment_id, "wall")
    raw_wall = paired_ratio(table.values[:, 0], table.values[:, 1], resamples=2000)
    assert raw_wall is not None
    assert by_metric["wall"].p_value == pytest.approx(raw_wall.p_value)
    assert by_metric["wall"].verdict is Verdict.REGRESSED  # +0.6 % beyond the 0.5 % margin

    secondary = [m.name for m in PROCESS_METRICS if m.name in by_metric and m.name != "wall"]
    raw = []
    for name in secondary:
        values = store.metric_table(experiment_id, name).values
        estimate = paired_ratio(values[:, 0], values[:, 1], resamples=2000)
        assert estimate is not None
        raw.append(estimate.p_value)
    expected = holm_adjust(raw)
    assert [by_metric[n].p_value for n in secondary] == pytest.approx(list(expected))


def test_run_counts_leave_out_warmup(stored: tuple[Store, int]) -> None:
    store, experiment_id = stored
    analysis = analyze(store, experiment_id, resamples=500)
    assert analysis.run_counts == {"a": {"ok": ROUNDS}, "b": {"ok": ROUNDS}}
    assert analysis.experiments[0].rounds_completed == ROUNDS


def test_a_probe_line_gives_each_cost_in_a_readable_unit() -> None:
    calls = ProbeInfo("calls", "LD_PRELOAD interposer", 6.9e-8, 1.72e-4)
    assert _probe_line(calls) == (
        "calls: LD_PRELOAD interposer; overhead 69 ns per recorded call and 172 µs per process"
    )
    strace = ProbeInfo("syscalls", "strace", 3.6069e-5, 4.24e-3)
    assert _probe_line(strace).endswith("36.1 µs per recorded call and 4.24 ms per process")
    assert _probe_line(ProbeInfo("x", "y", None)).endswith("; overhead not measured")
    # Each probe's plugin names what it records.
    counted = ProbeInfo("instructions", "valgrind", 2e-9)
    assert _probe_line(counted).endswith("overhead 2 ns per recorded instruction")


def test_a_probe_cost_measured_as_zero_is_not_called_free() -> None:
    """The per-event cost is a median of paired differences clamped at 0; "0 ns per sample"
    would read as free when it means below the noise."""
    line = _probe_line(ProbeInfo("profile", "perf", 0.0, 0.49))
    assert "0 ns" not in line
    assert "too little to measure per recorded sample and 490 ms per process" in line
    assert "69 ns per recorded call" in _probe_line(ProbeInfo("calls", "x", 69e-9, None))


@pytest.mark.parametrize(
    ("damaged_run", "named"),
    [
        # A successful run's value: the wall time's table names it first, with its round.
        ("round_index = 3 AND variant = 'b'", "wall in round 3: -1 is negative"),
        # A failed run's: no table reads it, the runs do.
        (f"round_index = {ROUNDS}", "wall: -1 is negative, and wall cannot be"),
    ],
)
def test_a_damaged_measurement_is_named_by_the_reader_that_meets_it_first(
    stored: tuple[Store, int], damaged_run: str, named: str
) -> None:
    import sqlite3

    store, experiment_id = stored
    failed = Run("b", ROUNDS, 0, RunStatus.FAILED, 1, None, {"wall": 0.1}, 0.0)
    store.add_run(experiment_id, failed)
    with sqlite3.connect(store.path) as raw:
        (run_id,) = raw.execute(f"SELECT id FROM runs WHERE {damaged_run}").fetchone()
        raw.executescript(
            "PRAGMA ignore_check_constraints = ON;"
            f" UPDATE measurements SET value = -1 WHERE metric = 'wall' AND run_id = {run_id}"
        )
    raw.close()
    with pytest.raises(StoreError) as raised:
        analyze(store, experiment_id, resamples=500)
    assert f"measurements.value: run #{run_id}, {named}" in str(raised.value)
