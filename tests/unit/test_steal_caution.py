"""The caution a report gives when a hypervisor took CPU time from the machine (steal) while an
experiment ran, read from /proc/stat at its start and end."""

from __future__ import annotations

from pathlib import Path

import pytest

from cutaway.cautions import STEAL_SHARE
from cutaway.compare import analyze
from cutaway.cpu_steal import cpu_ticks, steal_share
from cutaway.environment import capture_end, capture_environment
from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.store import Store


def _load_cautions(tmp_path: Path, start: object, end: object) -> list[str]:
    spec = Spec(
        name="t",
        variants=(Variant("a", ("x",)), Variant("b", ("y",))),
        baseline="a",
        rounds=3,
        warmup_rounds=0,
    )
    with Store(tmp_path / "db") as store:
        experiment_id = store.create_experiment(spec, {"cpu_ticks_start": start}, None, "test")
        for round_index in range(3):
            for position, name in enumerate(("a", "b")):
                metrics = {"wall": 0.1 + 0.001 * round_index}
                run = Run(name, round_index, position, RunStatus.OK, 0, None, metrics, 0.0, "")
                store.add_run(experiment_id, run)
        store.finish_experiment(experiment_id, "complete", {"cpu_ticks_end": end})
        analysis = analyze(store, experiment_id, resamples=200)
    return [c.message for c in analysis.cautions if c.kind == "load"]


def test_steal_over_the_threshold_is_said_with_its_share(tmp_path: Path) -> None:
    (message,) = _load_cautions(tmp_path, [1000, 10], [3000, 410])  # 400 of 2000 ticks: 20 %
    assert message.startswith("the hypervisor gave 20% of the CPU time to other machines")
    assert "small differences may stay inconclusive" in message


def test_steal_at_or_below_the_threshold_is_not_a_caution(tmp_path: Path) -> None:
    stolen = int(STEAL_SHARE * 2000)
    assert _load_cautions(tmp_path, [1000, 10], [3000, 10 + stolen]) == []


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (None, [3000, 410]),  # stored before the readings existed
        ([1000, 10], None),  # an experiment that never finished
        ([3000, 10], [1000, 410]),  # a reboot between start and end: counters went back
        ([1000, 500], [3000, 410]),
        ([1000, 10], [3000, 5000]),  # more steal than time: a damaged store
        ([1000, True], [3000, 410]),
        ("1000 10", [3000, 410]),
        ([1000.5, 10], [3000, 410]),
        ([1000], [3000]),
    ],
)
def test_readings_that_make_no_sense_give_no_share(start: object, end: object) -> None:
    assert steal_share({"cpu_ticks_start": start, "cpu_ticks_end": end}) is None


def test_the_readings_are_taken_at_start_and_end_from_this_machine() -> None:
    start = capture_environment()["cpu_ticks_start"]
    end = capture_end()["cpu_ticks_end"]
    assert start is not None and end is not None  # Linux: /proc/stat is there
    share = steal_share({"cpu_ticks_start": start, "cpu_ticks_end": end})
    assert share is None or 0.0 <= share <= 1.0  # None: no tick passed between the readings
    total, steal = cpu_ticks() or [0, 0]
    assert total >= end[0] >= start[0] > 0  # type: ignore[index]
    assert 0 <= steal <= total
