"""Differential attribution (seed 003, "death by a thousand cuts"): between the baseline and
each variant, every function's change per run, self and inclusive, with a confidence interval
over rounds, sorted by size, reconciled with the whole-process difference.

Rounds pair the runs: a profiled (or counted) run of each variant in every counted round, in
the round's order, so round r's variant run and baseline run shared the machine's state. For
each function the per-round differences ``variant - baseline`` (a function absent from one
side's run weighs 0 there) give the mean change and Student's t interval for it
(cutaway.stats.describe on the differences: the paired t interval). A change whose interval
excludes zero is beyond noise; the others are within it.

Self weights partition a profile's total, so the self changes of every function add up to the
change of the total exactly; the listed functions' share of it says how much they explain. The
total is reconciled with a whole-process metric measured apart: ``instructions`` for counted
profiles (the same count, so they agree exactly), the timed runs' ``cpu`` for on-CPU samples
(samples estimate CPU time; the difference between the two is the sampling noise plus
what profiling perturbed). A system-wide profile samples the whole machine while ``cpu`` counts
the measured command only: narrowed to a server's processes under a load phase, it is
reconciled with the server's CPU in the timed runs' load phases (the phase's
``sampled_cpu_metric``, judged like
any metric: with a fixed request count per phase, the server's CPU per request times that
count); otherwise with its own total. Off-CPU time has no whole-process metric of its own here.

Every share (of a function, of the curve's points) is of that measured difference, the judged
one, so "how much of the difference the largest N functions explain" answers for the change a
verdict was given on; without a measured metric, of the profiles' own difference.

The curve: the self changes sorted by size, summed one after another, as a share of the
whole-process difference. One big cause rises to ~100 % at once; a thousand cuts rise slowly."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cutaway.attribution import JSON_LISTED, LISTED
from cutaway.model import (
    ATTRIBUTION_KINDS,
    AttributionEntry,
    AttributionPoint,
    AttributionTotal,
    Spec,
)
from cutaway.numeric import np
from cutaway.probes import stacks
from cutaway.probes.stacks import KIND_ORDER, function_weights, report_unit
from cutaway.stats import describe
from cutaway.store import Store

# Points of the curve (and always the last function).
CURVE_RANKS = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
# The timed runs' whole-process metric on-CPU samples are reconciled with, and the runs it is
# read in; a kind of profile a probe counts in runs of its own is reconciled with its metric
# (cutaway.probes.core.stack_metrics: the instructions probe's).
ON_CPU_MEASURED = ("cpu", "timed")

if TYPE_CHECKING:
    from numpy.typing import NDArray


@dataclass(frozen=True)
class Attribution:
    entries: tuple[AttributionEntry, ...]
    totals: tuple[AttributionTotal, ...]
    curve: tuple[AttributionPoint, ...]


@dataclass(frozen=True)
class RoundWeights:
    """One run's profile of one kind: each function's self and inclusive weight, the total."""

    own: Mapping[str, int]
    inclusive: Mapping[str, int]
    total: int

    def of(self, kind: str) -> Mapping[str, int]:
        return self.own if kind == "self" else self.inclusive


@dataclass
class _Rounds:
    """One variant's profiles of one kind, round by round."""

    unit: str
    by_round: dict[int, RoundWeights]


@dataclass(frozen=True)
class Measured:
    """Per round, a whole-process metric's value for each variant (rounds without it left
    out): what the attribution is reconciled with."""

    metric: str
    by_variant: Mapping[str, Mapping[int, float]]


def per_round_profiles(
    items: Iterable[tuple[str, int, stacks.Profile]],
) -> dict[tuple[str, str], _Rounds]:
    """(variant, round, profile) -> per (variant, what) each round's function weights."""
    found: dict[tuple[str, str], _Rounds] = {}
    for variant, round_index, profile in items:
        entry = found.setdefault((variant, profile.what), _Rounds(profile.unit, {}))
        own, inclusive = function_weights(
            dict(profile.stacks), off_cpu=profile.what == stacks.OFF_CPU
        )
        entry.by_round[round_index] = RoundWeights(dict(own), dict(inclusive), profile.total)
    return found


def _matrix(
    rounds: Sequence[int], weights: Mapping[int, Mapping[str, int]], columns: Sequence[str]
) -> NDArray[np.float64]:
    index = {name: j for j, name in enumerate(columns)}
    matrix = np.zeros((len(rounds), len(columns)), dtype=np.float64)
    for i, round_index in enumerate(rounds):
        for name, weight in weights[round_index].items():
            matrix[i, index[name]] = weight
    return matrix


