"""How often `cutaway history` finds a 10 % step of wall time over six versions, and how often
it flags a step in six versions without one, by rounds per version and drift between
experiments: the figures in docs/performance.md ("A 10 % step in six versions").

Each version is simulated as the store holds it: ROUNDS runs of a 20 ms program with 8 % noise
per run (log-normal), one run in ten slowed 1.5 to 3 times, and the whole experiment drifting by
DRIFT (normal, relative); the point is the runs' median with its standard error as history
computes it (cutaway.history.median_standard_error). Detection counts a single step found at v4.

    .venv/bin/python bench/history_steps.py [--series 300]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from cutaway.history import HISTORY_ALPHA, median_standard_error
from cutaway.stats.changepoints import change_points

VERSIONS = 6
RUN_NOISE = 0.08
SLOWED_SHARE = 0.1


def history(
    rng: np.random.Generator, step: float, drift: float, rounds: int
) -> tuple[list[float], list[float]]:
    values, errors = [], []
    for version in range(VERSIONS):
        level = 0.020 * (1 + (step if version >= VERSIONS // 2 else 0)) * (1 + rng.normal(0, drift))
        runs = level * np.exp(rng.normal(0, RUN_NOISE, rounds))
        slowed = rng.random(rounds) < SLOWED_SHARE
        runs[slowed] *= rng.uniform(1.5, 3.0, int(slowed.sum()))
        values.append(float(np.median(runs)))
        errors.append(median_standard_error(runs))
    return values, errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=300, help="histories per cell (300)")
    args = parser.parse_args()
    print(f"alpha {HISTORY_ALPHA}, {args.series} histories per cell, seeds 0..{args.series - 1}")
    print("| rounds per version | drift between experiments | 10 % step found at v4 |"
          " t test alone | no step: a step flagged | t test alone |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|")
    for rounds in (10, 30):
        for drift in (0.0, 0.02, 0.04):
            found = found_t = false = false_t = 0
            for seed in range(args.series):
                rng = np.random.default_rng(seed)
                values, errors = history(rng, 0.0, drift, rounds)
                false += bool(
                    change_points(values, alpha=HISTORY_ALPHA, standard_errors=errors).change_points
                )
                false_t += bool(change_points(values, alpha=HISTORY_ALPHA).change_points)
                values, errors = history(rng, 0.10, drift, rounds)
                steps = change_points(values, alpha=HISTORY_ALPHA, standard_errors=errors)
                found += [c.index for c in steps.change_points] == [VERSIONS // 2]
                plain = change_points(values, alpha=HISTORY_ALPHA)
                found_t += [c.index for c in plain.change_points] == [VERSIONS // 2]
            share = lambda count: f"{count / args.series:.0%}"  # noqa: E731
            print(
                f"| {rounds} | {drift:.0%} | {share(found)} | {share(found_t)} | {share(false)} |"
                f" {share(false_t)} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
