"""The profile probe's plugin over a real store: its result in Analysis.probe_results (tables,
flame graphs' stacks and attribution from one reading of the profiles), its result for
`cutaway compare`, and the differential flame graphs written beside a gate's summary
(gate.where.write_flame_graphs, which cutaway check and cutaway bisect share)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cutaway.attribution.result import attribution_of
from cutaway.compare import analyze, compare_experiments
from cutaway.gate.where import write_flame_graphs
from cutaway.model import ProbeSpec, Run, RunData, RunStatus, Spec, Variant
from cutaway.probes.profile import records
from cutaway.probes.profile.result import ProfileResult, profile_of
from cutaway.probes.profile.settings import ProfileSpec, with_profile
from cutaway.store import Store


def _experiment(store: Store, label: str) -> int:
    """Two variants, three rounds: `slow` spends 2 ms more per run in `parse`."""
    spec = Spec(
        name="p",
        variants=(Variant("fast", ("true",)), Variant("slow", ("true",))),
        baseline="fast",
        probes=with_profile(ProbeSpec(), ProfileSpec()),
    )
    experiment = store.create_experiment(spec, {}, label, "test")
    for round_index in range(3):
        for variant, extra in (("fast", 0), ("slow", 2_000_000)):
            timed = Run(variant, round_index, 0, RunStatus.OK, 0, None, {"cpu": 0.01}, 0.0)
            store.add_run(experiment, timed)
            stacks = {"prog;main;parse": 5_000_000 + extra + round_index, "prog;main": 1_000}
            profile = records.Profile(records.ON_CPU, records.NANOSECONDS, stacks)
            profiled = Run(
                variant, round_index, 1, RunStatus.OK, 0, None, {}, 0.0, purpose="profile"
            )
            data = RunData(records.KIND, records.ON_CPU, 1, records.encode(profile))
            store.add_run(experiment, profiled, [data])
    store.finish_experiment(experiment, "complete", None)
    return experiment


def test_the_profile_result_holds_tables_stacks_and_attribution(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        analysis = analyze(store, _experiment(store, "a"), resamples=200)
    found = analysis.result(ProfileResult)
    assert found is not None and found is profile_of(analysis)
    assert {t.variant for t in found.profile_totals} == {"fast", "slow"}
    assert [p.variant for p in found.flame_profiles] == ["fast", "slow"]
    # The attribution's readers find it without knowing the profile probe.
    assert attribution_of(analysis) is found
    [own] = [e for e in found.attribution if e.kind == "self" and e.function == "parse"]
    assert own.delta == pytest.approx(0.002)


def test_an_experiment_without_profiles_has_no_profile_result(tmp_path: Path) -> None:
    spec = Spec(name="p", variants=(Variant("only", ("true",)),), baseline="only")
    with Store(tmp_path / "s.db") as store:
        experiment = store.create_experiment(spec, {}, None, "t")
        store.add_run(experiment, Run("only", 0, 0, RunStatus.OK, 0, None, {"cpu": 0.1}, 0.0))
        store.finish_experiment(experiment, "complete", None)
        analysis = analyze(store, experiment, resamples=200)
    assert analysis.result(ProfileResult) is None
    assert profile_of(analysis) == ProfileResult()


def test_compare_keeps_each_experiments_stacks_tagged_and_no_attribution(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        first, second = _experiment(store, "old"), _experiment(store, "new")
        analysis = compare_experiments(store, first, second, resamples=200)
    found = profile_of(analysis)
    assert [p.variant for p in found.flame_profiles] == [
        f"fast (#{first} old)",
        f"slow (#{first} old)",
        f"fast (#{second} new)",
        f"slow (#{second} new)",
    ]
    # The attribution pairs runs by round: it has no meaning across two experiments.
    assert found.attribution == () and found.profile_totals == ()


def test_flame_graphs_are_written_beside_the_summary_and_a_missing_one_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "out" / "summary.md"
    summary.parent.mkdir()
    with Store(tmp_path / "s.db") as store:
        experiment = _experiment(store, "a")
        files = write_flame_graphs(
            store, experiment, {"slow": "slow-part", "absent": "absent"}, str(summary)
        )
        assert write_flame_graphs(store, experiment, {"slow": "slow"}, "-") == {}
        assert write_flame_graphs(store, experiment, {"slow": "slow"}, None) == {}
    assert files == {"slow": "summary.slow-part.flamegraph-diff.svg"}
    written = summary.parent / files["slow"]
    assert written.read_text(encoding="utf-8").lstrip().startswith("<?xml")
    assert sorted(p.name for p in summary.parent.iterdir()) == [files["slow"]]
    assert "cutaway: warning: no flame graph of absent:" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_no_flame_graph_goes_beside_a_summary_that_is_a_device_or_a_fifo(tmp_path: Path) -> None:
    """`check --summary /dev/null` (or /dev/stdout, a FIFO) writes no graph "beside" it: that
    was `/dev/null.NAME.flamegraph-diff.svg`, a file left in /dev (found by a hostile re-run).
    A copy of /dev/null and a FIFO in a directory of their own stand for /dev."""
    devices = tmp_path / "dev"
    devices.mkdir()
    null = devices / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    fifo = devices / "fifo"
    os.mkfifo(fifo)
    with Store(tmp_path / "s.db") as store:
        experiment = _experiment(store, "a")
        for summary in (null, fifo):
            assert write_flame_graphs(store, experiment, {"slow": "slow"}, str(summary)) == {}
    assert sorted(p.name for p in devices.iterdir()) == ["fifo", "null"]
