"""Readers for the values of an experiment: each checks one value's type and range and returns
it typed, or raises a :class:`SpecError` saying what was expected and what was found.

Quick mode uses the same readers with a command-line option as the key, so that a bad
``--margin`` and a bad ``margin =`` get the same message.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from typing import TypeVar

from cutaway.model import ESTIMATORS, OUTPUT_MODES
from cutaway.output_files import output_path_problem, own_descriptor
from cutaway.settings_reading import read_bool as read_bool
from cutaway.settings_reading import read_integer as read_integer
from cutaway.spec import limits
from cutaway.spec.errors import KeyPath, SpecError, describe, expected
from cutaway.spec.units import parse_duration, parse_fraction

T = TypeVar("T")
Reader = Callable[[object, KeyPath], T]


def read_string(value: object, key_path: KeyPath) -> str:
    if not isinstance(value, str) or not value.strip():
        raise expected("a non-empty string", value, key_path)
    return value


def read_estimator(value: object, key_path: KeyPath) -> str:
    """How the paired comparisons estimate a change: one of ESTIMATORS."""
    if value not in ESTIMATORS:
        raise expected(" or ".join(f'"{name}"' for name in ESTIMATORS), value, key_path)
    assert isinstance(value, str)
    return value


def read_rounds(value: object, key_path: KeyPath) -> int:
    return read_integer(value, key_path, 1, limits.MAX_ROUNDS)


def read_warmup_rounds(value: object, key_path: KeyPath) -> int:
    return read_integer(value, key_path, 0, limits.MAX_WARMUP_ROUNDS)


def read_seed(value: object, key_path: KeyPath) -> int:
    return read_integer(value, key_path, 0, limits.MAX_SEED)


def fresh_seed() -> int:
    """The seed of an experiment that was given none: drawn anew for each, so that experiments
    do not all run the same orders of variants (an effect tied to the sequence of runs would
    then offset every one of them alike). Stored with the experiment, so its reports and a
    resume use it again. 31 random bits from the system's generator, as secrets.randbelow(2**31)
    draws them (importing secrets, with hmac and OpenSSL, cost each `cutaway run` 7 ms)."""
    return int.from_bytes(os.urandom(4), "big") >> 1


def read_max_variants(value: object, key_path: KeyPath) -> int:
    """The most variants an experiment's matrix may make (``max_variants``)."""
    return read_integer(value, key_path, 1, limits.MAX_VARIANTS)


def read_duration(
    value: object, key_path: KeyPath, *, maximum_seconds: float, zero_allowed: bool = False
) -> float:
    """Seconds from a duration (``"10s"``, ``"250ms"``, a number of seconds), above 0 (or at
    least 0 with ``zero_allowed``) and at most ``maximum_seconds``: every duration key and
    option is read here."""
    try:
        seconds = parse_duration(value)
    except SpecError as error:
        raise SpecError(error.message, key_path=key_path) from None
    if seconds <= 0 and not zero_allowed:
        raise expected("a duration > 0", value, key_path)
    if seconds > maximum_seconds:
        raise expected(f"a duration of at most {_seconds_text(maximum_seconds)}", value, key_path)
    return seconds


def _seconds_text(seconds: float) -> str:
    """``604800 s (168h)``: the seconds, and in hours when that is shorter to read."""
    hours = seconds / 3600
    return f"{seconds:g} s ({hours:g}h)" if hours >= 1 and hours == int(hours) else f"{seconds:g} s"


def duration_reader(maximum_seconds: float) -> Reader[float]:
    """A reader of durations > 0 and at most ``maximum_seconds``."""

    def read(value: object, key_path: KeyPath) -> float:
        return read_duration(value, key_path, maximum_seconds=maximum_seconds)

    return read


# One run (``timeout``), one hook (``hook_timeout``), the whole experiment (``max_time``).
read_run_timeout = duration_reader(limits.MAX_RUN_SECONDS)
read_hook_timeout = duration_reader(limits.MAX_RUN_SECONDS)
read_max_time = duration_reader(limits.MAX_EXPERIMENT_SECONDS)
# Any other duration > 0 with no tighter limit of its own: at most a week, as one run.
read_positive_duration = duration_reader(limits.MAX_RUN_SECONDS)


def read_margin(value: object, key_path: KeyPath) -> float:
    """The equivalence margin: 0 (no tolerance at all) up to, not including, 100 %."""
    fraction = _read_fraction(value, key_path)
    if fraction >= 1:
        raise expected('a percentage >= 0% and < 100% (such as "1%")', value, key_path)
    return fraction


