"""The profile probe's settings (experiment file and quick mode), and the store's runs of a
purpose other than timing: version 6 of the schema and its migration."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cutaway.model import ProbeSpec, Run, RunData, RunStatus, Spec, Variant
from cutaway.probes.profile.settings import ProfileSpec, profile_settings
from cutaway.spec import SpecError, parse_spec
from cutaway.spec.overrides import apply_overrides
from cutaway.store import LATEST_VERSION, Store
from cutaway.store import schema as store_schema

HEAD = 'name = "p"\ncommand = "true"\n[probes]\n'


def test_profile_true_takes_the_defaults_and_a_table_sets_each_key() -> None:
    assert profile_settings(parse_spec(HEAD + "profile = true\n").probes) == ProfileSpec()
    assert profile_settings(parse_spec(HEAD + "profile = false\n").probes) is None
    spec = parse_spec(
        HEAD + 'profile = { frequency = "4999Hz", system_wide = true, call_graph = "dwarf",'
        " off_cpu = false, kernel = false }\n"
    )
    assert profile_settings(spec.probes) == ProfileSpec(4999, True, "dwarf", False, False)
    assert ProbeSpec.from_dict(spec.probes.to_dict()) == spec.probes  # stored and read back


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("profile = { rate = 9 }", "unknown profile setting"),
        ('profile = { call_graph = "lbr" }', "one of fp, dwarf"),
        ("profile = { frequency = 0 }", "an integer >= 1"),
        ("profile = { frequency = 1000000 }", "more than perf allows"),
        ('profile = "yes"', "true, false or a table"),
    ],
)
def test_bad_profile_settings_name_the_key(setting: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as caught:
        parse_spec(HEAD + setting + "\n")
    assert "probes.profile" in str(caught.value) and "line 4" in str(caught.value)


def test_quick_mode_options_turn_the_probe_on_over_the_file_settings() -> None:
    spec = parse_spec(HEAD + "profile = { frequency = 99 }\n")
    assert profile_settings(apply_overrides(spec, {"--profile": {}}).probes) == ProfileSpec(99)
    changed = apply_overrides(
        spec, {"--profile": {"--system-wide": True, "--profile-call-graph": "dwarf"}}
    )
    assert profile_settings(changed.probes) == ProfileSpec(99, True, "dwarf")
    with pytest.raises(SpecError, match="--profile-frequency"):
        apply_overrides(spec, {"--profile": {"--profile-frequency": "fast"}})


def test_dwarf_can_be_insisted_on_in_the_file_and_on_the_command_line() -> None:
    spec = parse_spec(HEAD + 'profile = { call_graph = "dwarf!" }\n')
    assert (
        profile_settings(spec.probes) is not None
        and profile_settings(spec.probes).call_graph == "dwarf!"
    )
    assert ProbeSpec.from_dict(spec.probes.to_dict()) == spec.probes
    changed = apply_overrides(parse_spec(HEAD), {"--profile": {"--profile-call-graph": "dwarf!"}})
    assert profile_settings(changed.probes) == ProfileSpec(call_graph="dwarf!")


def _run(variant: str, round_index: int, purpose: str = "timed", wall: float = 1.0) -> Run:
    return Run(
        variant, round_index, 0, RunStatus.OK, 0, None, {"wall": wall}, 0.0, "", purpose=purpose
    )


def test_profiled_runs_share_a_slot_with_timed_runs_and_stay_out_of_the_analysis(
    tmp_path: Path,
) -> None:
    spec = Spec(name="s", variants=(Variant("a", ("true",)),), baseline="a")
    with Store(tmp_path / "c.db") as store:
        experiment = store.create_experiment(spec, {}, None, "t")
        store.add_run(experiment, _run("a", 0, wall=1.0))
        store.add_run(
            experiment, _run("a", 0, "profile", 9.0), [RunData("profile", "on-cpu", 1, b"x")]
        )
        assert [r.purpose for r in store.runs(experiment)] == ["timed"]
        assert {r.purpose for r in store.runs(experiment, purpose=None)} == {"timed", "profile"}
        assert store.metric_table(experiment, "wall").values.tolist() == [[1.0]]
        assert store.completed_slots(experiment) == {(0, "a", "timed"), (0, "a", "profile")}
        (data,) = store.run_data(experiment, "profile")
        assert data.data == b"x"
        store.add_run(experiment, _run("a", 0, "profile", 8.0))  # replaces its own slot only
        assert store.run_data(experiment, "profile") == []
        assert store.runs(experiment)[0].metrics["wall"] == 1.0


def test_version_5_runs_keep_their_measurements_and_data_through_the_rebuild(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v5.db"
    spec = Spec(name="d", variants=(Variant("a", ("true",)),), baseline="a")
    with sqlite3.connect(path, isolation_level=None) as raw:
        for migration in store_schema.MIGRATIONS[:5]:
            for statement in migration.statements:
                raw.execute(statement)
        raw.execute("PRAGMA user_version = 5")
        raw.execute(
            "INSERT INTO experiments (id, name, status, created_at, spec_json, environment_json,"
            " cutaway_version) VALUES (1, 'd', 'complete', 0, ?, '{}', 'old')",
            (json.dumps(spec.to_dict()),),
        )
        raw.execute("INSERT INTO variants VALUES (1, 0, 'a', ?)", (json.dumps({"name": "a"}),))
        raw.execute(
            "INSERT INTO runs (id, experiment_id, variant, round_index, order_in_round, status,"
            " started_at) VALUES (7, 1, 'a', 0, 0, 'ok', 0)"
        )
        raw.execute("INSERT INTO measurements VALUES (7, 'wall', 0.5)")
        raw.execute(
            "INSERT INTO run_data (run_id, kind, key, count, data)"
            " VALUES (7, 'calls', 'k', 1, x'01')"
        )
    raw.close()
    with Store(path) as store:
        (run,) = store.runs(1)
        assert (run.purpose, run.metrics["wall"]) == ("timed", 0.5)
        assert store.run_data(1, "calls")[0].data == b"\x01"
        store.add_run(1, _run("a", 0, "profile"))
        assert len(store.runs(1, purpose=None)) == 2
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION == 8
        assert raw.execute("PRAGMA foreign_keys").fetchone()[0] == 0  # a new connection's default
        assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
        (table,) = raw.execute("SELECT sql FROM sqlite_schema WHERE name = 'runs'").fetchone()
        assert "UNIQUE (experiment_id, variant, round_index, purpose)" in table
    raw.close()
    with Store(path) as store:  # foreign keys are on again after the migration: cascades work
        store.add_run(1, _run("a", 0))  # replacing the timed run drops its old data
        assert store.run_data(1, "calls") == []


def test_the_profile_settings_are_stored_as_before_and_checked_when_read_back() -> None:
    """The profile probe keeps its settings in its package: an experiment stored before reads
    back to the same settings, and a value cutaway never stores is named when read."""
    from cutaway.probes.profile.settings import PhaseRule

    stored = {
        "frequency_hz": 4999,
        "system_wide": True,
        "call_graph": "dwarf",
        "off_cpu": False,
        "kernel": False,
        "phases": [{"name": "parse", "frames": "^parse"}],
        "processes": ["caddy"],
    }
    probes = ProbeSpec.from_dict({"calls": [], "calls_thread_cpu": False, "profile": stored})
    assert profile_settings(probes) == ProfileSpec(
        4999, True, "dwarf", False, False, (PhaseRule("parse", "^parse"),), ("caddy",)
    )
    assert probes.to_dict()["profile"] == stored
    damaged = ProbeSpec.from_dict({"profile": {**stored, "phases": [{"name": "x", "frames": "("}]}})
    with pytest.raises(ValueError, match=r"probes\.profile\.phases\[0\]\.frames"):
        profile_settings(damaged)
