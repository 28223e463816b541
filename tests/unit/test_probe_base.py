"""The helpers every probe shares (cutaway.probes.base)."""

from __future__ import annotations

import os

from cutaway.probes.base import Launch, process_cost


def test_process_cost_is_the_median_extra_wall_time_never_below_zero() -> None:
    env = dict(os.environ)
    sleeper, quick = Launch(["sleep", "0.02"], env), Launch(["true"], env)
    # 20 ms of sleep, less whatever a busy machine adds to `true` now and then
    assert process_cost(sleeper, quick, pairs=5) >= 0.01
    assert process_cost(quick, sleeper, pairs=5) == 0.0  # faster than plain: clamped
