"""What a block saves: N runs of ``/bin/true`` through one ``ForkServer.run_block()`` against N
``ForkServer.run()`` calls, alternating, with one server each, a few repetitions.

For each way and repetition: the wall per run as the client sees it (elapsed / N), the median
wall the server measured (the timed interval of a run; its mean too), the time between runs
(elapsed minus the runs' walls, per run), the CPU per run of the client process and of the
server process (from /proc/PID/schedstat: without the children), and the children's own CPU
per run (user + sys from wait4). Run it without ``nice``: the figures are
about scheduling too. Usage: ``python bench/forkserver_block.py [--runs 2000] [--repetitions
5]``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from cutaway.runner.forkserver import BlockCommand, ForkServer, RawResult

TRUE = BlockCommand("/bin/true", ("true",), {}, None)


def cpu_ns(pid: int) -> int:
    """CPU time a process (all its threads, not its children) has used, in ns."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def by_run(server: ForkServer, runs: int, devnull: int) -> list[RawResult]:
    return [
        server.run("/bin/true", ["true"], {}, None, None, devnull, devnull) for _ in range(runs)
    ]


def by_block(server: ForkServer, runs: int, devnull: int) -> list[RawResult]:
    outcome = server.run_block([TRUE], [0] * runs, None, devnull, devnull, seconds=math.inf)
    assert outcome.stopped == "done"
    return list(outcome.results)


def measure(
    way: Callable[[ForkServer, int, int], list[RawResult]], runs: int, devnull: int
) -> dict[str, float]:
    with ForkServer() as server:
        way(server, 20, devnull)  # warm: the server's first spawns, the block's file
        server_pid = server.server_pid
        assert server_pid is not None
        client_before, server_before = cpu_ns(os.getpid()), cpu_ns(server_pid)
        started = time.perf_counter_ns()
        results = way(server, runs, devnull)
        elapsed = time.perf_counter_ns() - started
        client_cpu = cpu_ns(os.getpid()) - client_before
        server_cpu = cpu_ns(server_pid) - server_before
    assert len(results) == runs and all(result.exit_code == 0 for result in results)
    walls = [result.wall_ns for result in results]
    return {
        "elapsed/run": elapsed / runs,
        "between runs": (elapsed - sum(walls)) / runs,
        "median wall": statistics.median(walls),
        "mean wall": statistics.fmean(walls),
        "client cpu/run": client_cpu / runs,
        "server cpu/run": server_cpu / runs,
        "child cpu/run": sum(result.user_ns + result.sys_ns for result in results) / runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repetitions", type=int, default=5)
    arguments = parser.parse_args()
    devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    print(f"load: {os.getloadavg()}; {arguments.runs} runs of /bin/true each; figures in µs")
    columns = ["elapsed/run", "between runs", "median wall", "mean wall", "client cpu/run",
               "server cpu/run", "child cpu/run"]  # fmt: skip
    print(f"{'':>14}" + "".join(f"{column:>15}" for column in columns))
    for repetition in range(arguments.repetitions):
        for name, way in (("run()", by_run), ("run_block()", by_block)):
            figures = measure(way, arguments.runs, devnull)
            cells = "".join(f"{figures[column] / 1000:>15.1f}" for column in columns)
            print(f"{repetition} {name:>12}{cells}")


if __name__ == "__main__":
    main()
