"""--all-pairs: every pair of variants compared round by round, on synthetic stored runs at
known ratios."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cutaway.compare import analyze, compare_experiments, pairwise_comparisons
from cutaway.model import PROCESS_METRICS, Comparison, Run, RunStatus, Spec, Variant, Verdict
from cutaway.stats import holm_adjust, paired_ratio
from cutaway.store import Store

ROUNDS = 30
FACTORS = {"a": 1.0, "b": 1.2, "c": 0.8}  # wall time relative to a
RESAMPLES = 1000


def store_three(tmp_path: Path, baseline: str = "a", name: str = "db") -> tuple[Store, int]:
    spec = Spec(
        name="three",
        variants=tuple(Variant(v, ("x",)) for v in FACTORS),
        baseline=baseline,
        rounds=ROUNDS,
        warmup_rounds=0,
    )
    store = Store(tmp_path / name)
    experiment_id = store.create_experiment(spec, {}, None, "test")
    rng = np.random.default_rng(7)
    for round_index in range(ROUNDS):
        shared = float(rng.normal(0, 0.05))
        for position, (variant, factor) in enumerate(FACTORS.items()):
            values = {m.name: float(rng.uniform(1.0, 2.0)) for m in PROCESS_METRICS}
            values["wall"] = 0.1 * factor * float(np.exp(shared + rng.normal(0, 0.002)))
            run = Run(variant, round_index, position, RunStatus.OK, 0, None, values, 0.0)
            store.add_run(experiment_id, run)
    store.finish_experiment(experiment_id, "complete", None)
    return store, experiment_id


def wall_pairs(comparisons: tuple[Comparison, ...]) -> dict[tuple[str, str], Comparison]:
    return {(c.baseline, c.variant): c for c in comparisons if c.metric == "wall"}


def test_every_pair_once_in_variant_order_with_known_ratios(tmp_path: Path) -> None:
    store, experiment_id = store_three(tmp_path)
    pairs = wall_pairs(pairwise_comparisons(store, experiment_id, resamples=RESAMPLES))
    assert list(pairs) == [("a", "b"), ("a", "c"), ("b", "c")]
    expected = {("a", "b"): (1.2, Verdict.REGRESSED), ("a", "c"): (0.8, Verdict.IMPROVED)}
    expected[("b", "c")] = (0.8 / 1.2, Verdict.IMPROVED)
    for pair, (ratio, verdict) in expected.items():
        comparison = pairs[pair]
        assert comparison.ratio == pytest.approx(ratio, rel=0.01)
        assert comparison.ci_low < ratio < comparison.ci_high
        assert comparison.verdict is verdict
        assert comparison.n_pairs == ROUNDS


def test_the_baseline_is_the_reference_of_its_pairs(tmp_path: Path) -> None:
    store, experiment_id = store_three(tmp_path, baseline="b")
    analysis = analyze(store, experiment_id, resamples=RESAMPLES, all_pairs=True)
    pairs = wall_pairs(analysis.pairwise)
    assert list(pairs) == [("b", "a"), ("a", "c"), ("b", "c")]
    assert pairs[("b", "a")].ratio == pytest.approx(1 / 1.2, rel=0.01)
    assert pairs[("b", "a")].verdict is Verdict.IMPROVED
    # the baseline's pairs are exactly the baseline comparisons
    for key, comparison in wall_pairs(analysis.comparisons).items():
        assert pairs[key] == comparison


def test_secondary_metrics_of_a_pair_are_one_holm_family(tmp_path: Path) -> None:
    store, experiment_id = store_three(tmp_path)
    comparisons = pairwise_comparisons(store, experiment_id, resamples=RESAMPLES)
    b_vs_c = [c for c in comparisons if (c.baseline, c.variant) == ("b", "c")]
    by_metric = {c.metric: c for c in b_vs_c}
    raw = {}
    for metric in by_metric:
        values = store.metric_table(experiment_id, metric).values
        estimate = paired_ratio(values[:, 1], values[:, 2], resamples=RESAMPLES)
        assert estimate is not None
        raw[metric] = estimate.p_value
    assert by_metric["wall"].p_value == pytest.approx(raw["wall"])  # full alpha
    secondary = [m for m in by_metric if m != "wall"]
    adjusted = holm_adjust([raw[m] for m in secondary])
    assert [by_metric[m].p_value for m in secondary] == pytest.approx(list(adjusted))


def test_pairs_only_on_request(tmp_path: Path) -> None:
    store, experiment_id = store_three(tmp_path)
    assert analyze(store, experiment_id, resamples=200).pairwise == ()


def test_compare_with_all_pairs_tags_each_experiments_pairs(tmp_path: Path) -> None:
    store, first = store_three(tmp_path)
    _, second = store_three(tmp_path)  # the same store file: a second experiment
    analysis = compare_experiments(store, first, second, resamples=200, all_pairs=True)
    pairs = wall_pairs(analysis.pairwise)
    assert ("a (#1)", "b (#1)") in pairs and ("b (#2)", "c (#2)") in pairs
    assert len(pairs) == 6
    assert compare_experiments(store, first, second, resamples=200).pairwise == ()
