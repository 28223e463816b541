"""``[[conditions]]``: every declared variant copied once per condition with the condition's
prepare steps, the baseline's copy in the first condition as the baseline, comparisons along
both axes, and the whole stored and read back."""

from __future__ import annotations

import json
import re

import pytest

from cutaway.families import compared_pairs
from cutaway.model import Condition, Spec
from cutaway.spec import SpecError, parse_spec
from cutaway.spec.overrides import apply_overrides
from cutaway.store.stored_spec import spec_from_json

FILE = """
name = "cache"
baseline = "index"
[[variants]]
name = "scan"
command = "true"
prepare = "echo variant"
setup = "echo setup"
[[variants]]
name = "index"
command = "true"
[[conditions]]
name = "warm"
prepare = "echo warming"
[[conditions]]
name = "cold"
prepare = "echo 3 > /proc/sys/vm/drop_caches"
"""


def test_each_variant_runs_in_each_condition_after_its_own_prepare() -> None:
    spec = parse_spec(FILE)
    assert [v.name for v in spec.variants] == ["scan/warm", "scan/cold", "index/warm", "index/cold"]
    assert spec.baseline == "index/warm"
    assert spec.conditions == (
        Condition("warm", "echo warming"),
        Condition("cold", "echo 3 > /proc/sys/vm/drop_caches"),
    )
    cold_scan = spec.variant("scan/cold")
    assert cold_scan.condition == "cold" and cold_scan.family_name == "scan"
    assert (
        cold_scan.hooks.prepare == "{\necho variant\n} && {\necho 3 > /proc/sys/vm/drop_caches\n}"
    )
    assert cold_scan.hooks.setup == "echo setup"
    assert cold_scan.env["CUTAWAY_CONDITION"] == "cold"
    assert spec.variant("index/warm").hooks.prepare == "echo warming"


def test_comparisons_follow_both_axes() -> None:
    assert compared_pairs(parse_spec(FILE)) == [
        ("index/warm", "scan/warm"),  # within each condition, against the baseline
        ("index/cold", "scan/cold"),
        ("scan/warm", "scan/cold"),  # each variant's conditions against its first
        ("index/warm", "index/cold"),
    ]


def test_without_conditions_every_variant_is_compared_with_the_baseline() -> None:
    spec = parse_spec(FILE.split("[[conditions]]")[0])
    assert compared_pairs(spec) == [("index", "scan")]


def test_conditions_are_stored_and_read_back() -> None:
    spec = parse_spec(FILE)
    stored = spec_from_json(json.loads(json.dumps(spec.to_dict())), None)
    assert stored.conditions == spec.conditions
    assert stored.variants == spec.variants
    assert Spec.from_dict(spec.to_dict()).variants == spec.variants


def test_the_baseline_option_takes_the_declared_name() -> None:
    spec = apply_overrides(parse_spec(FILE), {"--baseline": "scan"})
    assert spec.baseline == "scan/warm"


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        ("conditions = []\n", "conditions", "non-empty array"),
        ('[[conditions]]\nprepare = "x"\n', r"conditions\[0\]", "needs a name"),
        ('[[conditions]]\nname = "a/b"\n', r"conditions\[0\]\.name", "cannot hold '/'"),
        ('[[conditions]]\nname = "a"\n[[conditions]]\nname = "a"\n', r"conditions\[1\]\.name",
         "named twice"),
        ('[[conditions]]\nname = "a"\nprepar = "x"\n', r"conditions\[0\]\.prepar", "unknown key"),
        ('[[conditions]]\nname = "a"\nprepare = 3\n', r"conditions\[0\]\.prepare", "shell code"),
    ],
)  # fmt: skip
def test_bad_conditions_name_the_line_and_key(body: str, where: str, message: str) -> None:
    text = 'name = "x"\ncommand = "true"\n' + body
    with pytest.raises(SpecError, match=message) as caught:
        parse_spec(text, "exp.toml")
    assert re.search(rf"exp\.toml:\d+: {where}", str(caught.value)), str(caught.value)
