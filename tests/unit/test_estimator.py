"""The trimmed estimator (``estimator = "trimmed"``, ``--estimator trimmed``): Yuen's trimmed
mean of the rounds' log ratios, checked against scipy; what it is for (rounds slowed now and
then by something else) and what it gives up; read, checked, stored, and said in the report."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from cutaway.compare import analyze
from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.report import render_terminal
from cutaway.spec import SpecError, apply_overrides, parse_spec
from cutaway.stats import TRIM, TRIMMED_MEAN, paired_ratio, trim_for
from cutaway.store import Store
from cutaway.store.stored_spec import SpecJsonError, spec_from_json
from tests.cutaway_command import cutaway


def _interfered(seed: int, rounds: int, log_shift: float) -> tuple[np.ndarray, np.ndarray]:
    """A CPU-bound command on a shared machine: every run within 0.3 % of its work, and one
    in ten slowed by 2 to 30 % by something else, in either variant."""
    rng = np.random.default_rng(seed)

    def runs(shift: float) -> np.ndarray:
        slowed = rng.random(rounds) < 0.1
        hit = np.where(slowed, rng.uniform(0.02, 0.3, rounds), 0.0)
        return np.exp(np.log(0.1) + shift + rng.normal(0.0, 0.003, rounds) + hit)

    return runs(0.0), runs(log_shift)


def test_it_is_yuens_trimmed_mean_and_interval() -> None:
    baseline, variant = _interfered(1, 200, 0.002)
    estimate = paired_ratio(baseline, variant, trim=TRIM)
    assert estimate is not None and estimate.method == TRIMMED_MEAN
    logs = np.log(variant / baseline)
    assert estimate.log_estimate == pytest.approx(scipy_stats.trim_mean(logs, TRIM), rel=1e-12)
    # Yuen's standard error: the winsorized sd over (1 - 2 trim) sqrt(n), t with h - 1 df.
    winsorized = np.asarray(scipy_stats.mstats.winsorize(logs, limits=(TRIM, TRIM)))
    error = np.std(winsorized, ddof=1) / ((1 - 2 * TRIM) * np.sqrt(200))
    half = scipy_stats.t.ppf(0.975, 200 - 2 * 40 - 1) * error
    assert np.log(estimate.ci_low) == pytest.approx(estimate.log_estimate - half, rel=1e-9)
    assert np.log(estimate.ci_high) == pytest.approx(estimate.log_estimate + half, rel=1e-9)
    p = 2 * scipy_stats.t.sf(abs(estimate.log_estimate) / error, 200 - 2 * 40 - 1)
    assert estimate.p_value == pytest.approx(p, rel=1e-6)


def test_under_interference_it_finds_what_the_mean_cannot() -> None:
    found = {"mean": 0, "trimmed": 0}
    widths: dict[str, list[float]] = {"mean": [], "trimmed": []}
    for seed in range(40):
        baseline, variant = _interfered(seed, 300, 0.002)
        for name in found:
            estimate = paired_ratio(baseline, variant, trim=trim_for(name), resamples=2000)
            assert estimate is not None
            found[name] += estimate.ci_low > 1.0
            widths[name].append(estimate.ci_high / estimate.ci_low - 1.0)
    assert found["trimmed"] >= 36 and found["mean"] <= 20
    assert np.median(widths["trimmed"]) < np.median(widths["mean"]) / 3


def test_identical_variants_read_no_change_at_the_nominal_rate() -> None:
    false_alarms, logs = 0, []
    for seed in range(200):
        baseline, variant = _interfered(1000 + seed, 100, 0.0)
        estimate = paired_ratio(baseline, variant, trim=TRIM)
        assert estimate is not None
        false_alarms += estimate.p_value < 0.05
        logs.append(estimate.log_estimate)
    assert false_alarms <= 20  # 5 % of 200 is 10; 20 is far in the binomial tail
    assert abs(np.mean(logs)) < 3 * np.std(logs) / np.sqrt(len(logs))  # centred on no change


def test_a_change_in_a_few_rounds_only_is_what_it_sets_aside() -> None:
    # What the trimmed mean gives up: the variant stalls one run in ten by 50 %.
    rng = np.random.default_rng(7)
    baseline = 0.1 * np.exp(rng.normal(0.0, 0.003, 200))
    variant = 0.1 * np.exp(rng.normal(0.0, 0.003, 200)) * np.where(np.arange(200) % 10, 1, 1.5)
    mean = paired_ratio(baseline, variant)
    trimmed = paired_ratio(baseline, variant, trim=TRIM)
    assert mean is not None and trimmed is not None
    assert mean.ci_low > 1.02 and trimmed.ci_high < 1.003  # the mean sees +4 %: log(1.5) / 10


def test_kept_rounds_that_agree_give_a_point() -> None:
    baseline = np.full(10, 2.0)
    changed = paired_ratio(baseline, baseline * 1.5, trim=TRIM)
    same = paired_ratio(baseline, baseline.copy(), trim=TRIM)
    assert changed is not None and changed.ci_low == changed.ci_high == pytest.approx(1.5)
    assert changed.p_value == 0.0
    assert same is not None and same.ratio == 1.0 and same.p_value == 1.0


def test_zeros_and_few_pairs_fall_back_to_the_mean_methods() -> None:
    counts = paired_ratio([0, 1, 2, 0, 3, 1], [1, 1, 2, 0, 4, 2], trim=TRIM)
    assert counts is not None and counts.method == "ratio-of-means"
    few = paired_ratio([1.0, 1.1, 1.2], [1.1, 1.2, 1.3], trim=TRIM)
    assert few is not None and few.method == "geometric-mean"
    with pytest.raises(ValueError, match="trim"):
        paired_ratio([1.0, 2.0], [1.0, 2.0], trim=0.5)


FILE = """
name = "t"
{line}
[[variants]]
name = "a"
command = "true"
[[variants]]
name = "b"
command = "true "
"""


def test_the_file_and_the_command_line_set_it() -> None:
    assert parse_spec(FILE.format(line='estimator = "trimmed"'), "x.toml").estimator == "trimmed"
    default = parse_spec(FILE.format(line=""), "x.toml")
    assert default.estimator == "mean" and "estimator" not in default.to_dict()
    assert apply_overrides(default, {"--estimator": "trimmed"}).estimator == "trimmed"


@pytest.mark.parametrize("value", ['"median"', "0.2", '""', "true"])
def test_another_estimator_is_refused_naming_the_line(value: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(FILE.format(line=f"estimator = {value}"), "x.toml")
    message = str(caught.value)
    assert message.startswith("x.toml:3: estimator: ") and '"mean" or "trimmed"' in message


def test_it_is_stored_and_read_back_and_a_damaged_one_is_named() -> None:
    spec = parse_spec(FILE.format(line='estimator = "trimmed"'), "x.toml")
    assert spec_from_json(spec.to_dict(), None).estimator == "trimmed"
    with pytest.raises(SpecJsonError, match="estimator"):
        spec_from_json({**spec.to_dict(), "estimator": "\x1b[2Jmode"}, None)


def test_the_report_says_it_and_the_comparisons_use_it(tmp_path: Path) -> None:
    baseline, variant = _interfered(3, 60, 0.002)
    spec = Spec("t", (Variant("a", ("x",)), Variant("b", ("y",))), "a", rounds=60)
    reports, methods = {}, {}
    for estimator in ("mean", "trimmed"):
        with Store(tmp_path / f"{estimator}.db") as store:
            stored_spec = dataclasses.replace(spec, estimator=estimator)
            experiment_id = store.create_experiment(stored_spec, {}, None, "test")
            for round_index in range(60):
                for position, (name, values) in enumerate((("a", baseline), ("b", variant))):
                    metrics = {"wall": float(values[round_index]), "cpu": 0.1}
                    run = Run(name, round_index, position, RunStatus.OK, 0, None, metrics, 0.0)
                    store.add_run(experiment_id, run)
            store.finish_experiment(experiment_id, "complete", None)
            analysis = analyze(store, experiment_id, resamples=500)
        reports[estimator] = render_terminal(analysis, color=False, width=100)
        methods[estimator] = {c.metric: c.method for c in analysis.comparisons}
    assert methods["trimmed"]["wall"] == TRIMMED_MEAN
    assert methods["mean"]["wall"] == "geometric-mean"
    assert f"{TRIM:.0%}".replace("%", " %") + " trimmed mean" in reports["trimmed"]
    assert "trimmed mean of the rounds" not in reports["mean"]


def _stored(tmp_path: Path, estimator: str, seed: int, rounds: int = 120) -> str:
    """The heavy-tails caution of a 0.2 % change under interference, with this estimator."""
    with Store(_store_of(tmp_path / f"{estimator}-{seed}.db", estimator, seed, rounds)) as store:
        kinds = {c.kind: c.message for c in analyze(store, 1, resamples=500).cautions}
    return kinds.get("heavy-tails", "")


def _store_of(path: Path, estimator: str, seed: int, rounds: int) -> Path:
    """A store of one experiment, #1, of a 0.2 % change under interference."""
    baseline, variant = _interfered(seed, rounds, 0.002)
    spec = Spec("t", (Variant("a", ("x",)), Variant("b", ("y",))), "a", estimator=estimator)
    with Store(path) as store:
        experiment_id = store.create_experiment(spec, {}, None, "test")
        for round_index in range(rounds):
            for position, (name, values) in enumerate((("a", baseline), ("b", variant))):
                metrics = {"wall": float(values[round_index])}
                run = Run(name, round_index, position, RunStatus.OK, 0, None, metrics, 0.0)
                store.add_run(experiment_id, run)
        store.finish_experiment(experiment_id, "complete", None)
    return path


