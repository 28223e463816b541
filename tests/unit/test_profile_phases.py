"""Phases without instrumentation: the profile probe's ``phases`` rules map the frames of each
sampled stack to a named phase (the innermost matching frame wins, file order breaks ties,
"other" takes the rest), checked when the experiment file is loaded."""

from __future__ import annotations

import pytest

from cutaway.model import ProbeSpec, Spec
from cutaway.probes.profile import records
from cutaway.probes.profile.analysis import analyse_profiles, phase_weights
from cutaway.probes.profile.settings import PhaseRule, profile_settings
from cutaway.spec import SpecError, parse_spec

REGEX = PhaseRule("regex", "re_search_internal|regexec")
PARSE = PhaseRule("parse", "^HttpRequest::parse")
STACKS = {
    "squid;main;HttpRequest::parse;regexec;re_search_internal": 3,  # regex inside parse
    "squid;main;HttpRequest::parse;strchr": 5,
    "squid;main;HttpRequest::parseHeader": 7,  # ^HttpRequest::parse matches it too
    "squid;main;comm_select;epoll_wait": 11,
    "squid": 13,  # no frame but the process name
}


def test_the_innermost_matching_frame_wins_and_unmatched_samples_are_other() -> None:
    assert phase_weights(STACKS, [PARSE, REGEX]) == {"parse": 12, "regex": 3, "other": 24}


def test_file_order_decides_between_rules_matching_the_same_frame() -> None:
    stacks = {"p;main;regexec": 2, "p;main;parse": 1}
    first = PhaseRule("first", "regexec")
    broad = PhaseRule("broad", "e")
    assert phase_weights(stacks, [first, broad]) == {"first": 2, "broad": 1, "other": 0}
    assert phase_weights(stacks, [broad, first]) == {"broad": 3, "first": 0, "other": 0}


def test_the_process_name_is_not_a_frame() -> None:
    assert phase_weights({"regexec;main": 4}, [REGEX]) == {"regex": 0, "other": 4}


def test_phases_per_run_and_share_by_variant() -> None:
    def profile(stacks: dict[str, int]) -> records.Profile:
        return records.Profile(records.ON_CPU, records.NANOSECONDS, stacks)

    profiles = [
        ("a", profile({"p;main;regexec": 2_000_000_000, "p;main;x": 2_000_000_000})),
        ("a", profile({"p;main;regexec": 4_000_000_000})),
        ("b", profile({"p;main;x": 1_000_000_000})),
    ]
    phases = analyse_profiles(profiles, ["a", "b"], phases=[REGEX]).phases
    table = {(p.variant, p.phase): (p.unit, p.per_run, p.share) for p in phases}
    assert table == {
        ("a", "regex"): ("seconds", 3.0, 0.75),
        ("a", "other"): ("seconds", 1.0, 0.25),
        ("b", "regex"): ("seconds", 0.0, 0.0),
        ("b", "other"): ("seconds", 1.0, 1.0),
    }
    assert analyse_profiles(profiles, ["a", "b"]).phases == ()


HEAD = 'name = "p"\ncommand = "true"\n[probes.profile]\nphases = [\n'


def test_rules_are_read_in_file_order_and_stored_back() -> None:
    spec = parse_spec(HEAD + '  { name = "regex", frames = "regexec" },\n  { name = "parse", '
                      'frames = "^parse" },\n]\n')  # fmt: skip
    assert profile_settings(spec.probes) is not None
    assert profile_settings(spec.probes).phases == (
        PhaseRule("regex", "regexec"),
        PhaseRule("parse", "^parse"),
    )
    assert ProbeSpec.from_dict(spec.probes.to_dict()) == spec.probes
    assert Spec.from_dict(spec.to_dict()).probes == spec.probes


@pytest.mark.parametrize(
    ("rules", "key", "message"),
    [
        (
            '  { name = "a", frames = "(unclosed" },\n',
            "phases[0].frames",
            "not a regular expression",
        ),
        (
            '  { name = "a", frames = "x" },\n  { name = "a", frames = "y" },\n',
            "phases[1].name",
            "named twice",
        ),
        ('  { name = "other", frames = "x" },\n', "phases[0].name", "unmatched samples"),
        ('  { name = "a" },\n', "phases[0]", "needs 'frames'"),
        ('  { name = "a", frames = "x", weight = 2 },\n', "phases[0].weight", "unknown phase"),
        ('  { name = "", frames = "x" },\n', "phases[0].name", "a non-empty string"),
        ('  "regexec",\n', "phases[0]", "a table"),
    ],
)
def test_bad_rules_name_the_file_line_and_key(rules: str, key: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as caught:
        parse_spec(HEAD + rules + "]\n", "exp.toml")
    text = str(caught.value)
    assert "exp.toml:" in text and f"probes.profile.{key}" in text, text
    assert caught.value.line == 4, text  # the line of `phases = [`
