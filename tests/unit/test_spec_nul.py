"""A NUL byte in anything handed to the operating system is refused at load time, with
file:line:key, instead of crashing a run."""

from __future__ import annotations

import pytest

from cutaway.spec import SpecError, parse_spec

VARIANT = '[[variants]]\nname = "v"\ncommand = "true"\n'
CASES = {
    "command string": ('command = "echo a\\u0000b"', "2: command:"),
    "argument": ('command = ["echo", "a\\u0000b"]', "2: command[1]:"),
    "cwd": (VARIANT + 'cwd = "/tmp\\u0000x"', "5: variants[0].cwd:"),
    "hook": (VARIANT + 'setup = "true\\u0000"', "5: variants[0].setup:"),
    # Found by a hostile re-run: each was accepted, and failed in the first run as a traceback.
    "metric command": (
        VARIANT + '[[metrics]]\nname = "m"\nsource = "command"\ncommand = "echo 1\\u0000"',
        "8: metrics[0].command:",
    ),
    "metric file": (
        VARIANT + '[[metrics]]\nname = "m"\nsource = "file"\npath = "/tmp\\u0000x"',
        "8: metrics[0].path:",
    ),
    "metric pid file": (
        VARIANT + '[[metrics]]\nname = "m"\nsource = "process"\nstat = "rss"\n'
        'pid_file = "/run/x\\u0000.pid"',
        "9: metrics[0].pid_file:",
    ),
    "OTLP file": (
        VARIANT + '[probes]\nspans = { otlp_file = "/tmp/t\\u0000.jsonl" }',
        "6: probes.spans.otlp_file:",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_nul_byte_is_refused_with_file_line_and_key(case: str) -> None:
    body, where = CASES[case]
    with pytest.raises(SpecError) as raised:
        parse_spec(f'name = "x"\n{body}\n', "e.toml")
    assert str(raised.value).startswith(f"e.toml:{where} cannot contain a NUL byte")
