"""The spans probe's phase tree: phase keys (a phase's place in the tree as a metric name)
and each phase's statistics.

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

UNACCOUNTED = "unaccounted"  # a phase's rest beyond its sub-phases
PHASE_METRIC_PREFIX = "phase:"
PHASE_SEPARATOR = "/"


def phase_key(path: Sequence[str], *, unaccounted: bool = False) -> str:
    """A phase's place in the tree as one text: its names from the outermost span down joined
    by ``/``, a name's own ``\\`` and ``/`` escaped (``\\\\``, ``\\/``: an OpenTelemetry span
    is often named ``GET /users``), and a span that is itself called ``unaccounted`` written
    ``\\unaccounted``, so that no two phases share a key."""
    names = [
        name.replace("\\", "\\\\").replace(PHASE_SEPARATOR, "\\" + PHASE_SEPARATOR) for name in path
    ]
    if unaccounted:
        return PHASE_SEPARATOR.join([*names[:-1], UNACCOUNTED])
    if names and names[-1] == UNACCOUNTED:
        names[-1] = "\\" + UNACCOUNTED
    return PHASE_SEPARATOR.join(names)


def parse_phase_key(key: str) -> tuple[tuple[str, ...], bool]:
    """The path and the unaccounted flag a :func:`phase_key` was made of (its inverse)."""
    raw: list[str] = [""]
    names: list[str] = [""]
    escaped = False
    for character in key:
        if escaped:
            raw[-1] += "\\" + character
            names[-1] += character
            escaped = False
        elif character == "\\":
            escaped = True
        elif character == PHASE_SEPARATOR:
            raw.append("")
            names.append("")
        else:
            raw[-1] += character
            names[-1] += character
    return tuple(names), len(raw) > 1 and raw[-1] == UNACCOUNTED


@dataclass(frozen=True)
class PhaseStat:
    """One phase of the spans probe's dissection (seed 001's table) in one variant and
    condition: its time per operation over the counted runs, in seconds. ``path`` names the
    phase from the outermost span down (``phase`` is its last name, ``parent`` the one before);
    an ``unaccounted`` phase is the rest of its parent beyond the parent's sub-phases.

    ``mean`` is the mean over runs of each run's mean per operation (every operation of the
    phase's outermost span counts, 0 where the phase did not occur), with a confidence
    interval over runs (``ci_low``, ``ci_high``; the mean itself with one run); ``median`` is
    the median over every operation of every run; ``share`` is ``mean`` over the outermost
    span's mean. ``condition`` is None until conditions exist (cold vs warm: the uprobes
    branch adds them)."""

    variant: str
    condition: str | None
    source: str  # "sdk" (span.h, cutaway.spans), "otlp", or another span source
    path: tuple[str, ...]
    unaccounted: bool
    n: int  # operations
    runs: int
    mean: float
    median: float
    ci_low: float
    ci_high: float
    share: float
    # Spans of the phase (a function's calls at this place): mean per operation of its
    # outermost span and per run; NaN for an unaccounted rest or runs stored before counts.
    calls_per_operation: float = float("nan")
    calls_per_run: float = float("nan")

    @property
    def phase(self) -> str:
        return self.path[-1]

    @property
    def parent(self) -> str | None:
        return self.path[-2] if len(self.path) > 1 else None

    @property
    def key(self) -> str:
        """Its place in the tree (:func:`phase_key`): ``do_search/mdb_search/unaccounted``."""
        return phase_key(self.path, unaccounted=self.unaccounted)

    @property
    def parent_key(self) -> str | None:
        return phase_key(self.path[:-1]) if len(self.path) > 1 else None

    @property
    def metric(self) -> str:
        """The run metric comparing this phase: ``phase:<key>``."""
        return PHASE_METRIC_PREFIX + self.key
