"""CPU time a hypervisor gave to other machines (steal), read from /proc/stat when an experiment
starts and ends: a virtual machine whose host is busy runs each run at a less even pace. Its own
module, so that reports read it without importing what captures the environment."""

from __future__ import annotations

from collections.abc import Mapping


def cpu_ticks() -> list[int] | None:
    """[all CPU time since boot, the part of it a hypervisor gave to others (steal)], in clock
    ticks summed over the CPUs (the first line of /proc/stat); None where it cannot be read."""
    try:
        with open("/proc/stat", "rb") as file:
            fields = file.readline().split()
    except OSError:
        return None
    # cpu user nice system idle iowait irq softirq steal [guest guest_nice: within user, nice]
    if len(fields) < 9 or fields[0] != b"cpu":
        return None
    try:
        times = [int(field) for field in fields[1:9]]
    except ValueError:
        return None
    return [sum(times), times[7]]


CPU_TICKS_KEYS = ("cpu_ticks_start", "cpu_ticks_end")  # read as steal_share, not shown raw


def steal_share(environment: Mapping[str, object]) -> float | None:
    """The share of all CPU time, from the experiment's start to its end, that a hypervisor took
    (steal); None when either reading is missing or they do not make sense."""
    start, end = environment.get("cpu_ticks_start"), environment.get("cpu_ticks_end")
    if not (_two_counts(start) and _two_counts(end)):
        return None
    assert isinstance(start, list) and isinstance(end, list)
    total, steal = end[0] - start[0], end[1] - start[1]
    if total <= 0 or not 0 <= steal <= total:
        return None
    return float(steal / total)


def _two_counts(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(count, int) and not isinstance(count, bool) for count in value)
    )
