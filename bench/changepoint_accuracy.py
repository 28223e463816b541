"""Change-point detection on synthetic series: cutaway's own (cutaway.stats.changepoints)
against Apache Otava, the table in docs/performance.md ("Change points in a history").

    .venv/bin/python bench/changepoint_accuracy.py cutaway
    python3 -m venv /tmp/otava && /tmp/otava/bin/pip install apache-otava numpy
    /tmp/otava/bin/python bench/changepoint_accuracy.py otava
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

Detector = Callable[[np.ndarray], list[int]]  # type: ignore[type-arg]


def detector(which: str, alpha: float) -> Detector:
    if which == "otava":
        from otava.analysis import compute_change_points  # type: ignore[import-not-found]

        def otava(series: np.ndarray) -> list[int]:  # type: ignore[type-arg]
            found, _ = compute_change_points(
                [float(v) for v in series], window_len=50, max_pvalue=alpha
            )
            return [int(c.index) for c in found]

        return otava
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from cutaway.stats.changepoints import change_points

    def own(series: np.ndarray) -> list[int]:  # type: ignore[type-arg]
        return [c.index for c in change_points(series, alpha=alpha).change_points]

    return own


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "cutaway"
    alpha = float(sys.argv[2]) if len(sys.argv) > 2 else 0.001
    detect = detector(which, alpha)
    counts = dict.fromkeys(
        ("step_near", "step_extra", "small_step_near", "drift_flagged", "noise_false"), 0
    )
    started = time.perf_counter()
    for seed in range(50):
        rng = np.random.default_rng(seed)
        found = detect(np.r_[rng.normal(100, 1, 15), rng.normal(103, 1, 15)])
        counts["step_near"] += len(found) == 1 and abs(found[0] - 15) <= 1
        counts["step_extra"] += len(found) > 1
        found = detect(np.r_[rng.normal(1, 0.01, 12), rng.normal(1.02, 0.01, 12)])
        counts["small_step_near"] += len(found) == 1 and abs(found[0] - 12) <= 1
        counts["drift_flagged"] += bool(detect(100 + np.linspace(0, 8, 30) + rng.normal(0, 1, 30)))
        counts["noise_false"] += len(detect(np.random.default_rng(1000 + seed).normal(100, 1, 30)))
    seconds = time.perf_counter() - started
    short = 0
    for seed in range(50):
        rng = np.random.default_rng(seed)
        short += detect(np.r_[rng.normal(1, 0.01, 4), rng.normal(1.05, 0.01, 4)]) == [4]
    print(which, json.dumps({**counts, "short_step_exact": short, "seconds": round(seconds, 2)}))


if __name__ == "__main__":
    main()
