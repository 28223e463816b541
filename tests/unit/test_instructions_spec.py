"""The instructions probe's setting (experiment file and quick mode), its metric among the
experiment's metrics, and a probe's own metric read from its own runs, round by round."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cutaway.model import ProbeSpec, Run, RunStatus, Spec, Variant
from cutaway.probes.core import spec_metrics
from cutaway.probes.instructions.plugin import INSTRUCTIONS_METRIC
from cutaway.probes.instructions.settings import instructions_counted, with_instructions
from cutaway.probes.load.settings import load_settings
from cutaway.spec import SpecError, parse_spec
from cutaway.spec.overrides import apply_overrides
from cutaway.store import Store

HEAD = 'name = "p"\ncommand = "true"\n[probes]\n'


def test_instructions_true_turns_the_probe_and_its_metric_on() -> None:
    spec = parse_spec(HEAD + "instructions = true\n")
    assert instructions_counted(spec.probes)
    assert INSTRUCTIONS_METRIC in spec_metrics(spec)
    assert ProbeSpec.from_dict(spec.probes.to_dict()) == spec.probes  # stored and read back
    off = parse_spec(HEAD + "instructions = false\n")
    assert not instructions_counted(off.probes) and INSTRUCTIONS_METRIC not in spec_metrics(off)
    assert instructions_counted(apply_overrides(off, {"--instructions": True}).probes)


def test_a_bad_value_names_the_key_and_line() -> None:
    with pytest.raises(SpecError, match=r"probes\.instructions") as caught:
        parse_spec(HEAD + 'instructions = "yes"\n')
    assert "line 4" in str(caught.value)


def _run(variant: str, round_index: int, purpose: str, value: float) -> Run:
    metrics = {"wall": 1.0, **({"instructions": value} if purpose != "timed" else {})}
    return Run(variant, round_index, 0, RunStatus.OK, 0, None, metrics, 0.0, purpose=purpose)


def test_a_probe_metric_is_read_from_the_probe_runs_by_round(tmp_path: Path) -> None:
    spec = Spec(
        name="p",
        variants=(Variant("a", ("true",)), Variant("b", ("true",))),
        baseline="a",
        probes=with_instructions(ProbeSpec(), True),
    )
    with Store(tmp_path / "db.sqlite") as store:
        experiment = store.create_experiment(spec, {}, None, "t")
        for round_index in range(2):
            for index, variant in enumerate(("a", "b")):
                store.add_run(experiment, _run(variant, round_index, "timed", 0))
                value = 1000.0 + 10 * index + round_index
                store.add_run(experiment, _run(variant, round_index, "instructions", value))
        table = store.metric_table(experiment, "instructions", "instructions")
        assert table.values.tolist() == [[1000.0, 1010.0], [1001.0, 1011.0]]
        timed = store.metric_table(experiment, "instructions")  # not in the timed runs
        assert np.isnan(timed.values).all()


def test_the_stored_setting_reads_back_as_before() -> None:
    """Experiments stored when the setting was a field of ProbeSpec read back to the same
    probes, and store again in the same form."""
    counted = ProbeSpec.from_dict({"instructions": True, "calls": [], "calls_thread_cpu": False})
    assert instructions_counted(counted)
    assert counted.to_dict() == {"instructions": True}
    off = ProbeSpec.from_dict({"instructions": False, "calls": []})
    assert not instructions_counted(off) and off == ProbeSpec() and off.to_dict() == {}


def test_a_stored_setting_cutaway_never_writes_is_named() -> None:
    damaged = ProbeSpec.from_dict({"instructions": "yes"})
    with pytest.raises(ValueError, match=r'probes\.instructions: "yes" is not true or false'):
        instructions_counted(damaged)


def test_a_load_experiment_does_not_list_the_counted_metric() -> None:
    """A load experiment compares its load phase's metrics: the instructions probe adds none."""
    spec = parse_spec(
        'name = "p"\n[load]\nduration = "1s"\n[probes]\ninstructions = true\n'
        '[[variants]]\nname = "a"\ntarget = "http://127.0.0.1:1/"\n'
    )
    assert load_settings(spec) is not None and instructions_counted(spec.probes)
    assert INSTRUCTIONS_METRIC not in spec_metrics(spec)
