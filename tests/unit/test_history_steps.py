"""`cutaway history` finds a 10 % step of wall time over six versions, with and without a
reference variant, and reports none over six versions without one. The store is built through
the store API from per-round values shaped like this project's shared VM (a 20 ms run): rounds
that slow both variants together, a few per cent of noise per run, one run in ten slowed 1.5 to
3 times by a neighbour, and each experiment drifting by a per cent or two from the next. Real
runs would make the test's answer depend on the machine's load; these are seeded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cutaway.cli import main as entry
from cutaway.model import PROCESS_METRICS, Run, RunStatus, Spec, Variant
from cutaway.store import Store

NAME = "nightly"
ROUNDS = 30
VERSIONS = 6
SECONDS = 0.020
ROUND_NOISE = 0.05  # shared by both variants of a round
RUN_NOISE = 0.04
SLOWED_SHARE = 0.1
EXPERIMENT_DRIFT = 0.015


def build_store(path: Path, step: float, seed: int) -> Path:
    """Six experiments (v1..v6), variants "ref" (the same work every time) and "prog" (``step``
    more work from v4 on)."""
    rng = np.random.default_rng(seed)
    spec = Spec(
        name=NAME,
        variants=(Variant("ref", ("./ref",)), Variant("prog", ("./prog",))),
        baseline="ref",
        rounds=ROUNDS,
        warmup_rounds=0,
    )
    with Store(path) as store:
        for version in range(1, VERSIONS + 1):
            experiment_id = store.create_experiment(spec, {}, f"v{version}", "test")
            drift = float(rng.normal(0.0, EXPERIMENT_DRIFT))  # the whole experiment, both variants
            for round_index in range(ROUNDS):
                shared = float(rng.normal(0.0, ROUND_NOISE))
                for position, name in enumerate(("ref", "prog")):
                    work = 1.0 + (step if name == "prog" and version >= 4 else 0.0)
                    wall = SECONDS * work * float(np.exp(drift + shared + rng.normal(0, RUN_NOISE)))
                    if rng.random() < SLOWED_SHARE:
                        wall *= float(rng.uniform(1.5, 3.0))
                    values = {metric.name: wall for metric in PROCESS_METRICS}
                    run = Run(name, round_index, position, RunStatus.OK, 0, None, values, 0.0)
                    store.add_run(experiment_id, run)
            store.finish_experiment(experiment_id, "complete", None)
    return path


def history(db: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    capsys.readouterr()
    arguments = ["history", NAME, "--db", str(db), "--variant", "prog", *extra]
    assert entry.main([*arguments, "--format", "json"]) == 0
    document: dict[str, object] = json.loads(capsys.readouterr().out)
    return document


@pytest.mark.parametrize("reference", [(), ("--reference", "ref")], ids=["median", "ratio"])
def test_a_ten_percent_step_over_six_versions_is_found_at_its_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: tuple[str, ...]
) -> None:
    db = build_store(tmp_path / "step.db", step=0.10, seed=1)
    document = history(db, capsys, *reference)
    changes = document["changes"]
    assert isinstance(changes, list) and len(changes) == 1, changes
    [change] = changes
    assert (change["before_version"], change["after_version"]) == ("v3", "v4")
    assert 0.05 < change["relative"] < 0.2  # the ratio carries one-sided slow runs: +15 % here


@pytest.mark.parametrize("reference", [(), ("--reference", "ref")], ids=["median", "ratio"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_six_versions_without_a_step_show_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: tuple[str, ...], seed: int
) -> None:
    db = build_store(tmp_path / "flat.db", step=0.0, seed=seed)
    assert history(db, capsys, *reference)["changes"] == []
