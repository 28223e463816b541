"""Events the runner emits. The runner never prints: the terminal reporter (progress bar,
messages) and anything else that wants to follow an experiment listens to these.

A listener is any callable taking one event. Listeners must not raise; one that does stops the
experiment like any other error (completed runs are already saved)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cutaway.model import Calibration, Run
from cutaway.value_class import value_class


@value_class
class ExperimentStarted:
    """An experiment starts, or resumes, its runs."""

    experiment_id: int
    name: str
    variants: tuple[str, ...]
    planned_rounds: int  # counted rounds planned (adaptive mode may add more)
    warmup_rounds: int
    resumed_runs: int  # runs already stored when resuming


@value_class
class HookRan:
    """A variant's hook ran (its exit code, or TIMED_OUT or STOPPED from runner/hooks.py)."""

    variant: str
    hook: str  # "setup", "prepare", "conclude", "cleanup"
    command: str
    exit_code: int


@value_class
class CalibrationDone:
    """The harness's cost is known: measured now, or reused."""

    calibration: Calibration
    # When the figure was measured (Unix seconds), and whether it was reused from an earlier
    # measurement on the same machine (cutaway.runner.calibration) rather than measured now.
    measured_at: float | None = None
    reused: bool = False


# A dataclass, not @value_class, as the events of every run and round below: value_class's
# __init__ (through its Python __setattr__) costs ~0.4-0.8 us more an instance, ~3.8 ms over
# 2,000 runs for the three, against ~1.3 ms their creation saves once at import.
@dataclass(frozen=True)
class RunStarted:
    """A run is about to start (its hooks first)."""

    variant: str
    round_index: int
    order_in_round: int
    purpose: str = "timed"  # or the probe an untimed run is for (Run.purpose)


@dataclass(frozen=True)
class RunFinished:
    """A run ended and is stored."""

    run: Run
    runs_done: int  # counted + warmup runs finished so far in this invocation
    runs_planned: int
    seconds_elapsed: float


@dataclass(frozen=True)
class RoundFinished:
    """Every variant of a counted round has run."""

    round_index: int
    planned_rounds: int


@value_class
class Notice:
    """Something the user should read now (a failed hook, adaptive mode's progress)."""

    message: str


@value_class
class ExperimentFinished:
    """The experiment stopped: done, or why not."""

    experiment_id: int
    status: str  # "complete" or "incomplete" as stored; "running" if that could not be stored
    reason: str  # "done", "interrupted", "error", "budget", "no-pairs"
    runs_kept: int = 0  # runs stored (this invocation's and earlier ones), warmup included
    rounds_kept: int = 0  # counted rounds stored with a run of every variant


Event = (
    ExperimentStarted
    | HookRan
    | CalibrationDone
    | RunStarted
    | RunFinished
    | RoundFinished
    | Notice
    | ExperimentFinished
)
Listener = Callable[[Event], None]
