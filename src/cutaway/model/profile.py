"""The profile probe's results (totals, functions, stacks, flame graphs, phases) and the
differential attribution built from them.

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProfileTotal:
    """One variant's profiled runs, for one kind of profile (``what``: ``on-cpu``,
    ``off-cpu``, later ``instructions``): how many runs, and the mean total per run in ``unit``
    (``seconds`` for time, ``instructions`` for counts). ``profiled_wall`` and ``timed_wall``
    are the medians of wall time of the profiled and the timed runs: their ratio is what the
    profiler cost, measured in this very experiment."""

    variant: str
    what: str
    unit: str
    runs: int
    per_run: float
    events_per_run: float
    profiled_wall: float | None = None
    timed_wall: float | None = None


@dataclass(frozen=True)
class FunctionWeight:
    """One function in one variant's profiles of one kind: its mean weight per profiled run,
    self (samples with it as the leaf) and inclusive (samples with it anywhere on the stack,
    counted once per sample), in ``unit``, and as shares of the variant's total."""

    variant: str
    what: str
    function: str
    unit: str
    self_value: float
    inclusive_value: float
    self_share: float
    inclusive_share: float


@dataclass(frozen=True)
class PhaseWeight:
    """One named phase (or "other") in one variant's profiles of one kind: its mean weight per
    profiled run, in ``unit``, and its share of the variant's total of that kind."""

    variant: str
    what: str
    phase: str
    unit: str
    per_run: float
    share: float


@dataclass(frozen=True)
class StackWeight:
    """One whole stack (``root;...;leaf``, the root being the process name) in one variant's
    profiles of one kind: its mean weight per profiled run and its share of the total."""

    variant: str
    what: str
    stack: str
    unit: str
    value: float
    share: float


@dataclass(frozen=True)
class FlameProfile:
    """Every stack of one variant's profiles, for its flame graph: folded stacks (each kind a
    tower of its own, ``on-CPU;process;...;leaf``) with their mean weight per profiled run in
    ``unit``, and the profiled runs of each kind drawn."""

    variant: str
    unit: str
    runs: tuple[tuple[str, int], ...]
    stacks: tuple[tuple[str, float], ...]


ATTRIBUTION_KINDS = ("self", "inclusive")


@dataclass(frozen=True)
class AttributionEntry:
    """One function's change between the baseline and a variant in one kind of profile
    (``what``), per run, in ``unit`` (``seconds`` from samples, ``instructions`` from
    counting): ``kind`` ``self`` (as the leaf) or ``inclusive`` (anywhere on the stack). The
    values are means over the rounds where both ran (``rounds``); ``delta`` is the mean of the
    per-round differences, ``ci_low``/``ci_high`` its confidence interval (NaN with fewer than
    two rounds); ``share`` is delta over the measured whole-process difference (None when
    there is none to divide by)."""

    variant: str
    baseline: str
    what: str
    function: str
    kind: str  # one of ATTRIBUTION_KINDS
    unit: str
    baseline_value: float
    variant_value: float
    delta: float
    ci_low: float
    ci_high: float
    rounds: int
    share: float | None = None

    @property
    def beyond_noise(self) -> bool:
        """Whether the interval excludes zero (never with fewer than two rounds)."""
        return self.rounds >= 2 and (self.ci_low > 0.0 or self.ci_high < 0.0)


@dataclass(frozen=True)
class AttributionTotal:
    """How the functions of one variant's attribution add up against the whole-process
    difference. ``profile_delta`` is the difference of the profiles' totals per run (every
    function's self change summed); ``measured_metric`` the whole-process metric it is
    reconciled with (``instructions``, or ``cpu`` of the timed runs for on-CPU samples; None
    when there is none), with its per-run difference and interval. ``listed`` functions (by
    self change, largest first) sum to ``listed_delta``; ``beyond_noise`` functions changed
    with an interval that excludes zero, ``within_noise`` changed within it; ``baseline_only``
    and ``variant_only`` ran in one side's profiles only."""

    variant: str
    baseline: str
    what: str
    unit: str
    rounds: int
    profile_delta: float
    profile_ci_low: float
    profile_ci_high: float
    baseline_total: float
    measured_metric: str | None
    measured_delta: float | None
    measured_ci_low: float | None
    measured_ci_high: float | None
    functions: int
    listed: int
    listed_delta: float
    beyond_noise: int
    within_noise: int
    # Functions found (anywhere on a stack) in the baseline's profiles only, and in the
    # variant's only: code one version runs and the other does not (seed 003's new features).
    baseline_only: int = 0
    variant_only: int = 0

    @property
    def reference_delta(self) -> float:
        """The whole-process difference the functions are reconciled with."""
        return self.measured_delta if self.measured_delta is not None else self.profile_delta


@dataclass(frozen=True)
class AttributionPoint:
    """The "thousand cuts" curve: after the ``functions`` largest self changes (by size), their
    cumulative change per run, and its share of the whole-process difference."""

    variant: str
    what: str
    unit: str
    functions: int
    cumulative_delta: float
    share: float | None
