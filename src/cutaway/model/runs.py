"""One run of a variant's command and what it measured.

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from cutaway.value_class import value_class

TIMED = "timed"  # Run.purpose of the runs that are timed and compared


class RunStatus(StrEnum):
    OK = "ok"  # exited with status 0
    FAILED = "failed"  # non-zero exit status, or killed by a signal it did not expect
    TIMEOUT = "timeout"  # killed by cutaway at the per-run timeout
    INTERRUPTED = "interrupted"  # killed because the user interrupted cutaway
    ERROR = "error"  # could not be started at all (no such file, permission)


# A dataclass, not @value_class: two are made for every run (measured, then read back), and
# value_class's __init__ (through its Python __setattr__) costs ~2.2 us more an instance, more
# than the ~0.7 ms its creation saves over a long experiment.
@dataclass(frozen=True)
class Run:
    """One execution of one variant. ``metrics`` maps PROCESS_METRICS names to values in their
    units; it is filled for every status that reaped a process, and empty for ERROR.

    ``purpose`` is TIMED for the runs the comparisons use; a probe that perturbs timing (a
    sampling profiler, valgrind) gets runs of its own, untimed, whose purpose is its name."""

    variant: str
    round_index: int  # 0-based; warmup rounds are negative (-warmup_rounds .. -1)
    order_in_round: int  # 0-based position of this run within its round
    status: RunStatus
    exit_code: int | None
    signal: int | None
    metrics: Mapping[str, float]
    started_at: float  # Unix time, for humans and drift plots only (never used to compute cost)
    message: str = ""  # why a run failed, e.g. the tail of its stderr
    # Processes the run left running after it ended (stopped then, unless Spec.keep_leftovers),
    # and their distinct names as the kernel knows them (comm: at most 15 bytes each).
    leftover_processes: int = 0
    leftover_names: tuple[str, ...] = ()
    purpose: str = "timed"  # TIMED, or the name of the probe this run exists for

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", MappingProxyType(dict(self.metrics)))
        object.__setattr__(self, "leftover_names", tuple(self.leftover_names))

    @property
    def timed(self) -> bool:
        return self.purpose == TIMED

    @property
    def warmup(self) -> bool:
        return self.round_index < 0

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.OK


@value_class
class RunData:
    """What a probe recorded during one run, stored with the run in the same transaction.
    ``data`` is opaque to the store (the probe that wrote it decodes it); ``count`` is the number
    of records in it, for listings."""

    kind: str  # the probe, e.g. "calls"
    key: str  # e.g. the function name
    count: int
    data: bytes
