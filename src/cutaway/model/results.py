"""What an analysis concludes: summaries, comparisons, cautions, calibration, the
experiments' descriptions, and :class:`Analysis`, everything a report shows.

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from enum import StrEnum
from typing import ClassVar, TypeVar

from cutaway.model.experiment import Condition
from cutaway.model.metrics import PRIMARY_METRIC, PROCESS_METRICS, Metric
from cutaway.model.runs import Run
from cutaway.value_class import value_class

# ---------------------------------------------------------------------------------------------
# Results of analysis: what `compare` computes from runs and every report renders.


class Verdict(StrEnum):
    """The four honest answers to "did the variant change this metric against the baseline?"."""

    REGRESSED = "regressed"  # significantly higher cost, beyond the equivalence margin
    IMPROVED = "improved"  # significantly lower cost, beyond the equivalence margin
    EQUIVALENT = "equivalent"  # the whole confidence interval lies within +/- margin
    INCONCLUSIVE = "inconclusive"  # neither: more rounds (or less noise) are needed


@value_class
class Summary:
    """Descriptive statistics of one metric of one variant over its counted, successful runs:
    the columns of seed 000 plus a confidence interval for the mean."""

    variant: str
    metric: str
    n: int
    total: float
    mean: float
    median: float
    sd: float
    min: float
    max: float
    ci_low: float  # confidence interval for the mean
    ci_high: float


@value_class
class Comparison:
    """A variant against the baseline on one metric, from per-round pairs.

    ``ratio`` is variant / baseline (1.02 is 2 % more cost). ``p_value`` is already adjusted for
    the number of metrics compared (Holm). ``rounds_to_settle`` estimates the total number of
    rounds an inconclusive comparison would need at the noise seen (None when settled or when
    no estimate is possible)."""

    metric: str
    baseline: str
    variant: str
    n_pairs: int
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: Verdict
    method: str  # "geometric-mean", "trimmed-mean", or "ratio-of-means" (a metric with zeros)
    rounds_to_settle: int | None = None


@value_class
class TimeSeries:
    """One declared metric sampled during one counted, successful run (``series = true``):
    seconds since the run started, and the values, in the metric's unit."""

    variant: str
    round_index: int
    metric: str
    unit: str
    times: tuple[float, ...]
    values: tuple[float, ...]


@value_class
class Caution:
    """Something that makes a result doubtful, said plainly in every report."""

    kind: str  # "load", "drift", "outliers", "failed-runs", "few-rounds", "environment", ...
    message: str
    variant: str | None = None
    metric: str | None = None


@value_class
class Calibration:
    """Harness overhead: the wall time of an empty command run the way variants are run."""

    command: str
    n: int
    median_wall_seconds: float
    min_wall_seconds: float


@value_class
class ExperimentInfo:
    """What a report says about where an experiment came from."""

    id: int
    name: str
    status: str  # "running", "complete", "incomplete"
    created_at: float
    label: str | None
    environment: Mapping[str, object]
    margin: float
    confidence: float
    baseline: str
    variants: tuple[str, ...]
    rounds_completed: int
    conditions: tuple[Condition, ...] = ()  # [[conditions]]: the variants are their copies
    # The variants' own versions, by name (only those that have one; the label is the others').
    versions: Mapping[str, str] = field(default_factory=dict)
    # The harness overhead measured for this experiment (each one's own in `cutaway compare`).
    calibration: Calibration | None = None
    # Each variant's command as one line, and the matrix parameters that made it (if any).
    commands: Mapping[str, str] = field(default_factory=dict)
    parameters: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    estimator: str = "mean"  # Spec.estimator: how paired rounds became a ratio


@value_class
class ProbeResult:
    """One probe's part of an :class:`Analysis`: a frozen value the probe's plugin makes
    (cutaway.probes.plugin) and reads back for its report sections, figures and exports.
    ``probe`` names the plugin; model knows no probe, each subclass lives in its probe's
    package."""

    probe: ClassVar[str] = ""

    def verdict_comparisons(self) -> tuple[Comparison, ...]:
        """The comparisons the probe adds to the leading verdict table (its rows are the
        probe's views'): they decide how the table names its baselines."""
        return ()

    def median_variants(self) -> tuple[str, ...]:
        """Variants the probe measured, for the columns of the compact report's medians."""
        return ()

    def primary_metric(self) -> str | None:
        """The metric the report's conclusion speaks of instead of wall time (a load
        experiment's throughput), None to leave it to wall time."""
        return None


ResultT = TypeVar("ResultT", bound=ProbeResult)


@value_class
class Analysis:
    """Everything a report shows about one experiment (or two, for `cutaway compare`)."""

    experiments: tuple[ExperimentInfo, ...]
    summaries: tuple[Summary, ...]
    comparisons: tuple[Comparison, ...]
    cautions: tuple[Caution, ...]
    calibration: Calibration | None
    run_counts: Mapping[str, Mapping[str, int]]  # variant -> status -> count (counted rounds)
    probes: tuple[str, ...] = ()  # what measured, e.g. "calls: LD_PRELOAD interposer (...)"
    # The metrics the report shows, in order, with units and directions (process metrics first).
    metrics: tuple[Metric, ...] = PROCESS_METRICS
    # Variants by mean wall time, fastest first, each with its wall-time ratio to the fastest
    # (1.0 for the fastest itself), from the same rounds: hyperfine's "1.52x faster than" line.
    ranking: tuple[tuple[str, float], ...] = ()
    # Every pair of variants compared, not only each against the baseline (on request).
    pairwise: tuple[Comparison, ...] = ()
    series: tuple[TimeSeries, ...] = ()  # declared metrics kept as time series, run by run
    # Every counted run (warmup rounds left out), in round order: the raw values the summaries
    # come from, for the JSON export. Empty for `cutaway compare`.
    runs: tuple[Run, ...] = ()
    # The registered probes' results (cutaway.probes.registry), each probe's own type, in the
    # registry's order; absent for a probe that measured nothing.
    probe_results: tuple[ProbeResult, ...] = ()
    # The metric the experiment declares primary (Spec.primary_metric), None for none: the
    # conclusion speaks of it, as its comparisons judged it at full alpha.
    declared_primary: str | None = None

    def result(self, kind: type[ResultT]) -> ResultT | None:
        """The probe result of type ``kind``, None when that probe has none here."""
        for found in self.probe_results:
            if isinstance(found, kind):
                return found
        return None

    def primary_metric(self) -> str:
        """The metric a conclusion speaks of: the one the experiment declares, else wall time,
        unless a probe's result names another (a load experiment's throughput)."""
        if self.declared_primary is not None:
            return self.declared_primary
        named = (found.primary_metric() for found in self.probe_results)
        return next((name for name in named if name is not None), PRIMARY_METRIC)

    def calibration_of(self, info: ExperimentInfo) -> Calibration | None:
        """The harness overhead of ``info``'s experiment: its own, else, when the analysis is
        of that one experiment only, the analysis's."""
        if info.calibration is not None:
            return info.calibration
        return self.calibration if len(self.experiments) == 1 else None

    def metric(self, name: str) -> Metric | None:
        """The metric called ``name`` as this analysis describes it, None for one it does not
        (the reports then read a metric known by name: cutaway.probes.core.known_metrics)."""
        for metric in self.metrics:
            if metric.name == name:
                return metric
        return None
