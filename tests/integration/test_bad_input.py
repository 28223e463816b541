"""Input out of range or malformed is refused when the experiment is read, through the real CLI:
exit 2, a message naming the file, line and key (or the option), no traceback, no secret
echoed, and no new experiment in the store. Each case here once failed later: an OverflowError
after the experiment was stored, strace refusing a name at the first run, a password printed
twice and stored in the experiment's name."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cutaway.syscall_names import SYSCALL_NAMES
from tests.cutaway_command import cutaway as run_cutaway

DB = "store.db"
BIG = "99999999999999999999999999999"
SECRET = "s3cr3t-Pa55"


def cutaway(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # errors="replace": some inputs here are not UTF-8, and cutaway's messages quote them
    return run_cutaway(*args, "--db", DB, cwd=cwd, errors="replace")


def experiments(directory: Path) -> int:
    with sqlite3.connect(directory / DB) as connection:
        (count,) = connection.execute("SELECT COUNT(*) FROM experiments").fetchone()
    return int(count)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one experiment, so that "nothing stored" is a count that stays 1."""
    directory = tmp_path_factory.mktemp("bad-input")
    made = cutaway("run", "-c", "true", "--rounds", "2", "--warmup", "0", "-q", cwd=directory)
    assert made.returncode == 0, made.stderr
    return directory


@pytest.fixture
def directory(store: Path) -> Iterator[Path]:
    before = experiments(store)
    yield store
    assert experiments(store) == before, "a refused experiment was stored"


def refused(result: subprocess.CompletedProcess[str], *expected: str) -> str:
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output, output
    for text in expected:
        assert text in result.stderr, result.stderr
    return output


def run_file(directory: Path, text: str) -> subprocess.CompletedProcess[str]:
    (directory / "experiment.toml").write_text(text)
    return cutaway("run", "experiment.toml", cwd=directory)


COMMAND_FILE = 'version = 1\nname = "big"\ncommand = ["true"]\nrounds = 1\n'
LOAD_FILE = (
    'version = 1\nname = "load"\n[[variants]]\nname = "a"\n[load]\ntarget = "http://127.0.0.1:9/"\n'
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"warmup_rounds = {BIG}", "experiment.toml:4: warmup_rounds: expected an integer <= "),
        (f"seed = {BIG}", "experiment.toml:4: seed: expected an integer <= "),
        ("timeout = 1e300", "experiment.toml:4: timeout: expected a duration of at most "),
        ("hook_timeout = 1e300", "experiment.toml:4: hook_timeout: expected a duration of at"),
        ("max_time = 1e300", "experiment.toml:4: max_time: expected a duration of at most "),
        (f"rounds = {'9' * 5000}", "experiment.toml: invalid TOML: an integer with thousands"),
    ],
)
def test_a_number_out_of_range_in_the_file_is_refused(
    directory: Path, line: str, expected: str
) -> None:
    refused(run_file(directory, COMMAND_FILE.replace("rounds = 1\n", line + "\n")), expected)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("duration = 1e300", "experiment.toml:7: load.duration: expected a duration of at most"),
        ("timeout = 1e300", "experiment.toml:7: load.timeout: expected a duration of at most"),
        ("warmup = 1e300", "experiment.toml:7: load.warmup: expected a duration of at most"),
        ("ready_timeout = 1e300", "experiment.toml:7: load.ready_timeout: expected a duration"),
        ("rate = 1e300", "experiment.toml:7: load.rate: expected a rate of at most"),
        ("connections = 9223372036854775807", "load.connections: expected an integer <= 100000"),
        ("threads = 100000", "experiment.toml:7: load.threads: expected an integer <= 256"),
        ('pid_file = "/tmp/a\\u0000b"', "experiment.toml:7: load.pid_file: cannot contain a NUL"),
    ],
)
def test_a_bad_load_setting_is_refused(directory: Path, line: str, expected: str) -> None:
    refused(run_file(directory, LOAD_FILE + line + "\n"), expected)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://[::1", "closing bracket"),
        ("http://h:1:1/", "more than one ':'"),
        ("http://127.0.0.1:8080/a b", "spaces or control characters"),
        ("http://127.0.0.1:8080/\r\nHost: evil", "spaces or control characters"),
        ("http://127.0.0.1:8080/\x1b[2J", "spaces or control characters"),
        ("http://127.0.0.1:8080/#top", "a fragment (#...) is never sent"),
        ("http://127.0.0.1:65536/", "not a TCP port"),
        ("https://127.0.0.1:8080/", "https:// is not supported"),
    ],
)
def test_a_malformed_url_is_refused_before_anything_runs(
    directory: Path, url: str, expected: str
) -> None:
    output = refused(cutaway("run", "--url", url, cwd=directory), "--url: ", expected)
    assert "\x1b" not in output and "\r" not in output


