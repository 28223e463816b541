"""The profile probe's `under` setting: the profiles narrowed to the stacks that pass through
some functions (a system call's kernel entry, `do_fsync`) before their tables, flame graphs and
attribution, which is then reconciled with the narrowed profile's own total."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cutaway.compare import analyze
from cutaway.model import ProbeSpec, Run, RunData, RunStatus, Spec, Variant
from cutaway.probes.profile import records
from cutaway.probes.profile.analysis import only_under
from cutaway.probes.profile.result import profile_of
from cutaway.probes.profile.settings import ProfileSpec, profile_settings, with_profile
from cutaway.spec import SpecError, parse_spec
from cutaway.store import Store
from cutaway.store.stored_spec import spec_from_json

HEAD = 'name = "p"\ncommand = "true"\n[probes]\n'
FSYNC = "sendmail;fsync;entry_SYSCALL_64_[k];__x64_sys_fsync_[k];do_fsync_[k]"


def test_under_is_read_stored_and_read_back() -> None:
    spec = parse_spec(HEAD + 'profile = { under = ["do_fsync", " do_renameat2 ", "do_fsync"] }\n')
    assert profile_settings(spec.probes) == ProfileSpec(under=("do_fsync", "do_renameat2"))
    assert profile_settings(
        spec_from_json(json.loads(json.dumps(spec.to_dict())), None).probes
    ) == profile_settings(spec.probes)
    assert "under" not in ProfileSpec().to_dict()  # specs stored before it read the same


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("under = []", "a non-empty list of function names"),
        ('under = "do_fsync"', "a non-empty list of function names"),
        ('under = ["do_fsync", ""]', "a function name"),
        ('under = ["a;b"]', "a function name"),
    ],
)
def test_bad_under_names_the_key(setting: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as caught:
        parse_spec(HEAD + f"profile = {{ {setting} }}\n")
    assert "probes.profile.under" in str(caught.value) and "line 4" in str(caught.value)


def test_only_the_stacks_through_the_functions_are_kept_whole() -> None:
    profile = records.Profile(
        records.OFF_CPU,
        records.NANOSECONDS,
        {
            f"{FSYNC};ext4_sync_file_[k];jbd2_log_wait_commit_[k];schedule_[k]": 30,
            "sendmail;openat;do_sys_openat2_[k];rwsem_down_write_slowpath_[k]": 20,
            "sendmail;read;ksys_read_[k];schedule_[k]": 40,
            "sendmail;do_fsync_wrapper": 7,  # a user function whose name begins the same
            "do_fsync;main": 5,  # a process named like the function: the root is not a frame
            "prog;main;do_renameat2": 3,  # a user frame matches without the kernel mark
        },
        events=105,
    )
    kept = only_under([("q1", 2, profile)], ["do_fsync", "do_sys_openat2", "do_renameat2"])
    [(variant, round_index, narrowed)] = kept
    assert (variant, round_index, narrowed.what) == ("q1", 2, records.OFF_CPU)
    assert dict(narrowed.stacks) == {
        f"{FSYNC};ext4_sync_file_[k];jbd2_log_wait_commit_[k];schedule_[k]": 30,
        "sendmail;openat;do_sys_openat2_[k];rwsem_down_write_slowpath_[k]": 20,
        "prog;main;do_renameat2": 3,
    }
    assert narrowed.total == 53


def _store(path: Path, under: tuple[str, ...]) -> tuple[Store, int]:
    """Two variants, four rounds: `slow` waits 2 ms more per run in fsync's journal commit and
    computes 9 ms more outside any system call; `cpu` counts both."""
    spec = Spec(
        name="s",
        variants=(Variant("fast", ("true",)), Variant("slow", ("true",))),
        baseline="fast",
        probes=with_profile(ProbeSpec(), ProfileSpec(under=under)),
    )
    store = Store(path)
    experiment = store.create_experiment(spec, {}, None, "t")
    for round_index in range(4):
        for variant, extra in (("fast", 0), ("slow", 1_000_000)):
            cpu = 0.020 + extra * 11e-9
            timed = Run(variant, round_index, 0, RunStatus.OK, 0, None, {"cpu": cpu}, 0.0)
            store.add_run(experiment, timed)
            stacks = {
                f"{FSYNC};jbd2_log_wait_commit_[k]": 5_000_000 + 2 * extra + round_index * 1000,
                "sendmail;main;parse": 15_000_000 + 9 * extra,
            }
            profile = records.Profile(records.ON_CPU, records.NANOSECONDS, stacks)
            profiled = Run(
                variant, round_index, 1, RunStatus.OK, 0, None, {}, 0.0, purpose="profile"
            )
            data = RunData(records.KIND, records.ON_CPU, 1, records.encode(profile))
            store.add_run(experiment, profiled, [data])
    return store, experiment


def test_the_attribution_under_a_function_is_its_stacks_and_reconciled_with_them(
    tmp_path: Path,
) -> None:
    store, experiment = _store(tmp_path / "s.db", ("do_fsync",))
    with store:
        analysis = analyze(store, experiment, resamples=200)
    found = profile_of(analysis)
    functions = {entry.function for entry in found.attribution}
    assert "parse" not in functions and "main" not in functions
    [own] = [e for e in found.attribution if e.kind == "self"]
    assert own.function == "jbd2_log_wait_commit_[k]"
    assert own.delta == pytest.approx(0.002) and own.beyond_noise
    [total] = found.attribution_totals
    # `cpu` (11 ms more) counts the parse outside fsync too: the narrowed profile is
    # reconciled with its own total, of which the journal wait is all.
    assert total.measured_metric is None and own.share == pytest.approx(1.0)
    assert {t.function for t in found.profile_functions} >= {"do_fsync_[k]"}
    assert "parse" not in {t.function for t in found.profile_functions}


def test_without_under_every_stack_is_analysed(tmp_path: Path) -> None:
    store, experiment = _store(tmp_path / "s.db", ())
    with store:
        analysis = analyze(store, experiment, resamples=200)
    found = profile_of(analysis)
    assert "parse" in {entry.function for entry in found.attribution}
    [total] = found.attribution_totals
    assert total.measured_metric == "cpu"
