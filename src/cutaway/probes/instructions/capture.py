"""The ``instructions`` probe: every instrumented run under valgrind's callgrind, in runs of
its own (callgrind slows a program tens of times, so these runs are never timed).

Each instrumented run is started as ``valgrind --tool=callgrind ... -- COMMAND``, following
children (``--trace-children=yes``: a shell command's programs are counted too), one output
file per process. After the run, every process's file becomes folded stacks weighted in
instructions (callgrind.py), rooted at the process name, stored as one profile (kind
``profile``, key ``instructions``); the sum of the processes' counts is the run's metric
``instructions``, compared like ``wall``.

Why callgrind and not cachegrind (measured here, docs/performance.md): both count the same
instructions and both are deterministic (the same count run after run for the same program,
arguments and environment), but only callgrind records who called whom, which inclusive
costs and stacks need; cachegrind (``--cache-sim=no``) costs about a quarter as much.

Instruction counts are not time: a cache miss, a branch mispredicted, a system call or a wait
costs no more instructions than a hit. They are a deterministic proxy that can gate CI on a
noisy machine; the timed runs stay the measure of time."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from cutaway.model import RunData
from cutaway.probes.base import (
    Attachment,
    Launch,
    Overhead,
    ProbeError,
    process_cost,
    stop_child,
)
from cutaway.probes.instructions.callgrind import CallgrindFormatError, parse_callgrind
from cutaway.probes.stacks import INSTRUCTIONS, KIND, Profile, encode, has_symbol_table
from cutaway.processes import owned_directory

VALGRIND_PACKAGE = "valgrind"
METRIC = "instructions"
# Callers kept in each context (callgrind's --separate-callers): deeper stacks lose their
# outermost frames (rooted at callgrind.TRUNCATED). Its cost grows little with depth.
MAX_CALLERS = 64
# A CPU-bound loop in the shell every Debian system has, to measure callgrind's slowdown.
SPIN_ITERATIONS = 10_000
SPIN_SCRIPT = f"i=0; while [ $i -lt {SPIN_ITERATIONS} ]; do i=$((i+1)); done"
_OUTPUT = re.compile(r"callgrind\.out\.\d+$")


def valgrind_path() -> str | None:
    return shutil.which("valgrind")


def _cpu_seconds(argv: list[str]) -> float:
    """User + system CPU time of one run of ``argv`` and its children, output discarded."""
    quiet = [
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    pid = os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=quiet)
    try:
        _, status, usage = os.wait4(pid, 0)
    except BaseException:  # an interrupt: valgrind goes too, not left running on its own
        stop_child(pid)
        raise
    if os.waitstatus_to_exitcode(status) != 0:
        raise ProbeError(f"{' '.join(argv[:3])} ... failed (status {status})")
    return usage.ru_utime + usage.ru_stime


class InstructionsProbe:
    """Counts the instructions of every instrumented run with callgrind (see the module)."""

    name = "instructions"
    own_runs = True

    def __init__(self) -> None:
        self.valgrind = valgrind_path()
        self.directory = owned_directory("cutaway-instructions-")
        self.slowdown: float | None = None
        self.seconds_per_instruction: float | None = None
        self.last_count: int | None = None

    def _prefix(self, output: str) -> list[str]:
        assert self.valgrind is not None
        return [
            self.valgrind,
            "--tool=callgrind",
            "--trace-children=yes",
            f"--separate-callers={MAX_CALLERS}",
            "--separate-recs=1",
            f"--callgrind-out-file={output}",
            "-q",  # valgrind's own messages only when it fails (in the run's stderr)
            # No gdbserver: its FIFOs (/tmp/vgdb-pipe-*) stay behind when a run is killed.
            "--vgdb=no",
            "--",
        ]

    # -- check ---------------------------------------------------------------------------------

    def check(self) -> str:
        if self.valgrind is None:
            raise ProbeError(
                "the instructions probe needs valgrind, which is not on PATH "
                f"(Debian: apt-get install {VALGRIND_PACKAGE})"
            )
        shell = shutil.which("sh") or "/bin/sh"
        output = str(self.directory / "check.out")
        spin = [shell, "-c", SPIN_SCRIPT]
        try:
            empty = _cpu_seconds([*self._prefix(output), shell, "-c", ":"])
            counted = _cpu_seconds([*self._prefix(output), *spin])
            count = parse_callgrind(Path(output).read_text(errors="replace"), MAX_CALLERS).total
            plain = min(_cpu_seconds(spin) for _ in range(3))
        except (OSError, CallgrindFormatError) as error:
            raise ProbeError(f"valgrind --tool=callgrind cannot run here: {error}") from None
        finally:
            Path(output).unlink(missing_ok=True)
        added = max(0.0, counted - empty - plain)
        self.slowdown = (counted - empty) / plain if plain > 0 else None
        self.seconds_per_instruction = added / count if count else None
        return self.describe()

    def describe(self) -> str:
        slowdown = (
            "" if self.slowdown is None else f"; {self.slowdown:.0f}x slower on CPU-bound code"
        )
        return (
            f"valgrind callgrind, instructions executed, whole process and per function (self "
            f"and inclusive, stacks of up to {MAX_CALLERS} callers), children followed{slowdown}"
            "; in runs separate from the timed runs; instruction counts are not time"
        )

    # -- overhead ------------------------------------------------------------------------------

    def overhead(self) -> Overhead:
        """Per instruction: the CPU time callgrind adds to each instruction of a CPU-bound
        shell loop (measured by check). Per process: valgrind around ``true`` against ``true``
        alone, in alternating pairs (loading the tool, writing its file)."""
        assert self.valgrind is not None
        true = shutil.which("true") or "/bin/true"
        output = str(self.directory / "cost.out")
        environment = dict(os.environ)
        try:
            per_process = process_cost(
                Launch([*self._prefix(output), true], environment),
                Launch([true], environment),
                pairs=3,
            )
        finally:
            Path(output).unlink(missing_ok=True)
        return Overhead(self.seconds_per_instruction, per_process)

    def check_program(self, program: str) -> str | None:
        if has_symbol_table(program) is False:
            return (
                f"{program} has no symbol table (stripped): callgrind counts its instructions "
                "but names few of its functions; a build with symbols names them"
            )
        return None

    # -- runs ----------------------------------------------------------------------------------

    def _outputs(self) -> list[Path]:
        return sorted(p for p in self.directory.iterdir() if _OUTPUT.search(p.name))

    def _clear(self) -> None:
        for path in self.directory.iterdir():
            if path.is_file():
                path.unlink(missing_ok=True)

    def before_run(self, environment: Mapping[str, str]) -> Attachment:
        self._clear()
        self.last_count = None
        return Attachment(argv_prefix=tuple(self._prefix(str(self.directory / "callgrind.out.%p"))))

    def after_run(self) -> list[RunData]:
        stacks: dict[str, int] = {}
        total = processes = 0
        for path in self._outputs():
            try:
                counted = parse_callgrind(path.read_text(errors="replace"), MAX_CALLERS)
            except CallgrindFormatError:
                continue  # a process killed before callgrind wrote its header
            processes += 1
            total += counted.total
            command = counted.command.split()
            root = Path(command[0]).name.replace(" ", "_").replace(";", "_") if command else "?"
            for stack, weight in counted.stacks.items():
                key = f"{root};{stack}"
                stacks[key] = stacks.get(key, 0) + weight
        self._clear()
        if not processes:
            return []
        self.last_count = total
        profile = Profile(INSTRUCTIONS, INSTRUCTIONS, stacks, processes, backend=self.describe())
        return [RunData(KIND, INSTRUCTIONS, processes, encode(profile))]

    def run_metrics(self) -> Mapping[str, float]:
        """The run's whole-process instruction count (every process it started), after
        after_run; none when callgrind wrote nothing (the run failed to start)."""
        return {} if self.last_count is None else {METRIC: float(self.last_count)}

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