def test_an_inconclusive_mean_under_heavy_tails_points_to_the_trimmed_estimator(
    tmp_path: Path,
) -> None:
    said = [_stored(tmp_path, "mean", seed) for seed in range(4)]
    # Where the mean was inconclusive, the caution says how much narrower the trimmed is.
    assert any("`cutaway report 1 --estimator trimmed` reads these" in text for text in said)
    assert all(_stored(tmp_path, "trimmed", seed) == "" for seed in range(4))


def test_report_and_export_read_stored_rounds_with_another_estimator(tmp_path: Path) -> None:
    db = str(_store_of(tmp_path / "c.db", "mean", 5, 120))
    environment = {**os.environ, "CUTAWAY_CACHE_DIR": str(tmp_path / "cache")}

    def methods(*options: str) -> set[str]:
        result = cutaway("report", "1", "--db", db, "--format", "json", *options, env=environment)
        assert result.returncode == 0, result.stderr
        return {c["method"] for c in json.loads(result.stdout)["comparisons"]}

    assert methods() == {"geometric-mean"}
    assert methods("--estimator", "trimmed") == {TRIMMED_MEAN}  # not the kept mean's analysis
    assert methods() == {"geometric-mean"}
    exported = cutaway("export", "1", "--db", db, "--estimator", "trimmed", env=environment)
    assert {c["method"] for c in json.loads(exported.stdout)["comparisons"]} == {TRIMMED_MEAN}
    refused = cutaway("export", "1", "--db", db, "--format", "runs-csv", "--estimator", "trimmed")
    assert refused.returncode == 2 and "--estimator is for the report formats" in refused.stderr
    assert "trimmed" in cutaway("report", "--help").stdout


def test_a_point_trimmed_interval_says_nothing_and_breaks_nothing(tmp_path: Path) -> None:
    # A metric of few discrete values (a percentile in whole buckets): most rounds' ratios are
    # exactly 1, a few far off. The trimmed interval is a point; the mean's is wide.
    spec = Spec("t", (Variant("a", ("x",)), Variant("b", ("y",))), "a")
    with Store(tmp_path / "c.db") as store:
        experiment_id = store.create_experiment(spec, {}, None, "test")
        for round_index in range(40):
            slow = {0: 1.5, 1: 0.6, 2: 1.4}.get(round_index % 10, 1.0)
            for position, (name, wall) in enumerate((("a", 2.0), ("b", 2.0 * slow))):
                run = Run(name, round_index, position, RunStatus.OK, 0, None, {"wall": wall}, 0.0)
                store.add_run(experiment_id, run)
        store.finish_experiment(experiment_id, "complete", None)
        analysis = analyze(store, experiment_id, resamples=500)  # ZeroDivisionError before
    (wall,) = [c for c in analysis.comparisons if c.metric == "wall"]
    assert wall.verdict.value == "inconclusive"
    assert "heavy-tails" not in {c.kind for c in analysis.cautions}
