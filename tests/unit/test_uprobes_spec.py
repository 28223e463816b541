"""The uprobes probe's settings: the experiment file's ``[probes.uprobes]`` table and quick
mode's ``--uprobes BINARY:F,G``, stored and read back; bad values name the file, line and key."""

from __future__ import annotations

import pytest

from cutaway.model import ProbeSpec
from cutaway.probes.calls.settings import call_functions
from cutaway.probes.syscalls.settings import syscall_names
from cutaway.probes.uprobes.settings import UprobeTarget, uprobe_targets
from cutaway.spec import SpecError, parse_spec
from cutaway.spec.overrides import apply_overrides

HEAD = 'name = "p"\ncommand = "true"\n[probes.uprobes]\n'


def test_a_table_of_binaries_and_functions_turns_the_probe_on() -> None:
    spec = parse_spec(
        HEAD + '"/usr/sbin/slapd" = ["do_search", "test_filter"]\n'
        '"/usr/lib/ldap/back_mdb.so" = ["mdb_search"]\n'
    )
    assert uprobe_targets(spec.probes) == (
        UprobeTarget("/usr/sbin/slapd", ("do_search", "test_filter")),
        UprobeTarget("/usr/lib/ldap/back_mdb.so", ("mdb_search",)),
    )
    assert ProbeSpec.from_dict(spec.probes.to_dict()) == spec.probes  # stored and read back


def test_quick_mode_takes_one_binary_per_option() -> None:
    spec = parse_spec('name = "p"\ncommand = "true"\n')
    changed = apply_overrides(spec, {"--uprobes": ["slapd:do_search,test_filter", "/lib/x.so:f"]})
    assert uprobe_targets(changed.probes) == (
        UprobeTarget("slapd", ("do_search", "test_filter")),
        UprobeTarget("/lib/x.so", ("f",)),
    )


def test_one_function_in_two_builds_is_one_phase_in_both() -> None:
    spec = parse_spec(HEAD + '"./v1/server" = ["parse_input"]\n"./v2/server" = ["parse_input"]\n')
    assert [t.binary for t in uprobe_targets(spec.probes)] == ["./v1/server", "./v2/server"]
    quick = parse_spec('name = "p"\ncommand = "true"\n')
    changed = apply_overrides(
        quick, {"--uprobes": ["./v1:parse_input", "./v2:parse_input", "./v1:emit"]}
    )
    assert uprobe_targets(changed.probes) == (
        UprobeTarget("./v1", ("parse_input", "emit")),
        UprobeTarget("./v2", ("parse_input",)),
    )


def test_probe_options_add_to_the_files_probes() -> None:
    spec = parse_spec(HEAD + '"/usr/sbin/slapd" = ["do_search"]\n"/lib/back.so" = ["mdb_search"]\n')
    changed = apply_overrides(
        spec, {"--uprobes": ["/usr/sbin/slapd:do_search,test_filter", "/lib/other.so:g"]}
    )
    assert uprobe_targets(changed.probes) == (
        UprobeTarget("/usr/sbin/slapd", ("do_search", "test_filter")),
        UprobeTarget("/lib/back.so", ("mdb_search",)),
        UprobeTarget("/lib/other.so", ("g",)),
    )
    calls = parse_spec(
        'name = "p"\ncommand = "true"\n[probes]\ncalls = ["getpwnam"]\nsyscalls = ["fsync"]\n'
    )
    added = apply_overrides(calls, {"--calls": "getservbyname", "--syscalls": "openat,fsync"})
    assert call_functions(added.probes) == ("getpwnam", "getservbyname")
    assert syscall_names(added.probes) == ("fsync", "openat")


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        ('"/bin/x" = []\n', 'probes.uprobes."/bin/x"', "non-empty list"),
        ('"/bin/x" = ["f(", "g"]\n', r'probes.uprobes."/bin/x"\[0\]', "not a function name"),
        ('"/bin/x" = "f"\n', 'probes.uprobes."/bin/x"', "a non-empty list"),
    ],
)
def test_bad_tables_name_the_line_and_key(body: str, where: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as caught:
        parse_spec(HEAD + body)
    assert "line 4" in str(caught.value) or "line 5" in str(caught.value)
    assert __import__("re").search(where, str(caught.value))


@pytest.mark.parametrize("value", ["do_search", ":do_search", "slapd:", "slapd:a b"])
def test_bad_options_say_what_is_expected(value: str) -> None:
    spec = parse_spec('name = "p"\ncommand = "true"\n')
    with pytest.raises(SpecError, match="--uprobes"):
        apply_overrides(spec, {"--uprobes": [value]})


def test_the_stored_form_is_the_one_older_stores_have() -> None:
    """The probes keep their settings in their packages now; an experiment stored before reads
    back to the same settings, and each selected probe's settings are stored the same way."""
    stored = {
        "calls": [],
        "calls_thread_cpu": False,
        "syscalls": [],
        "spans": {"otlp_file": "/tmp/traces.jsonl"},
        "uprobes": {"/usr/sbin/slapd": ["do_search", "test_filter"]},
    }
    spec = parse_spec(
        'name = "p"\ncommand = "true"\n[probes]\nspans = { otlp_file = "/tmp/traces.jsonl" }\n'
        '[probes.uprobes]\n"/usr/sbin/slapd" = ["do_search", "test_filter"]\n'
    )
    # The probes it selects are stored as before; those it does not, no longer as empty.
    assert spec.probes.to_dict() == {key: stored[key] for key in ("spans", "uprobes")}
    assert ProbeSpec.from_dict(stored) == spec.probes
    assert ProbeSpec.from_dict(spec.probes.to_dict()) == spec.probes
    assert uprobe_targets(ProbeSpec.from_dict(stored)) == (
        UprobeTarget("/usr/sbin/slapd", ("do_search", "test_filter")),
    )
