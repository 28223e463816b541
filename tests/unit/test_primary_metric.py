"""The metric an experiment declares primary (``primary_metric``, ``--primary-metric``): read,
checked against the metrics its runs measure, stored and read back, judged at full alpha, and
the one the report's conclusion speaks of."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cutaway.compare import analyze
from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.report import render_markdown
from cutaway.spec import SpecError, apply_overrides, parse_spec
from cutaway.store import Store
from cutaway.store.stored_spec import spec_from_json

FILE = """
name = "t"
primary_metric = "{primary}"
[[variants]]
name = "a"
command = "true"
[[variants]]
name = "b"
command = "true "
[[metrics]]
name = "answer"
source = "command"
command = "echo 42"
"""


@pytest.mark.parametrize("primary", ["cpu", "max_rss", "answer"])
def test_a_metric_the_runs_measure_is_read(primary: str) -> None:
    assert parse_spec(FILE.format(primary=primary), "x.toml").primary_metric == primary


def test_a_metric_the_runs_do_not_measure_is_refused_naming_the_line() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(FILE.format(primary="throughput"), "x.toml")
    message = str(caught.value)
    assert message.startswith("x.toml:3: primary_metric: ")
    assert '"throughput" is no metric of this experiment' in message
    assert "cpu" in message and "answer" in message  # what it could have been


def test_without_one_the_primary_metric_is_wall_time() -> None:
    spec = parse_spec(FILE.replace('primary_metric = "{primary}"\n', ""), "x.toml")
    assert spec.primary_metric is None
    assert "primary_metric" not in spec.to_dict()  # stored experiments unchanged


def test_the_command_line_sets_it_and_checks_it_with_the_metrics_it_adds() -> None:
    spec = Spec("t", (Variant("a", ("true",)), Variant("b", ("false",))), "a")
    assert apply_overrides(spec, {"--primary-metric": "cpu"}).primary_metric == "cpu"
    added = apply_overrides(
        spec, {"--metric": ["files=command:ls | wc -l"], "--primary-metric": "files"}
    )
    assert added.primary_metric == "files"
    with pytest.raises(SpecError) as caught:
        apply_overrides(spec, {"--primary-metric": "nosuch"})
    assert "--primary-metric" in str(caught.value)


def test_it_is_stored_and_read_back() -> None:
    spec = parse_spec(FILE.format(primary="cpu"), "x.toml")
    assert spec_from_json(spec.to_dict(), None).primary_metric == "cpu"


def _analysed(tmp_path: Path, primary: str | None) -> tuple[dict[str, float], str]:
    """A cpu 0.3 % higher in b, wall and the rest alike: the adjusted p of cpu per
    comparison, and the terminal report."""
    spec = Spec(
        "t",
        (Variant("a", ("x",)), Variant("b", ("y",))),
        "a",
        rounds=30,
        warmup_rounds=0,
        primary_metric=primary,
    )
    with Store(tmp_path / f"{primary}.db") as store:
        experiment_id = store.create_experiment(spec, {}, None, "test")
        for round_index in range(30):
            for position, name in enumerate(("a", "b")):
                wobble = 1.0 + 0.002 * ((round_index * 7 + position * 4) % 5 - 2)
                cpu = 0.1 * wobble * (1.0015 if name == "b" else 1.0)
                metrics = {
                    "wall": 0.2 * (1.0 + 0.02 * ((round_index * 3 + position) % 7 - 3)),
                    "cpu": cpu,
                    "max_rss": 1000.0 + (round_index * 5 + position) % 9,
                    "minor_faults": 100.0 + (round_index * 3 + position * 2) % 5,
                }
                run = Run(name, round_index, position, RunStatus.OK, 0, None, metrics, 0.0, "")
                store.add_run(experiment_id, run)
        store.finish_experiment(experiment_id, "complete", None)
        analysis = analyze(store, experiment_id, resamples=500)
    adjusted = {c.metric: c.p_value for c in analysis.comparisons}
    return adjusted, render_markdown(analysis)


def test_the_declared_metric_is_judged_at_full_alpha_and_leads_the_conclusion(
    tmp_path: Path,
) -> None:
    as_secondary, wall_report = _analysed(tmp_path, None)
    as_primary, report = _analysed(tmp_path, "cpu")
    assert as_primary["cpu"] < as_secondary["cpu"]  # no longer Holm-adjusted with the rest
    assert as_primary["wall"] > as_secondary["wall"]  # now it is wall that is adjusted
    assert "**`b` has a cpu 0.15 %" in report  # the conclusion speaks of cpu
    assert "has a cpu" not in wall_report


def test_the_until_width_reads_the_declared_metric(tmp_path: Path) -> None:
    from cutaway.runner.adaptive import widest_interval

    spec = Spec("t", (Variant("a", ("x",)), Variant("b", ("y",))), "a", rounds=8)
    with Store(tmp_path / "db") as store:
        experiment_id = store.create_experiment(spec, {}, None, "test")
        for round_index in range(8):
            for position, name in enumerate(("a", "b")):
                cpu = 0.1 * (1.0 + 0.01 * ((round_index * 7 + position * 3) % 5))
                metrics = {"wall": 0.2, "cpu": cpu}
                run = Run(name, round_index, position, RunStatus.OK, 0, None, metrics, 0.0, "")
                store.add_run(experiment_id, run)
        assert widest_interval(store, experiment_id, spec) == 0.0
        width = widest_interval(
            store, experiment_id, dataclasses.replace(spec, primary_metric="cpu")
        )
    assert width is not None and width > 0.005