def read_until_width(value: object, key_path: KeyPath) -> float:
    """The adaptive-mode target width of the confidence interval: > 0 and < 100 %."""
    fraction = _read_fraction(value, key_path)
    if not 0 < fraction < 1:
        raise expected('a percentage > 0% and < 100% (such as "1%")', value, key_path)
    return fraction


def read_confidence(value: object, key_path: KeyPath) -> float:
    """The confidence level of every interval and verdict: a number between 0 and 1 (0.99),
    or a percentage (``"99%"``, as ``--confidence`` takes it too)."""
    level = value
    if isinstance(value, str):
        try:
            level = parse_fraction(value.strip())
        except SpecError:
            level = None
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise expected('a number between 0 and 1 or a percentage (such as 0.95 or "99%")',
                       value, key_path)  # fmt: skip
    return float(level)


def read_command(value: object, key_path: KeyPath) -> str | tuple[str, ...]:
    """A command as written: a string, or a non-empty array of strings (an argument vector)."""
    if isinstance(value, str):
        if not value.strip():
            raise expected("a non-empty command", value, key_path)
        return read_text_without_nul(value, key_path)
    if not isinstance(value, list) or not value:
        raise expected("a string or a non-empty array of strings", value, key_path)
    for index, argument in enumerate(value):
        if not isinstance(argument, str):
            raise expected("a string", argument, (*key_path, index))
        read_text_without_nul(argument, (*key_path, index))
    if not value[0]:
        raise expected("a program name", value[0], (*key_path, 0))
    return tuple(value)


def read_env(value: object, key_path: KeyPath) -> dict[str, str]:
    """Environment variables: names to strings (numbers are accepted and written as text)."""
    if not isinstance(value, dict):
        raise expected("a table of variable name -> value", value, key_path)
    env: dict[str, str] = {}
    for name, variable_value in value.items():
        read_env_name(name, (*key_path, name))
        if isinstance(variable_value, bool) or not isinstance(variable_value, str | int | float):
            raise expected("a string or a number", variable_value, (*key_path, name))
        text = str(variable_value)
        if "\0" in text:
            message = "an environment value cannot contain a NUL byte"
            raise SpecError(message, key_path=(*key_path, name))
        env[name] = text
    return env


def read_env_name(name: str, key_path: KeyPath) -> str:
    if not name or "=" in name or "\0" in name:
        message = "an environment variable name must be non-empty, without '=' or NUL"
        raise SpecError(message, key_path=key_path)
    return name


def read_hook(value: object, key_path: KeyPath) -> str | None:
    """Shell code run around runs; an empty hook is the same as no hook."""
    if not isinstance(value, str):
        raise expected("a string of shell code", value, key_path)
    read_text_without_nul(value, key_path)
    return value if value.strip() else None


def read_path(value: object, key_path: KeyPath) -> str:
    """A path (a directory to run in): a non-empty string without NUL."""
    return read_text_without_nul(read_string(value, key_path), key_path)


def read_text_without_nul(text: str, key_path: KeyPath) -> str:
    """Text handed to the operating system (a command, an argument, a path, shell code): a NUL
    byte would end it early or make exec fail mid-experiment, so it is refused here."""
    if "\0" in text:
        raise SpecError("cannot contain a NUL byte (\\0)", key_path=key_path)
    return text


def _read_fraction(value: object, key_path: KeyPath) -> float:
    try:
        return parse_fraction(value)
    except SpecError as error:
        raise SpecError(error.message, key_path=key_path) from None


def read_input(value: object, key_path: KeyPath, cwd: str | None = None) -> str:
    """A file fed to a command's standard input (hyperfine's --input): it must exist now, so
    that a typo stops the experiment before anything runs. A relative path is taken from
    ``cwd`` (the variant's directory, where the command runs), else the current directory;
    the result is absolute."""
    path = read_string(value, key_path)
    full = os.path.abspath(os.path.join(cwd or os.getcwd(), path))
    if os.path.isdir(full):
        raise SpecError(f"{describe(path)} is a directory, not a file to read", key_path=key_path)
    if not os.path.exists(full):
        raise SpecError(f"no such file: {describe(path)}", key_path=key_path)
    if not os.access(full, os.R_OK):
        raise SpecError(f"cannot read {describe(path)} (permission denied)", key_path=key_path)
    problem = _input_stream_problem(full)
    if problem is not None:
        raise SpecError(f"{describe(path)} {problem}", key_path=key_path)
    return full


