"""What makes a result doubtful, found in an experiment's runs and said plainly in reports.

Each check is small and conservative: a caution is a reason to look, not a verdict. Thresholds
are named constants so that the documentation (docs/how-it-works.md) can quote them."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from cutaway.cpu_steal import steal_share
from cutaway.model import Caution, Comparison, ExperimentInfo, Run, RunStatus, Spec, Verdict
from cutaway.numeric import np
from cutaway.probes.core import primary_metric
from cutaway.stats import GEOMETRIC_MEAN, TRIM, outlier_mask, paired_ratio, relative_width, trend
from cutaway.store import MetricTable

BUSY_LOAD_PER_CORE = 0.5  # load average at the start, per core, above which the machine is busy
FEW_ROUNDS = 10  # fewer complete rounds than this make any verdict fragile
OUTLIER_SHARE = 0.05  # share of a variant's runs beyond the modified z-score threshold
DRIFT_P_VALUE = 0.01
STEAL_SHARE = (
    0.03  # share of all CPU time a hypervisor took (steal) above which results are noisier
)
MAX_LEFTOVER_NAMES = 8  # process names a leftovers caution lists
# An inconclusive comparison whose trimmed interval (cutaway.stats.paired) is at most this
# share of the mean's width, as wide as the mean's would be with four times the rounds, is
# worth the trimmed estimator's mention.
TRIMMED_WIDTH_SHARE = 0.5


def _first_load(environment: Mapping[str, object], key: str) -> float | None:
    value = environment.get(key)
    if isinstance(value, list) and value and isinstance(value[0], int | float):
        return float(value[0])
    return None


def _load_cautions(info: ExperimentInfo) -> list[Caution]:
    cautions: list[Caution] = []
    cores = info.environment.get("cores")
    if not isinstance(cores, int) or cores < 1:
        return _steal_cautions(info)
    start = _first_load(info.environment, "loadavg_start")
    if start is not None and start > BUSY_LOAD_PER_CORE * cores:
        cautions.append(
            Caution(
                "load",
                f"the machine was busy when the experiment started "
                f"(load average {start:.2f} on {cores} cores)",
            )
        )
    end = _first_load(info.environment, "loadavg_end")
    if end is not None and end > cores:
        # The experiment itself keeps about one core busy; more than all of them is others.
        cautions.append(
            Caution(
                "load",
                f"the machine was busy while the experiment ran "
                f"(load average {end:.2f} on {cores} cores at the end)",
            )
        )
    return cautions + _steal_cautions(info)


def _steal_cautions(info: ExperimentInfo) -> list[Caution]:
    stolen = steal_share(info.environment)
    if stolen is None or stolen <= STEAL_SHARE:
        return []
    # A virtual machine whose host runs others: the time taken is not counted in a run's CPU
    # time, but caches and the runs' pace are shared, so each run varies more.
    return [
        Caution(
            "load",
            f"the hypervisor gave {stolen:.0%} of the CPU time to other machines (steal) "
            f"while the experiment ran: runs vary more, so small differences may stay "
            f"inconclusive",
        )
    ]


def _failure_cautions(runs: Sequence[Run]) -> list[Caution]:
    cautions = []
    by_variant: dict[str, Counter[RunStatus]] = {}
    first_message: dict[str, str] = {}
    for run in runs:
        by_variant.setdefault(run.variant, Counter())[run.status] += 1
        if not run.ok and run.message and run.variant not in first_message:
            first_message[run.variant] = run.message
    for variant, counts in by_variant.items():
        bad = sum(n for status, n in counts.items() if status is not RunStatus.OK)
        if bad:
            kinds = ", ".join(f"{n} {s.value}" for s, n in counts.items() if s is not RunStatus.OK)
            detail = f" (first: {first_message[variant][:200]})" if variant in first_message else ""
            cautions.append(
                Caution(
                    "failed-runs",
                    f"{bad} of {sum(counts.values())} runs of {variant!r} did not succeed "
                    f"({kinds}); they are not counted{detail}",
                    variant=variant,
                )
            )
    return cautions


def _leftover_cautions(runs: Sequence[Run], kept: bool) -> list[Caution]:
    """Runs that left processes running after they ended (``sleep 100 &``): whatever those did
    later is not in any measured figure, and kept running they compete with the runs after."""
    totals: Counter[str] = Counter(run.variant for run in runs)
    leaving: dict[str, list[Run]] = {}
    for run in runs:
        if run.leftover_processes:
            leaving.setdefault(run.variant, []).append(run)
    cautions = []
    for variant, own in leaving.items():
        names = dict.fromkeys(name for run in own for name in run.leftover_names)
        processes = sum(run.leftover_processes for run in own)
        what = ", ".join(list(names)[:MAX_LEFTOVER_NAMES]) + (
            ", ..." if len(names) > MAX_LEFTOVER_NAMES else ""
        )
        fate = (
            "they were kept running (keep_leftovers): they may have slowed the runs after them"
            if kept
            else "they were stopped when each run ended"
        )
        cautions.append(
            Caution(
                "leftovers",
                f"{len(own)} of {totals[variant]} runs of {variant!r} left processes running "
                f"after they ended ({what}; {processes} in all); {fate}, and what they did "
                "after the run is not in its measured figures",
                variant=variant,
            )
        )
    return cautions


def _noise_cautions(spec: Spec, wall: MetricTable) -> list[Caution]:
    cautions = []
    for column, name in enumerate(wall.variants):
        values = wall.values[:, column]
        values = values[np.isfinite(values)]
        if len(values) >= 5:
            flagged = int(outlier_mask(values).sum())
            if flagged / len(values) > OUTLIER_SHARE:
                cautions.append(
                    Caution(
                        "outliers",
                        f"{flagged} of {len(values)} wall times of {name!r} are outliers (modified "
                        f"z-score > 3.5): something else ran at times; paired ratios blunt this",
                        variant=name,
                        metric="wall",
                    )
                )
        if name == spec.baseline and len(values) >= 8:
            drift = trend(values)
            if drift.p_value < DRIFT_P_VALUE and abs(drift.total_change_fraction) > spec.margin:
                cautions.append(
                    Caution(
                        "drift",
                        f"the baseline's wall time drifted {drift.total_change_fraction:+.1%} over "
                        f"{len(values)} rounds (Kendall p = {drift.p_value:.3g}): interleaving "
                        f"cancels slow drift, but check for throttling or background work",
                        variant=name,
                        metric="wall",
                    )
                )
    return cautions


def heavy_tail_cautions(
    spec: Spec, table: MetricTable, comparisons: Sequence[Comparison], experiment_id: int
) -> list[Caution]:
    """Say when the primary metric's comparisons are inconclusive because a few rounds differ
    far more than the rest (runs slowed now and then by something else), where the trimmed
    estimator would have settled more of them: ``table`` is that metric's."""
    if spec.estimator != "mean":
        return []
    primary = primary_metric(spec)
    narrower: list[tuple[Comparison, float]] = []
    for comparison in comparisons:
        if comparison.metric != primary or comparison.verdict is not Verdict.INCONCLUSIVE:
            continue
        if comparison.method != GEOMETRIC_MEAN:
            continue
        base = table.values[:, table.column_of[comparison.baseline]]
        other = table.values[:, table.column_of[comparison.variant]]
        pairs = np.isfinite(base) & np.isfinite(other)
        trimmed = paired_ratio(base[pairs], other[pairs], confidence=spec.confidence, trim=TRIM)
        if trimmed is None or trimmed.method == GEOMETRIC_MEAN:
            continue
        width = relative_width(comparison.ci_low, comparison.ci_high)
        trimmed_width = relative_width(trimmed.ci_low, trimmed.ci_high)
        # A point (the kept rounds agree: a metric of a few discrete values, such as a
        # percentile in whole buckets) is no case for the trimmed mean's interval.
        if 0.0 < trimmed_width <= TRIMMED_WIDTH_SHARE * width and math.isfinite(width):
            narrower.append((comparison, width / trimmed_width))
    if not narrower:
        return []
    factor = min(times for _, times in narrower)
    what = "wall time" if primary == "wall" else primary
    return [
        Caution(
            "heavy-tails",
            f"a few rounds' {what} ratios differ far more than the rest (runs slowed now and "
            f"then by something else): the trimmed estimator judges the typical round, with "
            f"intervals {factor:.1f}x narrower here (the mean would need about "
            f"{factor * factor:.0f}x the rounds), but does not see a change confined to a few "
            f"rounds: `cutaway report {experiment_id} --estimator trimmed` reads these rounds "
            "so, `--estimator trimmed` runs so",
            metric=primary,
        )
    ]


