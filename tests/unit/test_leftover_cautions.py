"""The caution a report gives when runs left processes running after they ended."""

from __future__ import annotations

from pathlib import Path

from cutaway.compare import analyze
from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.store import Store


def _analysed(tmp_path: Path, *, keep: bool) -> list[str]:
    spec = Spec(
        name="t",
        variants=(Variant("a", ("x",)), Variant("b", ("y",))),
        baseline="a",
        rounds=4,
        warmup_rounds=1,
        keep_leftovers=keep,
    )
    with Store(tmp_path / "db") as store:
        experiment_id = store.create_experiment(spec, {}, None, "test")
        for round_index in range(-1, 4):
            for position, name in enumerate(("a", "b")):
                left = 2 if name == "b" and round_index != 2 else 0
                names = ("sleep", "sh") if left else ()
                metrics = {"wall": 0.1 + 0.001 * round_index}
                run = Run(
                    name,
                    round_index,
                    position,
                    RunStatus.OK,
                    0,
                    None,
                    metrics,
                    0.0,
                    "",
                    left,
                    names,
                )
                store.add_run(experiment_id, run)
        store.finish_experiment(experiment_id, "complete", None)
        analysis = analyze(store, experiment_id, resamples=200)
    return [c.message for c in analysis.cautions if c.kind == "leftovers"]


def test_runs_that_left_processes_behind_are_counted_per_variant(tmp_path: Path) -> None:
    (message,) = _analysed(tmp_path, keep=False)
    # Counted rounds only (the warmup run is left out), named once each, processes summed.
    assert message.startswith("3 of 4 runs of 'b' left processes running after they ended")
    assert "(sleep, sh; 6 in all)" in message
    assert "they were stopped when each run ended" in message


def test_kept_leftovers_are_said_to_compete_with_later_runs(tmp_path: Path) -> None:
    (message,) = _analysed(tmp_path, keep=True)
    assert "kept running (keep_leftovers): they may have slowed the runs after them" in message