def _interval(differences: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    if differences.size < 2:
        return math.nan, math.nan
    described = describe(differences, confidence)
    return described.ci_low, described.ci_high


def _share(delta: float, reference: float) -> float | None:
    return delta / reference if reference else None


def attribute(
    profiles: Mapping[tuple[str, str], _Rounds],
    variants: Sequence[str],
    baseline: str,
    *,
    measured: Mapping[str, Measured] | None = None,
    confidence: float = 0.95,
    listed: int = LISTED,
    kept: int = JSON_LISTED,
) -> Attribution:
    """Every variant against ``baseline`` in every kind of profile both have (see the
    module's docstring); ``measured`` maps a kind of profile to its whole-process metric.
    ``listed`` functions (by size of self change) are reconciled in the totals; ``kept`` of
    each kind are returned (the largest changes; the totals and the curve count them all)."""
    entries: list[AttributionEntry] = []
    totals: list[AttributionTotal] = []
    curve: list[AttributionPoint] = []
    kinds = sorted({what for _, what in profiles}, key=_kind_key)
    for variant in variants:
        if variant == baseline:
            continue
        for what in kinds:
            base, other = profiles.get((baseline, what)), profiles.get((variant, what))
            if base is None or other is None:
                continue
            rounds = sorted(set(base.by_round) & set(other.by_round))
            if not rounds:
                continue
            scale = 1e-9 if base.unit == stacks.NANOSECONDS else 1.0
            unit = report_unit(base.unit)
            total_differences = scale * np.array(
                [other.by_round[r].total - base.by_round[r].total for r in rounds], dtype=np.float64
            )
            reference = _measured_difference(
                (measured or {}).get(what), baseline, variant, confidence
            )
            profile_delta = float(total_differences.mean())
            reference_delta = reference[1] if reference is not None else profile_delta
            found: dict[str, list[AttributionEntry]] = {}
            one_side_only = (0, 0)
            for kind in ATTRIBUTION_KINDS:
                base_weights = {r: base.by_round[r].of(kind) for r in rounds}
                other_weights = {r: other.by_round[r].of(kind) for r in rounds}
                names = sorted(
                    {n for w in base_weights.values() for n in w}
                    | {n for w in other_weights.values() for n in w}
                )
                base_matrix = _matrix(rounds, base_weights, names) * scale
                other_matrix = _matrix(rounds, other_weights, names) * scale
                differences = other_matrix - base_matrix
                deltas = differences.mean(axis=0)
                base_means, other_means = base_matrix.mean(axis=0), other_matrix.mean(axis=0)
                if kind == "inclusive":  # anywhere on a stack: the function ran at all
                    one_side_only = (
                        int(np.sum((base_means > 0) & (other_means == 0))),
                        int(np.sum((base_means == 0) & (other_means > 0))),
                    )
                order = sorted(range(len(names)), key=lambda j: (-abs(deltas[j]), names[j]))
                kind_entries = []
                for j in order:
                    if deltas[j] == 0.0:
                        break  # sorted by size: every function after it is unchanged too
                    low, high = _interval(differences[:, j], confidence)
                    kind_entries.append(
                        AttributionEntry(
                            variant, baseline, what, names[j], kind, unit,
                            float(base_means[j]), float(other_means[j]), float(deltas[j]),
                            low, high, len(rounds), _share(float(deltas[j]), reference_delta),
                        )
                    )  # fmt: skip
                found[kind] = kind_entries
            own = found["self"]
            changed = [e for e in own if e.delta != 0.0]
            beyond = sum(1 for e in changed if e.beyond_noise)
            shown = own[:listed]
            profile_low, profile_high = _interval(total_differences, confidence)
            base_total = scale * float(np.mean([base.by_round[r].total for r in rounds]))
            totals.append(
                AttributionTotal(
                    variant, baseline, what, unit, len(rounds),
                    profile_delta, profile_low, profile_high, base_total,
                    None if reference is None else reference[0],
                    None if reference is None else reference[1],
                    None if reference is None else reference[2],
                    None if reference is None else reference[3],
                    len(own), len(shown), sum(e.delta for e in shown),
                    beyond, len(changed) - beyond, *one_side_only,
                )
            )  # fmt: skip
            curve += _curve(variant, what, unit, changed, reference_delta)
            entries += [e for kind in ATTRIBUTION_KINDS for e in found[kind][:kept]]
    return Attribution(tuple(entries), tuple(totals), tuple(curve))


def _kind_key(what: str) -> tuple[int, str]:
    return (KIND_ORDER.index(what) if what in KIND_ORDER else len(KIND_ORDER), what)


def _curve(
    variant: str, what: str, unit: str, changed: Sequence[AttributionEntry], reference: float
) -> list[AttributionPoint]:
    """The cumulative self change after 1, 2, 3, 5, 10, ... functions (by size) and all."""
    if not changed:
        return []
    cumulative = np.cumsum([e.delta for e in changed])
    ranks = [r for r in CURVE_RANKS if r < len(changed)] + [len(changed)]
    return [
        AttributionPoint(
            variant,
            what,
            unit,
            rank,
            float(cumulative[rank - 1]),
            _share(float(cumulative[rank - 1]), reference),
        )
        for rank in ranks
    ]


def _measured_difference(
    measured: Measured | None, baseline: str, variant: str, confidence: float
) -> tuple[str, float, float, float] | None:
    """(metric, mean per-round difference, interval) of the whole-process metric."""
    if measured is None:
        return None
    base = measured.by_variant.get(baseline, {})
    other = measured.by_variant.get(variant, {})
    rounds = sorted(set(base) & set(other))
    if not rounds:
        return None
    differences = np.array([other[r] - base[r] for r in rounds], dtype=np.float64)
    low, high = _interval(differences, confidence)
    return measured.metric, float(differences.mean()), low, high


def _measured(store: Store, experiment_id: int, metric: str, purpose: str) -> Measured:
    table = store.metric_table(experiment_id, metric, purpose)
    by_variant: dict[str, dict[int, float]] = defaultdict(dict)
    for j, variant in enumerate(table.variants):
        for i, round_index in enumerate(table.rounds):
            value = float(table.values[i, j])
            if math.isfinite(value):
                by_variant[variant][int(round_index)] = value
    return Measured(metric, by_variant)


def measured_metrics(spec: Spec) -> dict[str, tuple[str, str]]:
    """Per kind of profile, the whole-process metric (and the runs it is read in) that the
    attribution is reconciled with and its shares are of.

    A system-wide profile samples every process on the machine, while ``cpu`` counts only the
    measured command's: the two cannot be reconciled. Narrowed to some processes under a load
    whose server is sampled, the profile is the server's (the process the load's target
    reaches, as the case studies name it in ``processes``), and so is the phase's sampled CPU; with
    neither, such a profile is reconciled with its own total (as off-CPU time always is). So is
    one narrowed to the stacks ``under`` some functions: ``cpu`` counts every stack of the
    command's."""
    # The profile probe's settings as stored (cutaway.probes.profile.settings.ProfileSpec's
    # to_dict): the attribution reads three keys and imports no probe.
    from cutaway.probes.core import sampled_cpu_metric, stack_metrics

    stored = spec.probes.setting("profile")
    profile: Mapping[str, object] = stored if isinstance(stored, Mapping) else {}
    chosen = {
        what: (metric.name, metric.purpose)
        for what, metric in stack_metrics().items()
        if what != stacks.ON_CPU
    }
    if profile.get("under"):
        return chosen
    if not profile.get("system_wide"):
        return {**chosen, stacks.ON_CPU: ON_CPU_MEASURED}
    sampled = sampled_cpu_metric(spec) if profile.get("processes") else None
    if sampled is not None:
        chosen[stacks.ON_CPU] = (sampled.name, "timed")
    return chosen


def attribution_analysis(
    store: Store,
    experiment_id: int,
    spec: Spec,
    items: Sequence[tuple[str, int, stacks.Profile]],
    *,
    listed: int = LISTED,
) -> Attribution | None:
    """The experiment's attribution from its stored profiles (``items``: variant, round,
    profile, as profile.analysis.load_round_profiles reads them); None when there are none or
    the experiment has one variant."""
    if len(spec.variants) < 2:
        return None
    if not items:
        return None
    profiles = per_round_profiles(items)
    kinds = {what for _, what in profiles}
    measured = {
        what: _measured(store, experiment_id, metric, purpose)
        for what, (metric, purpose) in measured_metrics(spec).items()
        if what in kinds
    }
    names = [variant.name for variant in spec.variants]
    return attribute(
        profiles,
        names,
        spec.baseline,
        measured=measured,
        confidence=spec.confidence,
        listed=listed,
    )