def experiment_cautions(
    info: ExperimentInfo,
    spec: Spec,
    runs: Sequence[Run],
    wall: MetricTable,
    comparisons: Sequence[Comparison],
) -> list[Caution]:
    """Every caution for one experiment, most important first."""
    cautions = []
    if info.status != "complete":
        cautions.append(
            Caution(
                "incomplete",
                f"the experiment is {info.status}: `cutaway run --resume {info.id}` continues it",
            )
        )
    cautions += _failure_cautions(runs)
    cautions += _leftover_cautions(runs, spec.keep_leftovers)
    if len(spec.variants) > 1 and info.rounds_completed < FEW_ROUNDS:
        cautions.append(
            Caution(
                "few-rounds",
                f"only {info.rounds_completed} complete rounds: "
                f"verdicts from fewer than {FEW_ROUNDS} are fragile",
            )
        )
    cautions += _load_cautions(info)
    cautions += _noise_cautions(spec, wall)
    primary = primary_metric(spec)
    if any(c.verdict is Verdict.INCONCLUSIVE and c.metric == primary for c in comparisons):
        what = "wall-time" if primary == "wall" else primary
        cautions.append(
            Caution(
                "inconclusive",
                f"some {what} comparisons are inconclusive: "
                "more rounds (or `--until`) would settle them",
            )
        )
    return cautions
