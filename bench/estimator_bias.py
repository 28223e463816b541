"""Estimator bias: does cutaway's estimate, with its `--until` stopping rule, centre on the truth?

Simulated experiments of two variants with a known ratio, no processes: each run's value is
drawn from a noise model, in the round orders the runner uses (cutaway.runner.order), and the
experiment stops the way `cutaway run --until W --max-time T` stops: after the planned rounds,
as soon as the primary metric's interval is narrow enough (cutaway.runner.adaptive), or at the
round budget. The estimate read at the end is cutaway's own (cutaway.stats.paired_ratio) of a
second metric, as a user reads `cpu` while `wall` steers, so what is measured is the estimator
and the stopping rule, free of the machine's noise.

Each scenario prints the mean error of the log estimate (in % of ratio, with its standard
error over the simulated experiments), how many estimates fell below the truth, and the mean
number of rounds. The runner is simulated as it is now (``--rule current``) and, for
comparison, as it was before (``--rule before``): the width ``ci_high - ci_low`` checked after
every round, and every block of orders relabelled on its own draw.

Usage: ``python bench/estimator_bias.py [--experiments 200] [--seed 1]`` (about a minute per
scenario on one core).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from cutaway.runner.adaptive import CHECK_RESAMPLES, relative_width
from cutaway.runner.order import round_order, williams_row_count
from cutaway.stats import paired_ratio

PLANNED_ROUNDS = 10
WARMUP_ROUNDS = 1


@dataclass(frozen=True)
class NoiseModel:
    """What one run measures, as log deviations from its variant's true value.

    ``cpu``: a normal spread; ``wall``: the run's cpu deviation plus waits (normal, and with
    probability ``spike_probability`` an exponential delay of mean ``spike_mean``: interference
    only ever slows a run down). ``first_in_round`` is added to both metrics of the run that
    opens a round (the harness's work between rounds came just before it). ``pattern`` is a
    machine effect that repeats every len(pattern) runs from the start of the experiment (a
    periodic job, an alternation between cores): the same runs get it in every experiment."""

    cpu_sd: float = 0.002
    wall_sd: float = 0.001
    spike_probability: float = 0.05
    spike_mean: float = 0.01
    first_in_round: float = 0.0
    pattern: tuple[float, ...] = ()


@dataclass(frozen=True)
class Scenario:
    name: str
    true_ratio: float
    noise: NoiseModel
    fixed_seed: bool  # every experiment with seed 0 (the default), or seed i for experiment i


@dataclass(frozen=True)
class Outcome:
    log_error: float  # log(estimate) - log(true ratio), of the metric read
    rounds: int


Rule = Callable[[np.ndarray, np.ndarray, int, int], bool]


def width_now(base: np.ndarray, other: np.ndarray, seed: int) -> tuple[float, float] | None:
    estimate = paired_ratio(base, other, resamples=CHECK_RESAMPLES, seed=seed)
    return None if estimate is None else (estimate.ci_low, estimate.ci_high)


def stops_current(
    base: np.ndarray, other: np.ndarray, seed: int, rounds: int, until: float
) -> bool:
    """cutaway.runner.runner.rounds with cutaway.runner.adaptive.widest_interval, today."""
    if rounds % williams_row_count(2) != 0:
        return False
    interval = width_now(base, other, seed)
    return interval is not None and relative_width(*interval) <= until


def stops_before(base: np.ndarray, other: np.ndarray, seed: int, rounds: int, until: float) -> bool:
    """The rule before: ci_high - ci_low, checked after every round."""
    interval = width_now(base, other, seed)
    return interval is not None and interval[1] - interval[0] <= until


def order_before(round_index: int, seed: int) -> list[int]:
    """cutaway.runner.order.round_order for 2 variants before blocks came in cycles: each
    block of 2 rounds relabelled on its own draw."""
    block, row = divmod(round_index, 2)
    relabel = [0, 1]
    random.Random(f"{seed}:{block}").shuffle(relabel)
    return [relabel[value] for value in ([0, 1] if row == 0 else [1, 0])]


def simulate(
    scenario: Scenario, experiment: int, rng: np.random.Generator, rule: str, until: float,
    max_rounds: int,
) -> Outcome:  # fmt: skip
    seed = 0 if scenario.fixed_seed else experiment
    noise = scenario.noise
    true_logs = (0.0, math.log(scenario.true_ratio))
    cpu: list[list[float]] = [[], []]
    wall: list[list[float]] = [[], []]
    stops = stops_current if rule == "current" else stops_before
    order = (
        (lambda r: round_order(2, r, seed))
        if rule == "current"
        else (lambda r: order_before(r, seed))
    )
    run_number = 0
    for round_index in range(-WARMUP_ROUNDS, max_rounds):
        if round_index >= PLANNED_ROUNDS:
            base, other = np.exp(wall[0]), np.exp(wall[1])
            if stops(base, other, seed, round_index, until):
                break
        for position, variant in enumerate(order(round_index)):
            shared = true_logs[variant] + rng.normal(0.0, noise.cpu_sd)
            if position == 0:
                shared += noise.first_in_round
            if noise.pattern:
                shared += noise.pattern[run_number % len(noise.pattern)]
            run_number += 1
            waited = rng.normal(0.0, noise.wall_sd)
            if rng.random() < noise.spike_probability:
                waited += rng.exponential(noise.spike_mean)
            if round_index >= 0:
                cpu[variant].append(shared)
                wall[variant].append(shared + abs(waited))
    read = paired_ratio(np.exp(cpu[0]), np.exp(cpu[1]), resamples=CHECK_RESAMPLES, seed=seed)
    assert read is not None
    return Outcome(read.log_estimate - true_logs[1], len(cpu[0]))


def scenarios() -> list[Scenario]:
    quiet = NoiseModel()
    first = NoiseModel(first_in_round=0.005)
    every_fourth = NoiseModel(pattern=(0.003, 0.0, 0.0, 0.0))
    every_third = NoiseModel(pattern=(0.003, 0.0, 0.0))
    return [
        Scenario("A/A, symmetric noise", 1.0, quiet, fixed_seed=False),
        Scenario("A/B +0.2 %", 1.002, quiet, fixed_seed=False),
        Scenario("A/A, first run of a round +0.5 %", 1.0, first, fixed_seed=False),
        Scenario("A/A, every 4th run +0.3 %, seed 0 always", 1.0, every_fourth, fixed_seed=True),
        Scenario("A/A, every 3rd run +0.3 %, seed 0 always", 1.0, every_third, fixed_seed=True),
        Scenario(
            "A/A, every 3rd run +0.3 %, seed per experiment", 1.0, every_third, fixed_seed=False
        ),
    ]


def summary_row(scenario: Scenario, rule: str, outcomes: list[Outcome]) -> str:
    errors = [100.0 * o.log_error for o in outcomes]
    mean = statistics.fmean(errors)
    error_of_mean = statistics.stdev(errors) / math.sqrt(len(errors))
    below = sum(e < 0 for e in errors)
    above = sum(e > 0 for e in errors)
    sign_p = scipy_stats.binomtest(below, below + above).pvalue if below + above else 1.0
    rounds = statistics.fmean(o.rounds for o in outcomes)
    return (
        f"| {scenario.name} | {rule} | {mean:+.4f} % | {error_of_mean:.4f} % "
        f"| {below}/{len(outcomes)} | {sign_p:.2g} | {rounds:.0f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--experiments", type=int, default=200, help="per scenario (200)")
    parser.add_argument("--until", type=float, default=0.002, help="interval width (0.002)")
    parser.add_argument("--max-rounds", type=int, default=300, help="round budget (300)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the simulated noise")
    parser.add_argument("--rule", choices=("current", "before", "both"), default="both")
    parser.add_argument("--only", help="run only the scenarios whose name contains this")
    options = parser.parse_args()
    rules = ("current", "before") if options.rule == "both" else (options.rule,)
    print(
        f"{options.experiments} simulated experiments per row, --until {100 * options.until:g} %, "
        f"at most {options.max_rounds} rounds, noise seed {options.seed}\n"
    )
    print("| scenario | rule | mean error of the estimate | its standard error "
          "| below the truth | sign test p | mean rounds |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for scenario in scenarios():
        if options.only and options.only not in scenario.name:
            continue
        for rule in rules:
            started = time.monotonic()
            rng = np.random.default_rng(options.seed)  # the same noise for both rules
            outcomes = [
                simulate(scenario, i, rng, rule, options.until, options.max_rounds)
                for i in range(options.experiments)
            ]
            print(summary_row(scenario, rule, outcomes), flush=True)
            print(f"  ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
