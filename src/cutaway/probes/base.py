"""The one small interface every probe implements.

A probe watches measured runs (never hooks) and keeps what it saw with the run. Its lifecycle,
as in pyperf's hooks: ``check`` before anything runs (fail early, say which backend will be
used), ``overhead`` (what the probe itself costs per recorded event and per process it enters,
measured here and now: a tool that measures must measure itself), then around every measured
run ``before_run`` (what to add to the run's environment or put in front of its command) and
``after_run`` (collect what the run left, return it as RunData for the store, clean up), and
``close`` at the end, also after a failure.

A probe that perturbs timing too much to share a run (a sampling profiler, valgrind) declares
``own_runs = True``: the runner then never attaches it to a timed run, and gives it instead,
in every counted round, one untimed run of each variant of its own, in the round's order, after
the round's timed runs (stored with ``Run.purpose`` set to the probe's name).

A probe may instead own what a measured run runs (the load phase: the load generator against
each variant's server): its :class:`MeasuredPhase` is asked, before the first round, to wait
until each variant is ready, and names the program the executor runs for a variant; around
every measured run its :class:`PhaseRun` (``start_run``) widens the run's attachment and time
limit, completes the measurement (``finish``) and is stopped (``stop``), also after a
failure."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from cutaway.model import RunData, RunStatus, Variant
from cutaway.value_class import value_class

PROCESS_COST_PAIRS = 100


class ProbeError(Exception):
    """A probe cannot work here (a missing library or tool)."""


@value_class
class Attachment:
    """How a probe attaches to one run: variables added to its environment, and a command put
    in front of it (a tracer)."""

    env: Mapping[str, str] = field(default_factory=dict)
    argv_prefix: tuple[str, ...] = ()
    # Standard streams ("stdout", "stderr") whose whole text the run's Measurement must carry
    # (Measurement.output), for the metrics read from a run's output (cutaway.metrics).
    capture: frozenset[str] = frozenset()
    # On an interruption, the run gets SIGINT and this long to end on its own (the load
    # generator writes the summary of what it measured) before it is killed, and its
    # measurement is kept (runner.executor.RunInterrupted); None: killed at once, nothing kept.
    interrupt_grace_seconds: float | None = None


# A dataclass, not @value_class: one is made for every run, and value_class's __init__ (through
# its Python __setattr__) costs ~1.3 us more an instance, more than the ~0.5 ms its creation saves
# over a long experiment.
@dataclass(frozen=True)
class Measurement:
    """What an executor observed of one run; the runner adds where it stands in the experiment.
    Here, with the probe interface, because a probe's capture may complete it (the load phase
    adds its metrics to the generator's run)."""

    status: RunStatus
    exit_code: int | None
    signal: int | None
    metrics: Mapping[str, float] = field(default_factory=dict)
    message: str = ""
    output: Mapping[str, str] = field(default_factory=dict)  # Attachment.capture's streams
    leftover_processes: int = 0  # what the run left running after it ended (Run's field)
    leftover_names: tuple[str, ...] = ()


@value_class
class Overhead:
    """What a probe costs, measured here and now; None where it cannot be measured.

    ``per_event``: seconds added to each recorded event (a timed call, a traced system call).
    ``per_process``: seconds added to the wall time of each process the probe enters (loading
    a library, starting a tracer), which short processes feel most."""

    per_event: float | None = None
    per_process: float | None = None


@value_class
class Launch:
    """A command and its whole environment, for :func:`process_cost`."""

    argv: Sequence[str]
    env: Mapping[str, str]


def stop_child(pid: int) -> None:
    """Kill and reap the child ``pid`` that an interrupt stopped us waiting for. The interrupt
    may have landed just after the wait reaped it (the handler runs once waitpid returns), so a
    child already gone is no error. (Its pid is not reused in the microseconds between: Linux
    hands out pids in sequence and wraps only after the whole range.)"""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def process_cost(attached: Launch, plain: Launch, *, pairs: int = PROCESS_COST_PAIRS) -> float:
    """Seconds that running `attached` adds to running `plain`, spawn to reap: the median of
    `pairs` differences between the two run back to back (in alternating order, so that drift
    and the order of the pair do not bias it), never below 0. Output goes to /dev/null."""
    quiet = [
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]

    def wall(launch: Launch) -> int:
        start = time.perf_counter_ns()
        pid = os.posix_spawnp(launch.argv[0], list(launch.argv), launch.env, file_actions=quiet)
        try:
            os.waitpid(pid, 0)
        except BaseException:  # an interrupt: the tool (valgrind runs a second) goes too
            stop_child(pid)
            raise
        return time.perf_counter_ns() - start

    differences = []
    for pair in range(pairs):
        if pair % 2:
            plain_ns = wall(plain)
            attached_ns = wall(attached)
        else:
            attached_ns = wall(attached)
            plain_ns = wall(plain)
        differences.append(attached_ns - plain_ns)
    import statistics  # only where a probe measures itself: it imports fractions, decimal, random

    return max(0.0, statistics.median(differences) / 1e9)


class Probe(Protocol):
    name: str
    own_runs: bool  # True: untimed runs of its own, never attached to the timed runs

    def check(self) -> str:
        """Raise ProbeError if the probe cannot work here; else describe its backend."""

    def overhead(self) -> Overhead:
        """What the probe adds per recorded event and per process, measured now."""

    def check_program(self, program: str) -> str | None:
        """A warning about a variant's program (its resolved path) before anything runs, e.g.
        a binary without symbols that a profile cannot name; None when there is none."""

    def before_run(self, environment: Mapping[str, str]) -> Attachment:
        """How to attach to the next measured run, whose environment is ``environment``."""

    def after_run(self) -> list[RunData]:
        """What the run that just ended left, ready to store with it."""

    def run_metrics(self) -> Mapping[str, float]:
        """Whole-run metrics the probe measured in the run that just ended (called after
        ``after_run``), stored with the run's other metrics: the instructions probe's count.
        Empty for a probe that measures none. A probe with runs of its own declares its
        metrics with ``Metric.purpose`` set to its name (cutaway.model), so the analysis reads
        them from its runs, round by round, like the timed runs' metrics."""

    def close(self) -> None: ...


class PhaseError(Exception):
    """A measured phase cannot go on (a server that never accepts, one that cannot be found)."""


class PhaseRun(Protocol):
    """One measured run of a :class:`MeasuredPhase`."""

    @property
    def attachment(self) -> Attachment:
        """The run's attachment, as the phase widened it (the streams it reads)."""

    @property
    def timeout_seconds(self) -> float | None:
        """The run's time limit."""

    def finish(self, measured: Measurement) -> tuple[Measurement, list[RunData]]:
        """The run's measurement completed with the phase's metrics (a run without them
        failed), and what to store with the run."""

    def stop(self) -> None:
        """Stop what the phase started for the run; called once the run is over, also after a
        failure."""


class MeasuredPhase(Protocol):
    """A probe that owns what every measured run of an experiment runs (at most one does)."""

    def wait_until_ready(self, variant: Variant) -> None:
        """Return once the variant can be measured; PhaseError saying why it cannot."""

    def measured_variant(self, variant: Variant) -> Variant:
        """The variant as the executor runs it."""

    def start_run(
        self, variant: Variant, attachment: Attachment, timeout_seconds: float | None
    ) -> PhaseRun:
        """Start what the phase watches during the variant's next run (PhaseError when it
        cannot), given the attachment and time limit the run would have without it."""
