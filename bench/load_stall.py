"""Coordinated omission: nginx on 127.0.0.1 stopped for 1 s (SIGSTOP, then SIGCONT to its
processes) in the middle of a 10 s run, and the p99 / p99.9 / max each generator reports:

- cw_load, open loop at a fixed rate (``--rate``): corrected (from each request's intended
  send time, as wrk2 does) and uncorrected (from its actual send time);
- cw_load, closed loop (the same connections, no rate): what a closed-loop tool sees;
- wrk (closed loop; its p99.9 read through a Lua ``done`` hook, as ``--latency`` stops at 99);
- ab -k (closed loop; its percentile table stops at 99 and 100).

Each tool gets the same connections, the same 10 s and the same stall at the same second.
Usage: ``python bench/load_stall.py [--rate 2000] [--connections 10] [--seconds 10]
[--stall-at 4] [--stall-for 1]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))

from cutaway.probes.load.generator import generator_path  # noqa: E402
from tests.load_servers import nginx_server  # noqa: E402

WRK_SCRIPT = """
done = function(summary, latency, requests)
  io.write(string.format("cw-p99 %d\\ncw-p999 %d\\ncw-max %d\\ncw-requests %d\\n",
    latency:percentile(99), latency:percentile(99.9), latency.max, summary.requests))
end
"""


def nginx_processes(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [master, *map(int, children)]


def stall_later(pids: list[int], at: float, seconds: float) -> threading.Thread:
    def stall() -> None:
        time.sleep(at)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(seconds)
        for pid in pids:
            os.kill(pid, signal.SIGCONT)

    thread = threading.Thread(target=stall)
    thread.start()
    return thread


def with_stall(argv: list[str], pids: list[int], options: argparse.Namespace) -> str:
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        stall = stall_later(pids, options.stall_at, options.stall_for)
        output, _ = process.communicate(timeout=options.seconds + 60)
        stall.join()
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
        if process.poll() is None:
            process.kill()
            process.wait()
    return output.decode(errors="replace")


def cw_load(target: str, pids: list[int], options: argparse.Namespace, rate: bool) -> dict:  # type: ignore[type-arg]
    path = generator_path()
    assert path is not None, "cw_load is not built: pip install -e ."
    argv = [path, "--target", target, "--connections", str(options.connections)]
    argv += ["--duration", str(options.seconds), "--timeout", "10"]
    if rate:
        argv += ["--rate", str(options.rate)]
    return json.loads(with_stall(argv, pids, options))  # type: ignore[no-any-return]


def row(name: str, requests: float, p99: float, p999: float | None, top: float) -> str:
    p999_text = f"{p999 * 1e3:.1f}" if p999 is not None else "(not reported)"
    return f"| {name} | {requests:,.0f} | {p99 * 1e3:.1f} | {p999_text} | {top * 1e3:.1f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--stall-at", type=float, default=4)
    parser.add_argument("--stall-for", type=float, default=1)
    options = parser.parse_args()
    rows = []
    load_before = os.getloadavg()
    with (
        tempfile.TemporaryDirectory() as directory,
        nginx_server(Path(directory)) as (
            target,
            server,
        ),
    ):
        pids = nginx_processes(server.pid)
        summary = cw_load(target, pids, options, rate=True)
        for view in ("corrected", "uncorrected"):
            total = summary["latency"][view]["total"]
            p = total["percentiles"]
            rows.append(
                row(
                    f"cw_load open loop {options.rate:g}/s, {view}",
                    summary["requests"],
                    p["99"],
                    p["99.9"],
                    total["max"],
                )
            )
        print(f"cw_load open loop: {json.dumps(summary['generator'])}", file=sys.stderr)
        summary = cw_load(target, pids, options, rate=False)
        p = summary["latency"]["uncorrected"]["total"]["percentiles"]
        total = summary["latency"]["uncorrected"]["total"]
        rows.append(
            row("cw_load closed loop", summary["requests"], p["99"], p["99.9"], total["max"])
        )

        script = Path(directory) / "percentiles.lua"
        script.write_text(WRK_SCRIPT)
        output = with_stall(
            [
                *("wrk", "-t1", f"-c{options.connections}", f"-d{options.seconds:g}s"),
                *("-s", str(script), f"http://{target}/"),
            ],
            pids,
            options,
        )
        found = dict(re.findall(r"cw-(\w+) (\d+)", output))
        rows.append(
            row(
                "wrk (closed loop)",
                int(found["requests"]),
                int(found["p99"]) / 1e6,
                int(found["p999"]) / 1e6,
                int(found["max"]) / 1e6,
            )
        )

        csv = Path(directory) / "ab.csv"
        output = with_stall(
            [
                *("ab", "-k", "-q", "-c", str(options.connections), "-t", f"{options.seconds:g}"),
                *("-n", "100000000", "-e", str(csv), f"http://{target}/"),
            ],
            pids,
            options,
        )
        percent = dict(line.split(",") for line in csv.read_text().splitlines()[1:])
        requests = int(re.search(r"Complete requests:\s+(\d+)", output).group(1))  # type: ignore[union-attr]
        rows.append(
            row(
                "ab -k (closed loop)",
                requests,
                float(percent["99"]) / 1e3,
                None,
                float(percent["100"]) / 1e3,
            )
        )
    load_after = os.getloadavg()
    print(
        f"nginx stopped for {options.stall_for:g} s at {options.stall_at:g} s of a "
        f"{options.seconds:g} s run; {options.connections} connections, 1 thread each; load "
        f"average before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} CPUs)\n"
    )
    print("| generator | requests | p99 (ms) | p99.9 (ms) | max (ms) |")
    print("|---|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
