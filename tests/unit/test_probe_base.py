"""The helpers every probe shares (cutaway.probes.base)."""

from __future__ import annotations

import os

import pytest

from cutaway.probes.base import Launch, process_cost, stop_child


def test_process_cost_is_the_median_extra_wall_time_never_below_zero() -> None:
    env = dict(os.environ)
    sleeper, quick = Launch(["sleep", "0.02"], env), Launch(["true"], env)
    # 20 ms of sleep, less whatever a busy machine adds to `true` now and then
    assert process_cost(sleeper, quick, pairs=5) >= 0.01
    assert process_cost(quick, sleeper, pairs=5) == 0.0  # faster than plain: clamped


def test_a_child_an_interrupt_stopped_us_waiting_for_is_killed_and_reaped() -> None:
    running = os.posix_spawnp("sleep", ["sleep", "30"], dict(os.environ))
    stop_child(running)
    with pytest.raises(ChildProcessError):  # reaped: no zombie left
        os.waitpid(running, os.WNOHANG)


def test_a_child_the_wait_had_reaped_when_the_interrupt_landed_is_no_error() -> None:
    # Ctrl-C landing just after waitpid returned: the handler raises with the child gone.
    reaped = os.posix_spawnp("true", ["true"], dict(os.environ))
    os.waitpid(reaped, 0)
    stop_child(reaped)  # ProcessLookupError before
