"""Fuzzing the command line: any list of arguments either stops at the
parser with exit status 2 and a message, or is translated into a valid Spec, or into an error
that the CLI prints in one line with exit status 2. Nothing is run: the test stops where
`cutaway run` would open the store."""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import pytest
from fuzzing import no_hang
from hypothesis import given
from hypothesis import strategies as st

from cutaway.cli.commands import _exit_status, parse_arguments, spec_from_args
from cutaway.model import Spec

EXPERIMENT = """\
name = "fuzzed"
[[variants]]
name = "a"
command = "true"
[[variants]]
name = "b"
command = "false"
"""
WORDS = [
    "1", "0", "-1", "3", "10", "1.5", "abc", "1%", "0%", "150%", "-2%", "10s", "0s", "1ms",
    "5m", "nan", "inf", "1e400", "", " ", "a", "b", "x,y", "a,,b", ",", "1,2,3", "getpwnam",
    "getpwnam,getservbyname", "nosuch", "fsync,openat", "FSYNC", "sh", "bash", "none",
    "/bin/sh", "pipe", "null", "inherit", "/dev/null", "/nonexistent/file", "{N}",
    "echo {N}", "sleep 0", "true", "x=1", "rps=output:ab:requests_per_second",
    "rps:higher:requests/s=output:ab:requests_per_second", "files=command:ls | wc -l",
    "rss=process:rss:port=8080", "size=file:.", "bad=output:wrk:nosuch", "n=(?P<value>\\d+)",
    "n:higher=(?P<value>[0-9.]+)", "n=(?P<value", "n=nogroup", "=x", ":", "a=b=c",
    "latest", "latest-incomplete", "--", "-", "\x00", "\u202e", "é",
]  # fmt: skip
VALUE = st.sampled_from(WORDS) | st.text(max_size=10)
# option -> how many values it takes
RUN_OPTIONS = {
    "-c": 1, "--cmd": 1, "-n": 1, "--name": 1, "--baseline": 1, "--rounds": 1, "--warmup": 1,
    "--shell": 1, "-S": 1, "-N": 0, "--setup": 1, "--prepare": 1, "--conclude": 1,
    "--cleanup": 1, "--parameter-scan": 3, "-P": 3, "--parameter-step-size": 1, "-D": 1,
    "--parameter-list": 2, "-L": 2, "--input": 1, "--output": 1, "--show-output": 0,
    "--ignore-failure": 0, "-i": 0, "--quiet": 0, "-q": 0, "--timeout": 1,
    "--hook-timeout": 1, "--margin": 1, "--until": 1, "--max-time": 1, "--seed": 1,
    "--calls": 1, "--label": 1, "--syscalls": 1, "--metric": 1, "--metric-regex": 1,
    "--no-probes": 0, "--color": 1, "--style": 1, "--all-metrics": 0, "--all-pairs": 0,
    "--export-json": 1, "--export-csv": 1, "--export-markdown": 1, "--rnuds": 1, "--shel": 0,
}  # fmt: skip


@st.composite
def run_arguments(draw: st.DrawFn, experiment: str) -> list[str]:
    argv = ["run"]
    if draw(st.booleans()):
        argv.append(draw(st.sampled_from([experiment, "missing.toml", "sleep 1", "true"])))
    if draw(st.booleans()):  # quick mode is the common case: give it commands
        for _ in range(draw(st.integers(1, 3))):
            argv += ["-c", draw(st.sampled_from(["true", "sleep 0", "echo {N}", "echo {x}"]))]
    for _ in range(draw(st.integers(0, 6))):
        option = draw(st.sampled_from(sorted(RUN_OPTIONS)))
        values = [draw(VALUE) for _ in range(RUN_OPTIONS[option])]
        if draw(st.integers(0, 9)) == 0 and values:  # --option=value
            argv += [f"{option}={values[0]}", *values[1:]]
        else:
            argv += [option, *values]
    if draw(st.integers(0, 9)) == 0:
        argv.insert(draw(st.integers(1, len(argv))), draw(VALUE))  # a stray word
    return argv


def check_run_arguments(argv: list[str]) -> None:
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), no_hang():
        try:
            args = parse_arguments(argv)
        except SystemExit as stop:
            assert stop.code == 2, (argv, stop.code, stderr.getvalue())
            assert "cutaway run: error:" in stderr.getvalue(), stderr.getvalue()
            return
        if args.resume:
            return  # continues a stored experiment: no spec is made from arguments
        try:
            spec = spec_from_args(args)
        except Exception as error:
            assert _exit_status(error) == 2, (argv, repr(error))
            assert str(error).strip(), repr(error)
            return
    assert isinstance(spec, Spec)
    assert spec.variants and spec.baseline in {variant.name for variant in spec.variants}
    assert spec.rounds >= 1 and spec.warmup_rounds >= 0


@pytest.fixture(scope="module")
def experiment_file() -> str:
    directory = tempfile.mkdtemp(prefix="cutaway-fuzz-")
    path = Path(directory) / "experiment.toml"
    path.write_text(EXPERIMENT)
    return str(path)


def test_run_arguments_give_a_spec_or_exit_2(experiment_file: str) -> None:
    @given(run_arguments(experiment_file))
    def property_holds(argv: list[str]) -> None:
        check_run_arguments(argv)

    property_holds()


OTHER_COMMANDS = {
    "report": ["--format", "--db", "--color", "--style", "--export-json", "--all-metrics"],
    "compare": ["--format", "--db", "--all-pairs", "--export-csv"],
    "list": ["--db"],
    "export": ["--format", "-o", "--output", "--db"],
}


@st.composite
def other_arguments(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(OTHER_COMMANDS)))
    argv = [command]
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()):
            argv.append(draw(st.sampled_from(OTHER_COMMANDS[command])))
        argv.append(draw(VALUE))
    return argv


@given(other_arguments())
def test_the_reading_commands_parse_or_exit_2(argv: list[str]) -> None:
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), no_hang():
        try:
            args = parse_arguments(argv)
        except SystemExit as stop:
            assert stop.code == 2, (argv, stop.code)
            assert f"cutaway {argv[0]}: error:" in stderr.getvalue(), stderr.getvalue()
            return
    assert args.command == argv[0]
