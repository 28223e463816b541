"""Analyses with every field a report draws, built from generated runs, for the HTML report's
tests and benchmark: N variants x R rounds of runs with every process metric, the comparisons a
report would judge, the calls probe's summaries and percentile curves, an attribution of
on-CPU profiles (its curve), a probe line, cautions and an environment. Values are random but
seeded: the same arguments give the same Analysis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from cutaway.attribution.analysis import Attribution, attribute, per_round_profiles
from cutaway.model import (
    PERCENTILE_GRID,
    PROCESS_METRICS,
    Analysis,
    Calibration,
    CallPercentiles,
    CallSummary,
    Caution,
    Comparison,
    ExperimentInfo,
    Metric,
    PhaseStat,
    Run,
    RunStatus,
    Summary,
    Verdict,
)
from cutaway.probes.calls.result import CallsResult
from cutaway.probes.profile import records
from cutaway.probes.profile.result import ProfileResult, profile_of
from cutaway.probes.spans.result import PhasesResult
from cutaway.stats import describe, paired_ratio
from cutaway.stats.descriptive import percentile_curve

POSITIONS = ("1", "2", "later", "all")


def generated_analysis(
    variants: Sequence[str] = ("files", "nscd", "nscd-invalidated"),
    rounds: int = 100,
    *,
    functions: Sequence[str] = ("getpwnam", "getservbyname", "open (syscall)"),
    name: str = "nscd: lookup latency by call position",
    label: str | None = None,
    text: str = "",
    calls_per_run: int = 4,
    extra_metrics: Sequence[str] = (),
    seed: int = 11,
) -> Analysis:
    """``text`` goes into every other field a user or a measured program fills (probe line,
    caution, environment, calibration command, run message) when given; ``extra_metrics``
    are declared metrics, each named, described and measured in a unit of that name."""
    rng = np.random.default_rng(seed)
    all_metrics = (*PROCESS_METRICS, *(Metric(m, m, m) for m in extra_metrics))
    runs: list[Run] = []
    values: dict[tuple[str, str], list[float]] = {}
    for round_index in range(rounds):
        for order, variant in enumerate(variants):
            factor = 1.0 + 0.2 * variants.index(variant)
            metrics = {
                m.name: float(
                    rng.lognormal(np.log(0.01 * factor * (1 + i)), 0.1) * (1e6 if i == 4 else 1)
                )
                for i, m in enumerate(all_metrics)
            }
            runs.append(
                Run(variant, round_index, order, RunStatus.OK, 0, None, metrics, 1.8e9, text)
            )
            for metric, value in metrics.items():
                values.setdefault((variant, metric), []).append(value)
    summaries = []
    for (variant, metric), own in values.items():
        d = describe(own)
        summaries.append(
            Summary(variant, metric, d.n, d.total, d.mean, d.median, d.sd, d.min, d.max,
                    d.ci_low, d.ci_high)
        )  # fmt: skip
    comparisons = []
    baseline = variants[0]
    for variant in variants[1:]:
        for metric in all_metrics:
            a, b = values[(baseline, metric.name)], values[(variant, metric.name)]
            estimate = paired_ratio(a, b, resamples=200, seed=1)
            assert estimate is not None
            verdict = Verdict.REGRESSED if estimate.ci_low > 1.005 else Verdict.INCONCLUSIVE
            comparisons.append(
                Comparison(metric.name, baseline, variant, rounds, estimate.ratio,
                           estimate.ci_low, estimate.ci_high, 0.001, verdict, "geometric-mean")
            )  # fmt: skip
    calls, curves, call_comparisons = _calls(rng, variants, functions, rounds * calls_per_run)
    attribution = _attribution(rng, variants, functions, min(rounds, 10))
    info = ExperimentInfo(
        id=1,
        name=name,
        status="complete",
        created_at=1.8e9,
        label=label,
        environment={"host": text or "bench", "kernel": "6.1", "cores": 2, "note": text},
        margin=0.005,
        confidence=0.95,
        baseline=baseline,
        variants=tuple(variants),
        rounds_completed=rounds,
    )
    return Analysis(
        experiments=(info,),
        summaries=tuple(summaries),
        comparisons=tuple(comparisons),
        cautions=(Caution("outliers", f"outliers in {text or 'wall'}", variants[-1], "wall"),),
        calibration=Calibration(text or "true", 30, 0.0006, 0.0005),
        run_counts={variant: {"ok": rounds} for variant in variants},
        probes=(f"calls: LD_PRELOAD interposer on {text or 'getpwnam'}; overhead 90 ns",),
        ranking=tuple((v, 1.0 + 0.2 * i) for i, v in enumerate(variants)),
        metrics=all_metrics,
        runs=tuple(runs),
        probe_results=(
            CallsResult(tuple(calls), tuple(call_comparisons), tuple(curves)),
            ProfileResult(
                attribution=attribution.entries,
                attribution_totals=attribution.totals,
                attribution_curve=attribution.curve,
            ),
            PhasesResult(tuple(_phases(variants, functions))),
        ),
    )


def _attribution(
    rng: np.random.Generator, variants: Sequence[str], functions: Sequence[str], rounds: int
) -> Attribution:
    """On-CPU profiles of every variant: ``functions`` and 60 small "cuts" under main, the
    first function twice as heavy in every variant but the first, every cut a little heavier."""
    items = []
    names = [*functions, *(f"cut_{index}" for index in range(60))]
    for round_index in range(rounds):
        for v_index, variant in enumerate(variants):
            stacks = {}
            for f_index, function in enumerate(names):
                weight = 1e6 * (1 + (f_index == 0) * v_index) * (1 + 0.02 * v_index * (f_index > 2))
                stacks[f"prog;main;{function}"] = int(rng.normal(weight, 1e4))
            profile = records.Profile(records.ON_CPU, records.NANOSECONDS, stacks)
            items.append((variant, round_index, profile))
    return attribute(per_round_profiles(items), list(variants), variants[0])


def _phases(variants: Sequence[str], names: Sequence[str]) -> list[PhaseStat]:
    """A dissection: an outermost span named after the first function, one phase per other
    function (user text: hostile in the hostile analysis), and the unaccounted rest."""
    stats: list[PhaseStat] = []
    if not names:
        return stats
    root = names[0]
    for index, variant in enumerate(variants):
        factor = 1.0 + 0.2 * index
        children = [(root, name) for name in names[1:]]
        means = [2e-6 * (i + 1) * factor for i in range(len(children))]
        total = sum(means) + 1e-6
        rows = [
            ((root,), False, total),
            *zip(children, [False] * len(children), means, strict=True),
        ]
        rows.append(((root, "unaccounted"), True, 1e-6))
        for path, unaccounted, mean in rows:
            stats.append(
                PhaseStat(variant, None, "sdk", tuple(path), unaccounted, 400, 100, mean,
                          mean * 0.9, mean * 0.98, mean * 1.02, mean / total)
            )  # fmt: skip
    return stats


def _calls(
    rng: np.random.Generator, variants: Sequence[str], functions: Sequence[str], count: int
) -> tuple[list[CallSummary], list[CallPercentiles], list[Comparison]]:
    calls, curves, comparisons = [], [], []
    for f_index, function in enumerate(functions):
        for v_index, variant in enumerate(variants):
            # The last function is called by the last variant only (seed 002's news).
            if f_index == len(functions) - 1 and v_index != len(variants) - 1:
                continue
            for position in POSITIONS:
                scale = 2e-4 if position == "1" else 2e-5
                durations = rng.lognormal(np.log(scale * (1 + v_index)), 0.5, count)
                d = describe(durations, percentiles=(99,))
                calls.append(
                    CallSummary(variant, function, position, d.n, d.total, d.mean, d.median,
                                d.sd, d.min, d.max, d.percentiles[0])
                )  # fmt: skip
                percentiles, seconds = percentile_curve(durations, PERCENTILE_GRID)
                curves.append(CallPercentiles(variant, function, position, percentiles, seconds))
                if v_index and position != "all":
                    comparisons.append(
                        Comparison(f"calls.{function}.{position}", variants[0], variant, 30,
                                   2.0, 1.5, 2.5, 0.001, Verdict.REGRESSED, "geometric-mean")
                    )  # fmt: skip
    return calls, curves, comparisons


def with_profile(analysis: Analysis, **fields: Any) -> Analysis:
    """``analysis`` with these fields of its profile result replaced (one added when it has
    none), as the profile probe's plugin would have made it."""
    others = tuple(r for r in analysis.probe_results if not isinstance(r, ProfileResult))
    return replace(analysis, probe_results=(*others, replace(profile_of(analysis), **fields)))
