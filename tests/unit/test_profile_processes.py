"""The profile probe's `processes` setting: a system-wide profile narrowed to some processes
(by the process name at each folded stack's root) before its tables and attribution."""

from __future__ import annotations

import json

import pytest

from cutaway.probes.profile import records
from cutaway.probes.profile.analysis import only_processes
from cutaway.probes.profile.settings import ProfileSpec, profile_settings
from cutaway.spec import SpecError, parse_spec
from cutaway.store.stored_spec import spec_from_json

HEAD = 'name = "p"\ncommand = "true"\n[probes]\n'


def test_processes_are_read_stored_and_read_back() -> None:
    spec = parse_spec(HEAD + 'profile = { system_wide = true, processes = ["caddy", "my app"] }\n')
    assert profile_settings(spec.probes) == ProfileSpec(
        system_wide=True, processes=("caddy", "my_app")
    )
    assert profile_settings(
        spec_from_json(json.loads(json.dumps(spec.to_dict())), None).probes
    ) == profile_settings(spec.probes)
    assert "processes" not in ProfileSpec().to_dict()  # specs stored before it read the same


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("processes = []", "a non-empty list of process names"),
        ('processes = "caddy"', "a non-empty list of process names"),
        ('processes = ["caddy", " "]', "a process name"),
    ],
)
def test_bad_processes_name_the_key(setting: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as caught:
        parse_spec(HEAD + f"profile = {{ system_wide = true, {setting} }}\n")
    assert "probes.profile.processes" in str(caught.value) and "line 4" in str(caught.value)


def test_only_the_named_processes_stacks_are_kept() -> None:
    profile = records.Profile(
        records.ON_CPU,
        records.NANOSECONDS,
        {
            "caddy;runtime.main;net/http.(*conn).serve": 30,
            "caddy;runtime.mallocgc": 5,
            "cw_load;main;send_[k]": 40,
            "python3;_PyEval_EvalFrameDefault": 25,
            "caddyfoo;main": 7,  # another program whose name begins the same
        },
        events=107,
    )
    [(variant, round_index, narrowed)] = only_processes([("new", 3, profile)], ["caddy"])
    assert (variant, round_index) == ("new", 3)
    assert dict(narrowed.stacks) == {
        "caddy;runtime.main;net/http.(*conn).serve": 30,
        "caddy;runtime.mallocgc": 5,
    }
    assert narrowed.total == 35 and narrowed.what == records.ON_CPU
