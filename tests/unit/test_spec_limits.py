"""The largest value of every number of an experiment (spec/limits.py): the limit itself is
accepted, one past it is refused with the file, line and key; the documented table says the
same; and text quoted in messages is decoded and cut (cutaway.visible.display)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cutaway.probes.load import experiment_file as load_limits
from cutaway.probes.syscalls.settings import read_syscall_names
from cutaway.spec import SpecError, limits, parse_spec
from cutaway.spec.errors import describe
from cutaway.spec.overrides import apply_overrides
from cutaway.visible import display

ROOT = Path(__file__).resolve().parents[2]
HEAD = 'version = 1\nname = "x"\ncommand = ["true"]\n'
LOAD_HEAD = 'version = 1\nname = "x"\n[[variants]]\nname = "a"\n[load]\ntarget = "127.0.0.1:9"\n'

# key, its largest value as TOML, one past it, the head it goes under
CASES = [
    ("rounds", str(limits.MAX_ROUNDS), str(limits.MAX_ROUNDS + 1), HEAD),
    ("warmup_rounds", str(limits.MAX_WARMUP_ROUNDS), str(limits.MAX_WARMUP_ROUNDS + 1), HEAD),
    ("seed", str(limits.MAX_SEED), str(limits.MAX_SEED + 1), HEAD),
    ("max_variants", str(limits.MAX_VARIANTS), str(limits.MAX_VARIANTS + 1), HEAD),
    ("timeout", '"168h"', "604800.5", HEAD),
    ("hook_timeout", "604800", '"169h"', HEAD),
    ("max_time", '"8760h"', '"8761h"', HEAD),
    ("connections", "100000", "100001", LOAD_HEAD),
    ("threads", "256", "257", LOAD_HEAD),
    ("requests", str(10**12), str(10**12 + 1), LOAD_HEAD),
    ("rate", "10000000", "10000000.5", LOAD_HEAD),
    ("duration", '"24h"', '"1441m"', LOAD_HEAD),
    ("warmup", '"24h"', "86401", LOAD_HEAD),
    ("timeout", '"1h"', "3601", LOAD_HEAD),
    ("ready_timeout", "86400", "1e300", LOAD_HEAD),
]


@pytest.mark.parametrize(("key", "largest", "past", "head"), CASES)
def test_the_largest_value_is_taken_and_one_past_it_refused_with_its_line(
    key: str, largest: str, past: str, head: str
) -> None:
    parse_spec(f"{head}{key} = {largest}\n", "exp.toml")
    with pytest.raises(SpecError) as caught:
        parse_spec(f"{head}{key} = {past}\n", "exp.toml")
    line = head.count("\n") + 1
    prefix = "load." if head is LOAD_HEAD else ""
    assert str(caught.value).startswith(f"exp.toml:{line}: {prefix}{key}: expected ")


def test_a_metric_interval_past_an_hour_is_refused() -> None:
    metric = '[[metrics]]\nname = "m"\nsource = "file"\npath = "."\ninterval = "61m"\n'
    with pytest.raises(SpecError, match=r"^exp.toml:8: metrics\[0\].interval: expected a dur"):
        parse_spec(HEAD + metric, "exp.toml")


@pytest.mark.parametrize(
    ("option", "value"),
    [("--rounds", 10**30), ("--warmup", 10**30), ("--seed", 2**63), ("--timeout", "169h")],
)
def test_an_override_past_its_limit_names_the_option(option: str, value: object) -> None:
    spec = parse_spec(HEAD)
    with pytest.raises(SpecError) as caught:
        apply_overrides(spec, {option: value})
    assert caught.value.key == option


def test_the_documented_limits_are_the_ones_enforced() -> None:
    text = (ROOT / "docs" / "experiment-file.md").read_text()
    table = text.split("### Limits", 1)[1].split("\n\n", 2)[1]
    documented: dict[str, float] = {}
    for row in table.splitlines()[2:]:
        keys, most = row.split("|")[1:3]
        for key in re.findall(r"`([^`]+)`", keys):
            number = most.split()[0]
            documented[key] = int(number) if number.isdigit() else float(number)
    assert documented["rounds"] == limits.MAX_ROUNDS
    assert documented["warmup_rounds"] == limits.MAX_WARMUP_ROUNDS
    assert documented["seed"] == limits.MAX_SEED
    assert documented["max_variants"] == limits.MAX_VARIANTS
    assert documented["timeout"] == documented["hook_timeout"] == limits.MAX_RUN_SECONDS
    assert documented["max_time"] == limits.MAX_EXPERIMENT_SECONDS
    assert documented["[[metrics]] interval"] == limits.MAX_SAMPLE_INTERVAL_SECONDS
    assert documented["[load] connections"] == load_limits.MAX_LOAD_CONNECTIONS
    assert documented["[load] threads"] == load_limits.MAX_LOAD_THREADS
    assert documented["[load] requests"] == load_limits.MAX_LOAD_REQUESTS
    assert documented["[load] rate"] == load_limits.MAX_LOAD_RATE
    assert documented["[load] duration"] == load_limits.MAX_LOAD_PHASE_SECONDS
    assert documented["[load] timeout"] == load_limits.MAX_REQUEST_TIMEOUT_SECONDS
    assert documented["[load] ready_timeout"] == load_limits.MAX_READY_SECONDS


def test_the_generator_limits_are_the_generator_s_own() -> None:
    """native/cw_load.c refuses past these: the spec must refuse first, before storing."""
    source = (ROOT / "native" / "cw_load.c").read_text()
    assert f"s->connections > {load_limits.MAX_LOAD_CONNECTIONS})" in source
    assert f"s->threads > {load_limits.MAX_LOAD_THREADS})" in source
    assert f"s->duration > {load_limits.MAX_LOAD_PHASE_SECONDS:g}" in source
    assert f"s->timeout > {load_limits.MAX_REQUEST_TIMEOUT_SECONDS:g}" in source


def test_an_unknown_system_call_is_refused_with_the_nearest_known_names() -> None:
    with pytest.raises(SpecError) as caught:
        read_syscall_names(["openat", "opnat"], ("probes", "syscalls"))
    assert caught.value.key == "probes.syscalls[1]"
    assert caught.value.message == (
        '"opnat" is not a Linux system call strace knows (did you mean openat, openat2, open?)'
    )
    assert read_syscall_names("fsync, openat", ("--syscalls",)) == ("fsync", "openat")


def test_display_decodes_with_replacement_and_cuts() -> None:
    assert display(b"a\xffb") == "a\ufffdb"
    assert display("a\udcffb") == "a\ufffdb"  # an argv byte that is not UTF-8
    assert display("a\ud800b") != "a\ud800b"  # a lone surrogate cannot be printed
    assert display("n" * 250) == "n" * 200 + "... (50 more characters)"
    assert display("short") == "short"


def test_describe_cuts_long_text_and_huge_integers() -> None:
    assert describe("x" * 1000) == '"' + "x" * 200 + '"... (800 more characters)'
    assert describe(10**5000) == "an integer of about 5001 digits"
    assert describe(-(10**50)) == "-an integer of about 51 digits"
    assert describe(12345) == "12345"
