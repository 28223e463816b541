"""One reader per ``source`` of a :class:`~cutaway.model.MetricSpec`, for one variant.

Every failure to read a value raises :class:`MetricFailure` with a message that does not name
the metric (the collector prefixes it): a run whose metric cannot be read fails, it never gets
a zero."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from cutaway.metrics.parsers import PARSERS, ParseError, compile_pattern, read_pattern
from cutaway.metrics.process import ProcessGone, ProcessNotFound, find_process, read_stat
from cutaway.metrics.sampler import Reading, Series
from cutaway.model import MetricSpec, Variant
from cutaway.runner.captured import Captured
from cutaway.runner.executor import SHELL
from cutaway.runner.hooks import STOPPED, TIMED_OUT, run_in_group
from cutaway.variant_environment import run_environment, substitute, variant_path

COMMAND_TIMEOUT_SECONDS = 60.0
OUTPUT_TAIL_CHARS = 200
# A metric command prints one number: more than this is a failure, and not kept in memory.
MAX_COMMAND_OUTPUT_MIB = 1
MAX_COMMAND_OUTPUT_BYTES = MAX_COMMAND_OUTPUT_MIB * 1024 * 1024
COMMAND_TAIL_BYTES = 4 * 1024  # what a failure's message quotes the end of (OUTPUT_TAIL_CHARS)


class MetricFailure(Exception):
    """A value could not be read."""


class MetricStopped(Exception):
    """A metric's command was stopped by cutaway's own interrupt: no failure of the run, which
    ends as interrupted."""


def _tail(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= OUTPUT_TAIL_CHARS else "..." + text[-OUTPUT_TAIL_CHARS:]


# -- output --------------------------------------------------------------------------------------


def read_output(spec: MetricSpec, output: Mapping[str, str]) -> float:
    if spec.stream not in output:
        raise MetricFailure(f"the run's {spec.stream} was not captured")
    text = output[spec.stream]
    try:
        if spec.pattern is not None:
            return read_pattern(compile_pattern(spec.pattern), text)
        assert spec.parser is not None and spec.field is not None
        return PARSERS[spec.parser].read(spec.field, text)
    except ParseError as error:
        tail = f"; it ended: {_tail(text)}" if text.strip() else f"; the {spec.stream} was empty"
        raise MetricFailure(f"{error}{tail}") from None


# -- command -------------------------------------------------------------------------------------


def read_command(spec: MetricSpec, variant: Variant) -> float:
    """Run the metric's shell code (with the variant's environment, in its cwd) and read the
    number it prints."""
    assert spec.command is not None
    code = substitute(spec.command, variant, variables=False)
    # In a process group of its own, stopped whole at its time limit or an interrupt. Only a
    # bounded part of what it prints is kept: a number is short.
    output = Captured(head_bytes=MAX_COMMAND_OUTPUT_BYTES, tail_bytes=COMMAND_TAIL_BYTES)
    errors = Captured(tail_bytes=COMMAND_TAIL_BYTES)
    try:
        exit_code = run_in_group(
            [SHELL, "-c", code],
            output,
            errors=errors,
            env=run_environment(variant),
            cwd=variant.cwd,
            timeout_seconds=COMMAND_TIMEOUT_SECONDS,
        )
    except OSError as error:
        raise MetricFailure(f"cannot run `{code}`: {error}") from None
    printed = (output.tail_text() if output.truncated else output.head_text()).strip()
    complaint = errors.tail_text()
    if exit_code == STOPPED:
        raise MetricStopped(f"`{code}` was stopped by an interrupt")
    if exit_code == TIMED_OUT:
        raise MetricFailure(f"`{code}` ran longer than {COMMAND_TIMEOUT_SECONDS:g} s")
    if exit_code != 0:
        detail = _tail(complaint or printed)
        raise MetricFailure(f"`{code}` exited with status {exit_code}: {detail}")
    if output.truncated:
        raise MetricFailure(
            f"`{code}` printed more than {MAX_COMMAND_OUTPUT_MIB:g} MiB "
            f"({output.total_bytes} bytes), not one number; it ended: {_tail(printed)}"
        )
    shown = repr(_tail(printed)) if printed else "nothing"
    try:
        value = float(printed)
    except ValueError:
        raise MetricFailure(f"`{code}` printed {shown}, not a number") from None
    if not math.isfinite(value):  # "nan" and "inf" parse, but are no figure to compare
        raise MetricFailure(f"`{code}` printed {shown}, not a finite number")
    return value


# -- file ----------------------------------------------------------------------------------------


def size_of(path: str) -> float | None:
    """Bytes of a file, or of every file under a directory (apparent sizes, as ``du -b``; hard
    links once; symbolic links not followed); None when the path does not exist."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not os.path.isdir(path):
        return float(info.st_size)
    seen: set[tuple[int, int]] = set()
    total = 0
    for directory, _, names in os.walk(path):
        for name in names:
            try:
                entry = os.lstat(os.path.join(directory, name))
            except FileNotFoundError:
                continue  # removed while we walk
            if (entry.st_dev, entry.st_ino) not in seen:
                seen.add((entry.st_dev, entry.st_ino))
                total += entry.st_size
    return float(total)


def read_file(spec: MetricSpec, variant: Variant) -> float:
    assert spec.path is not None
    path = variant_path(spec.path, variant)
    size = size_of(path)
    if size is None:
        raise MetricFailure(f"{path} does not exist")
    return size


def file_reading(spec: MetricSpec, variant: Variant) -> Reading:
    assert spec.path is not None
    path = variant_path(spec.path, variant)
    return lambda: size_of(path)


# -- process -------------------------------------------------------------------------------------


def locate_process(spec: MetricSpec, variant: Variant) -> int:
    """The pid the metric watches now; ProcessNotFound saying what was looked for."""
    pid_file = variant_path(spec.pid_file, variant) if spec.pid_file is not None else None
    name = substitute(spec.process_name, variant, variables=True) if spec.process_name else None
    return find_process(pid_file=pid_file, name=name, port=spec.port)


def process_reading(spec: MetricSpec, pid: int) -> Reading:
    assert spec.stat is not None
    stat = spec.stat
    return lambda: read_stat(pid, stat)


def process_value(spec: MetricSpec, series: Series) -> float:
    """A process metric's value from its samples: the CPU seconds used between the first and
    the last (taken just before and just after the run), or the peak of the others."""
    if series.error is not None:
        raise MetricFailure(f"{series.error} during the run")
    if not series.values:
        raise MetricFailure("no sample of the process was taken")
    if spec.stat == "cpu":
        return series.values[-1] - series.values[0]
    return max(series.values)


__all__ = [
    "MetricFailure",
    "ProcessGone",
    "ProcessNotFound",
    "file_reading",
    "locate_process",
    "process_reading",
    "process_value",
    "read_command",
    "read_file",
    "read_output",
    "size_of",
    "substitute",
]