@pytest.mark.parametrize(
    "url", [f"http://user:{SECRET}@127.0.0.1:8080/", f"user:{SECRET}@127.0.0.1:8080"]
)
def test_a_url_with_a_password_is_refused_without_showing_it(directory: Path, url: str) -> None:
    output = refused(cutaway("run", "--url", url, cwd=directory), "user name or password")
    assert SECRET not in output


def test_a_file_target_with_a_password_is_refused_without_showing_it(directory: Path) -> None:
    text = LOAD_FILE.replace("127.0.0.1:9/", f"u:{SECRET}@127.0.0.1:9/")
    output = refused(run_file(directory, text), "experiment.toml:6: load.target: a target cannot")
    assert SECRET not in output


def test_an_unknown_system_call_is_refused_with_the_nearest_names(directory: Path) -> None:
    result = cutaway("run", "-c", "true", "--syscalls", "fsyn", cwd=directory)
    refused(result, '--syscalls: "fsyn" is not a Linux system call', "did you mean fsync")
    in_file = COMMAND_FILE + '[probes]\nsyscalls = ["openat", "notasyscall"]\n'
    refused(run_file(directory, in_file), "experiment.toml:6: probes.syscalls[1]: ")


@pytest.mark.parametrize(
    "args",
    [
        ("run", "-c", "true", "--rounds", BIG),
        ("run", "-c", "true", "--warmup", BIG),
        ("run", "-c", "true", "--seed", BIG),
        ("run", "-c", "true", "--timeout", "9999999999h"),
        ("run", "--url", "http://127.0.0.1:9/", "--connections", "9223372036854775807"),
        ("run", "--url", "http://127.0.0.1:9/", "--request-timeout", "9999999999h"),
        ("run", "--url", "http://127.0.0.1:9/", "--load-warmup", "9999999999h"),
        ("check", "-c", "true", "-c", "true", "--max-rounds", BIG),
        ("run", "-c", "echo {n}", "--parameter-scan", "n", "1", "3", "--max-variants", BIG),
    ],
)
def test_a_numeric_option_out_of_range_is_refused(directory: Path, args: tuple[str, ...]) -> None:
    refused(cutaway(*args, cwd=directory), f"{args[-2]}: expected ")


@pytest.mark.parametrize("command", ["report", "export"])
def test_an_experiment_id_past_64_bits_is_looked_up_as_a_name(
    directory: Path, command: str
) -> None:
    result = cutaway(command, "9" * 30, cwd=directory)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"no experiment '{'9' * 30}'" in result.stderr


def test_a_very_long_name_is_cut_in_the_message(directory: Path) -> None:
    name = "n" * 100_000
    result = cutaway("run", "-c", "true", "--baseline", name, cwd=directory)
    refused(result, "--baseline: ", "more characters")
    assert len(result.stderr) < 2_000


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_every_known_system_call_name_is_one_strace_takes() -> None:
    """The names checked at parse time are strace's: none is refused at the first run."""
    names = ",".join(sorted(SYSCALL_NAMES))
    traced = [shutil.which("strace") or "strace", "-qq", "-e", f"trace={names}", "-o", os.devnull]
    result = subprocess.run([*traced, "true"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--rounds", "9" * 5000), "argument --rounds: "),
        (("--profile-frequency", "9" * 5000 + "Hz"), "--profile-frequency: "),
    ],
)
def test_an_integer_of_thousands_of_digits_is_refused_in_a_short_message(
    directory: Path, args: tuple[str, ...], expected: str
) -> None:
    result = cutaway("run", "-c", "true", *args, cwd=directory)
    refused(result, expected, "more characters")
    assert len(result.stderr.splitlines()[-1]) < 500  # after argparse's usage lines


def test_a_very_long_variant_name_is_cut_in_every_progress_line(tmp_path: Path) -> None:
    name = "v" * 100_000
    result = cutaway(
        "run", "-c", "true", "-n", name, "--rounds", "2", "--warmup", "0", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-2_000:]
    assert max(len(line) for line in result.stderr.splitlines()) < 1_000
    assert "more characters" in result.stderr
