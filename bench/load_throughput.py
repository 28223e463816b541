"""Requests per second against the same nginx on 127.0.0.1, keep-alive, closed loop with the
same number of connections and the same number of threads (``--threads``; ab has only one):
cutaway's generator (cw_load) beside ``wrk`` and ``ab -k``, in one run, in rotating order,
``--rounds`` times; and what each generator costs in CPU per request (its own user + system
time, from wait4, over the requests it completed).

nginx runs with one worker (tests/load_servers.py); the three generators compete with it for
the same cores, which is the point: a generator that needs less CPU per request leaves more to
the server. The share of a core nginx's worker was busy during each run is printed too: near
100 %, the rate is the server's limit, not the generator's. The figures are medians over the
rounds; the load average before and after is printed, since the machine is shared.
Usage: ``python bench/load_throughput.py [--rounds 5] [--seconds 5] [--connections 10]
[--threads 1]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))

from cutaway.metrics import process  # noqa: E402
from cutaway.probes.load.generator import generator_path  # noqa: E402
from tests.load_servers import nginx_server  # noqa: E402


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds used so far by ``pids`` (nginx's workers)."""
    return sum(process.read_stat(pid, "cpu") for pid in pids)


def timed(argv: list[str]) -> tuple[str, float]:
    """Runs argv to the end: its standard output and its CPU seconds (user + system)."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert process.stdout is not None
    output = process.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({process.returncode}): {output[-2000:]}")
    return output, usage.ru_utime + usage.ru_stime


def run_cw_load(target: str, connections: int, seconds: float, threads: int) -> tuple[float, float]:
    path = generator_path()
    assert path is not None, "cw_load is not built: pip install -e ."
    argv = [path, "--target", target, "--connections", str(connections), "--threads", str(threads)]
    output, cpu = timed([*argv, "--duration", str(seconds)])
    summary = json.loads(output)
    return summary["throughput"], cpu / max(summary["requests"], 1)


def run_wrk(target: str, connections: int, seconds: float, threads: int) -> tuple[float, float]:
    output, cpu = timed(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s", f"http://{target}/"]
    )
    rate = float(re.search(r"Requests/sec:\s+([0-9.]+)", output).group(1))  # type: ignore[union-attr]
    requests = int(re.search(r"(\d+) requests in", output).group(1))  # type: ignore[union-attr]
    return rate, cpu / max(requests, 1)


def run_ab(target: str, connections: int, seconds: float, threads: int) -> tuple[float, float]:
    # ab has one thread whatever --threads says. -t caps the time; -n after it lifts ab's
    # implied 50,000-request cap.
    argv = ["ab", "-k", "-q", "-c", str(connections), "-t", f"{seconds:g}", "-n", "100000000"]
    output, cpu = timed([*argv, f"http://{target}/"])
    rate = float(re.search(r"Requests per second:\s+([0-9.]+)", output).group(1))  # type: ignore[union-attr]
    requests = int(re.search(r"Complete requests:\s+(\d+)", output).group(1))  # type: ignore[union-attr]
    return rate, cpu / max(requests, 1)


TOOLS = {"cw_load": run_cw_load, "wrk": run_wrk, "ab -k": run_ab}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1, help="of cw_load and wrk (ab has one)")
    options = parser.parse_args()
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in TOOLS}
    load_before = os.getloadavg()
    names = list(TOOLS)
    busy: dict[str, list[float]] = {name: [] for name in TOOLS}
    with (
        tempfile.TemporaryDirectory() as directory,
        nginx_server(Path(directory)) as (target, server),
    ):
        workers = process.tree(server.pid)[1:]  # the master's children: its one worker
        for round_number in range(options.rounds):
            order = names[round_number % len(names) :] + names[: round_number % len(names)]
            for name in order:
                before, started = _cpu_seconds(workers), time.monotonic()
                rate, cpu = TOOLS[name](
                    target, options.connections, options.seconds, options.threads
                )
                busy[name].append((_cpu_seconds(workers) - before) / (time.monotonic() - started))
                results[name].append((rate, cpu))
                print(f"round {round_number + 1} {name}: {rate:,.0f} req/s", file=sys.stderr)
    load_after = os.getloadavg()
    print(
        f"nginx 1 worker, keep-alive, {options.connections} connections, "
        f"{options.threads} thread(s) per generator (ab: 1), "
        f"{options.rounds} rounds x {options.seconds:g} s, rotating order; "
        f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
        f"({os.cpu_count()} CPUs)\n"
    )
    print(
        "| generator | requests/s (median) | min .. max | CPU per request (median) "
        "| nginx worker busy (median) |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, runs in results.items():
        rates = [rate for rate, _ in runs]
        cpu = statistics.median(cpu for _, cpu in runs)
        print(
            f"| {name} | {statistics.median(rates):,.0f} | {min(rates):,.0f} .. "
            f"{max(rates):,.0f} | {cpu * 1e6:.1f} us | {statistics.median(busy[name]):.0%} |"
        )
    print()
    for other in names[1:]:
        print(paired_ratio("cw_load", other, results))


def paired_ratio(name: str, other: str, results: dict[str, list[tuple[float, float]]]) -> str:
    """name's rate over other's, paired by round (the two ran minutes apart at most, on the same
    machine state): the geometric mean of the per-round ratios with a 95 % t interval."""
    import math

    from scipy import stats

    logs = [math.log(a / b) for (a, _), (b, _) in zip(results[name], results[other], strict=True)]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return f"{name} / {other}: {math.exp(mean):.3f} (one round: no interval)"
    half = stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return (
        f"{name} / {other}, paired by round: {math.exp(mean):.3f} "
        f"[{math.exp(mean - half):.3f}, {math.exp(mean + half):.3f}] (95 %, {len(logs)} rounds)"
    )


if __name__ == "__main__":
    main()