# cutaway's own standard output and error, as the measured command's input: it would read what
# cutaway writes, or wait for ever on a pipe or a terminal that cutaway itself holds open.
_OWN_OUTPUTS = ((1, "standard output"), (2, "standard error"))


def _input_stream_problem(full: str) -> str | None:
    """Why a run could never read ``full`` to its end, in words, or None: it is cutaway's own
    standard output or error (``/dev/stdout``, ``/proc/self/fd/2``, the file or the terminal
    they are on), or a terminal (each run would wait for what is typed). ``/dev/null`` is
    never one, even where standard output is /dev/null too."""
    descriptor = own_descriptor(full)
    try:
        status = os.fstat(descriptor) if descriptor is not None else os.stat(full)
    except OSError:
        return None  # said by the open before the first run, as any file's problem
    for number, name in _OWN_OUTPUTS:
        if descriptor == number:
            return (
                f"is cutaway's own {name}: a run would read what cutaway writes there, or wait "
                "on it for ever (give a file)"
            )
        if _is_stream(number, status) and not _is_plain_device(status):
            return f"is the file cutaway's own {name} goes to (give another file)"
    if _is_terminal(full, descriptor, status):
        return "is a terminal: each run would wait for what is typed there (give a file)"
    return None


def _is_stream(descriptor: int, status: os.stat_result) -> bool:
    try:
        stream = os.fstat(descriptor)
    except OSError:  # closed
        return False
    return (stream.st_dev, stream.st_ino) == (status.st_dev, status.st_ino)


def _is_plain_device(status: os.stat_result) -> bool:
    """A character device that is no terminal (/dev/null, /dev/zero): reading it never waits
    on cutaway. A terminal is a character device too, told apart by _is_terminal."""
    return stat.S_ISCHR(status.st_mode) and os.major(status.st_rdev) not in _TERMINAL_MAJORS


# Device numbers of terminals (Documentation/admin-guide/devices.txt): 4 virtual consoles and
# serial ports, 5 /dev/tty and /dev/console, 136-143 pseudo-terminals (/dev/pts/N).
_TERMINAL_MAJORS = frozenset({4, 5, *range(136, 144)})


def _is_terminal(full: str, descriptor: int | None, status: os.stat_result) -> bool:
    if not stat.S_ISCHR(status.st_mode):
        return False
    if descriptor is not None:
        return os.isatty(descriptor)
    return os.major(status.st_rdev) in _TERMINAL_MAJORS


def check_input_is_no_output(
    inputs: Sequence[tuple[str, KeyPath]], outputs: Sequence[tuple[str, str]]
) -> None:
    """Raise a SpecError when a variant's input file (path, its key) is the output file of a
    variant (name, path) of the same experiment: each of its runs empties it before the
    command starts, and the command would read what another run left."""
    for input_path, key_path in inputs:
        for variant_name, output_path in outputs:
            if output_path not in OUTPUT_MODES and _same_file(input_path, output_path):
                message = (
                    f"{describe(input_path)} is also the output file of variant "
                    f"{describe(variant_name)}: each of its runs empties it (give another file)"
                )
                raise SpecError(message, key_path=key_path)


def _same_file(first: str, second: str) -> bool:
    """Whether two absolute paths name one file: the same inode when both exist, else the
    same path once symbolic links are resolved (an output file is made by its first run)."""
    try:
        return os.path.samefile(first, second)
    except OSError:
        return os.path.realpath(first) == os.path.realpath(second)


def read_output(value: object, key_path: KeyPath, cwd: str | None = None) -> str:
    """Where a command's standard output goes (hyperfine's --output): one of OUTPUT_MODES
    ("null", "pipe", "inherit"), or a file written there, which must be writable now (its
    directory exists and can be written). Write ``./pipe`` for a file named like a mode. A
    relative path is taken as in :func:`read_input`; the result is absolute."""
    text = read_string(value, key_path)
    if text in OUTPUT_MODES:
        return text
    full = os.path.abspath(os.path.join(cwd or os.getcwd(), text))
    if os.path.isdir(full):
        message = f"{describe(text)} is a directory (expected {_OUTPUT_CHOICES} or a file)"
        raise SpecError(message, key_path=key_path)
    problem = output_path_problem(full)
    if problem is not None:
        message = f"{problem} (the output file {describe(text)})"
        raise SpecError(message, key_path=key_path)
    return full


_OUTPUT_CHOICES = ", ".join(OUTPUT_MODES)
