"""The profile probe's own cost and its own processes: the per-sample cost a number when every
pair of runs shows it, else the bound this measurement gives, never "too little to measure";
in a system-wide profile, this cutaway's processes told from another experiment's."""

from __future__ import annotations

import os
import statistics

import pytest

from cutaway.probes.profile.capture import (
    SYSTEM_WIDE_FIELDS,
    cost_text,
    read_perf_script,
    sampling_cost,
)
from cutaway.probes.profile.fold import Folder, FoldOptions


def test_a_cost_every_pair_shows_is_their_median_per_sample() -> None:
    # 0.3 s of CPU alone at 1,000 Hz: 300 samples; 25 ms added -> 83 µs per sample.
    cost = sampling_cost([0.024, 0.025, 0.027, 0.026, 0.023], [0.3] * 5, 1000)
    assert cost.resolved
    assert cost.per_sample == pytest.approx(0.025 / 300)
    assert cost.fraction == pytest.approx(0.025 / 0.3)
    assert cost_text(cost).startswith("per-sample cost measured as the CPU time")


def test_a_cost_the_pairs_do_not_resolve_is_given_as_a_bound() -> None:
    # A busy machine: one pair shows less CPU time sampled than alone. The median (+12 ms)
    # would have been reported as a cost, a negative one as "too little to measure".
    cost = sampling_cost([0.012, -0.004, 0.030, 0.015, 0.002], [0.3] * 5, 1000)
    assert not cost.resolved
    assert cost.per_sample == 0.0 and cost.fraction == 0.0
    assert cost.bound == pytest.approx(0.030 / 300)
    assert cost_text(cost) == (
        "per-sample cost below 100 µs: not every pair showed it, measured as the CPU time "
        "sampling adds to a CPU-bound program, 5 alternating pairs of runs with about 300 "
        "samples each"
    )


def test_no_pair_showing_any_cost_still_gives_a_bound() -> None:
    cost = sampling_cost([-0.001, 0.0, -0.002], [0.3] * 3, 1000)
    assert not cost.resolved and 0 < cost.bound < 1e-9  # no noise seen: the clock's resolution
    assert "below" in cost_text(cost)


def test_a_bound_is_never_below_the_noise_of_the_runs_alone() -> None:
    # The pairs' differences are tiny, but the runs alone vary by 10 ms: a cost below that
    # cannot be told apart (a bound of "0.00308 ns" was printed on a busy machine).
    plains = [0.30, 0.31, 0.29, 0.30, 0.30]
    cost = sampling_cost([3e-9, -0.004, 1e-9, -0.002, 2e-9], plains, 1000)
    assert not cost.resolved
    assert cost.bound == pytest.approx(statistics.stdev(plains) / 300)
    assert cost_text(cost).startswith("per-sample cost below 23.6 µs")


def test_a_system_wide_profile_counts_this_cutaways_processes_only_as_its_own() -> None:
    # perf script -F +pid of a system-wide profile: this cutaway (any name), its fork server,
    # and another experiment's cutaway and fork server on the same machine.
    me = str(os.getpid())
    lines = [
        (f"python3 {me}/{me}", "harness_loop"),
        ("cw_forkserver 7001/7001", "spawn"),
        ("cutaway 9001/9001", "other_loop"),
        ("cw_forkserver 9002/9002", "other_spawn"),
        ("nginx 500/500", "serve"),
    ]
    text = "".join(
        f"{header} [000]  1.{index:09d}:    1000 cpu-clock/freq=999/: \n"
        f"\t    1000 {function}+0x1 (/usr/bin/x)\n\n"
        for index, (header, function) in enumerate(lines)
    )
    own = frozenset({me, "7001"})
    (on_cpu,) = read_perf_script(text, Folder(FoldOptions()), own=own)
    assert set(on_cpu.stacks) == {
        "cutaway;harness_loop",
        "cw_forkserver;spawn",
        "cutaway(other);other_loop",
        "cw_forkserver(other);other_spawn",
        "nginx;serve",
    }
    # Not system-wide: process names as perf wrote them.
    (alone,) = read_perf_script(text, Folder(FoldOptions()))
    assert "cutaway;other_loop" in alone.stacks and "python3;harness_loop" in alone.stacks


# perf script of a system-wide profile as perf 6.1 printed it with `-F +pid` alone: the
# scheduler's events without their stacks, each a single line, no blank line after it.
STACKLESS = (
    "            perf 10863/10863 [000]  4683.288099657:  sched:sched_switch: prev_comm=perf "
    "prev_pid=10863 prev_prio=120 prev_state=D ==> next_comm=migration/0 next_pid=18 "
    "next_prio=0\n"
    "     migration/0    18/18    [000]  4683.288155223:  sched:sched_switch: "
    "prev_comm=migration/0 prev_pid=18 prev_prio=0 prev_state=S ==> next_comm=cutaway "
    "next_pid=5465 next_prio=120\n"
    "cutaway  5465/5465  [000]  4683.289077978:    1001001 cpu-clock/freq=999/: \n"
    "\t          1aee3f _PyObject_Free+0x5f (/usr/lib/libpython3.11.so.1.0)\n"
    "\t    7f1ed385e380 [unknown] ([unknown])\n"
    "\n"
    "     migration/0    18/18    [000]  4683.290000000:  sched:sched_switch: "
    "prev_comm=migration/0 prev_pid=18 prev_prio=0 prev_state=S ==> next_comm=perf "
    "next_pid=10863 next_prio=120\n"
)


def test_an_event_printed_without_its_stack_takes_no_other_events_stack() -> None:
    on_cpu, off_cpu = read_perf_script(STACKLESS, Folder(FoldOptions()))
    # The sample after the two stackless switches is counted, under its own process.
    assert on_cpu.events == 1
    assert set(on_cpu.stacks) == {"cutaway;[unknown];_PyObject_Free"}
    # perf's switch (out at .288099657, in at .290000000) is perf's, without cutaway's frames.
    assert off_cpu.stacks == {"perf": 1_900_343}


def test_a_system_wide_profile_asks_perf_script_for_the_stacks_of_every_event() -> None:
    fields = SYSTEM_WIDE_FIELDS.split(",")
    assert {"+pid", "+ip", "+sym", "+dso"} <= set(fields)
