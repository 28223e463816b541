"""`cutaway compare` of two experiments: each header shows that experiment's own facts (its
harness overhead, its cautions), --map pairs variants of different names, and two experiments
with nothing to pair are an error naming both sides' variants, on synthetic stored runs."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from cutaway.compare import VariantMismatch, compare_experiments, variant_map_from_options
from cutaway.model import PROCESS_METRICS, Calibration, Run, RunStatus, Spec, Variant
from cutaway.report import render_json, render_markdown, render_terminal
from cutaway.store import Store

ROUNDS = 12


def _stored(
    store: Store, walls: Mapping[str, float], overhead_seconds: float, rounds: int = ROUNDS
) -> int:
    """An experiment of ``walls`` (variant -> wall time) with its harness overhead."""
    spec = Spec(
        name="pair",
        variants=tuple(Variant(name, ("x",)) for name in walls),
        baseline=next(iter(walls)),
        rounds=rounds,
        warmup_rounds=0,
    )
    experiment_id = store.create_experiment(spec, {}, None, "test")
    store.set_calibration(experiment_id, Calibration("true", 30, overhead_seconds, 0.0))
    rng = np.random.default_rng(experiment_id)
    for round_index in range(rounds):
        for position, (variant, wall) in enumerate(walls.items()):
            values = {m.name: 1.0 for m in PROCESS_METRICS}
            values["wall"] = wall * float(np.exp(rng.normal(0, 0.01)))
            run = Run(variant, round_index, position, RunStatus.OK, 0, None, values, 0.0)
            store.add_run(experiment_id, run)
    store.finish_experiment(experiment_id, "complete", None)
    return experiment_id


@pytest.fixture
def renamed(tmp_path: Path) -> tuple[Store, int, int]:
    """#1 with old-a and old-b, #2 with new-a and new-b (twice as slow), 4 rounds only."""
    store = Store(tmp_path / "db")
    first = _stored(store, {"old-a": 0.1, "old-b": 0.1}, 0.001)
    second = _stored(store, {"new-a": 0.2, "new-b": 0.2}, 0.002, rounds=4)
    return store, first, second


def test_no_variant_in_common_is_an_error_naming_both_sides(
    renamed: tuple[Store, int, int],
) -> None:
    store, first, second = renamed
    with pytest.raises(VariantMismatch) as raised:
        compare_experiments(store, first, second, resamples=200)
    message = str(raised.value)
    assert "#1 and #2 have no variant in common" in message
    assert "#1 has 'old-a', 'old-b'; #2 has 'new-a', 'new-b'" in message
    assert "--map OLD=NEW" in message and "--map old-a=new-a" in message


def test_map_pairs_differently_named_variants(renamed: tuple[Store, int, int]) -> None:
    store, first, second = renamed
    mapping = {"old-a": "new-a", "old-b": "new-b"}
    analysis = compare_experiments(store, first, second, resamples=200, variant_map=mapping)
    walls = {(c.baseline, c.variant): c for c in analysis.comparisons if c.metric == "wall"}
    assert list(walls) == [("old-a (#1)", "new-a (#2)"), ("old-b (#1)", "new-b (#2)")]
    assert all(c.ratio == pytest.approx(2.0, rel=0.02) for c in walls.values())
    variants = {s.variant for s in analysis.summaries}
    assert variants == {"old-a (#1)", "new-a (#2)", "old-b (#1)", "new-b (#2)"}
    # A map for one pair: the other variant of #1 has no partner, and is left out.
    one = compare_experiments(store, first, second, resamples=200, variant_map={"old-b": "new-a"})
    assert {(c.baseline, c.variant) for c in one.comparisons} == {("old-b (#1)", "new-a (#2)")}


def test_a_map_naming_a_missing_variant_is_an_error(renamed: tuple[Store, int, int]) -> None:
    store, first, second = renamed
    with pytest.raises(VariantMismatch, match=r"--map 'old-a=nope' pairs no variant of #1"):
        variant_map_from_options(store, first, second, ["old-a=nope"])
    with pytest.raises(VariantMismatch, match="#2 has no variant 'nope'"):
        compare_experiments(store, first, second, variant_map={"old-a": "nope"})
    with pytest.raises(VariantMismatch, match="pairs 'old-a' twice"):
        variant_map_from_options(store, first, second, ["old-a=new-a", "old-a=new-b"])


def test_map_splits_at_the_equals_sign_that_names_two_variants(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    first = _stored(store, {"n=1": 0.1, "a": 0.1, "a=b": 0.1}, 0.001)
    second = _stored(store, {"m=1": 0.1, "b=c": 0.1, "c": 0.1}, 0.001)
    assert variant_map_from_options(store, first, second, ["n=1=m=1"]) == {"n=1": "m=1"}
    with pytest.raises(VariantMismatch, match="'a=b=c' is ambiguous"):
        variant_map_from_options(store, first, second, ["a=b=c"])


def test_each_header_shows_its_own_experiments_facts(renamed: tuple[Store, int, int]) -> None:
    store, first, second = renamed
    mapping = {"old-a": "new-a", "old-b": "new-b"}
    analysis = compare_experiments(store, first, second, resamples=200, variant_map=mapping)
    compact = render_terminal(analysis, color=False, width=200)
    headers = re.findall(r"^experiment pair  #(\d).*\n(.*)$", compact, re.MULTILINE)
    assert [(number, "harness" in facts) for number, facts in headers] == [("1", True), ("2", True)]
    assert "harness 1.00 ms/run" in headers[0][1] and "harness 2.00 ms/run" in headers[1][1]
    full = render_terminal(analysis, color=False, width=200, all_metrics=True)
    one, two = full.index("#1  complete"), full.index("#2  complete")
    assert one < full.index("harness overhead: 1.00 ms") < two
    assert two < full.index("harness overhead: 2.00 ms")
    markdown = render_markdown(analysis)
    assert markdown.index("#1  complete") < markdown.index("harness overhead: 1.00 ms")
    assert markdown.index("#2  complete") < markdown.index("harness overhead: 2.00 ms")
    assert "| #2 harness overhead | 2.00 ms per run" in markdown
    document = json.loads(render_json(analysis))
    overheads = [e["calibration"]["median_wall_seconds"] for e in document["experiments"]]
    assert overheads == [0.001, 0.002]
    # A caution says which experiment it is about.
    assert any(c.message.startswith("#2: only 4") for c in analysis.cautions), analysis.cautions
    assert not any(c.message.startswith("only 4") for c in analysis.cautions)
