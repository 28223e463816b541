"""The generator's memory for 10 million requests: cw_load's peak RSS (ru_maxrss from wait4)
for 100,000, 1,000,000 and 10,000,000 keep-alive requests against the same nginx on
127.0.0.1, and its RSS sampled from /proc every second during the longest run. Latencies go
to fixed-size HdrHistograms (12 of 270 KB per thread), so the figure should not grow with the
number of requests.
Usage: ``python bench/load_memory.py [--counts 100000,1000000,10000000] [--connections 20]``.
"""

from __future__ import annotations

import argparse
import json
import os
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


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def run(target: str, requests: int, connections: int) -> tuple[dict, int, list[int]]:  # type: ignore[type-arg]
    path = generator_path()
    assert path is not None, "cw_load is not built: pip install -e ."
    argv = [path, "--target", target, "--connections", str(connections)]
    process = subprocess.Popen([*argv, "--requests", str(requests)], stdout=subprocess.PIPE)
    samples: list[int] = []

    def sample() -> None:
        while process.poll() is None:
            value = rss_kib(process.pid)
            if value is not None:
                samples.append(value)
            time.sleep(1.0)

    sampler = threading.Thread(target=sample)
    sampler.start()
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    sampler.join()
    if process.returncode != 0:
        raise RuntimeError(f"cw_load failed ({process.returncode})")
    return json.loads(output), usage.ru_maxrss, samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="100000,1000000,10000000")
    parser.add_argument("--connections", type=int, default=20)
    options = parser.parse_args()
    counts = [int(text) for text in options.counts.split(",")]
    load_before = os.getloadavg()
    rows = []
    samples: list[int] = []
    with tempfile.TemporaryDirectory() as directory, nginx_server(Path(directory)) as (target, _):
        for count in counts:
            started = time.monotonic()
            summary, max_rss_kib, samples = run(target, count, options.connections)
            seconds = time.monotonic() - started
            errors = sum(summary["errors"].values())
            rows.append(
                f"| {count:,} | {summary['requests']:,} | {errors} | {seconds:.0f} s | "
                f"{max_rss_kib / 1024:.1f} MiB |"
            )
            print(rows[-1], file=sys.stderr)
    load_after = os.getloadavg()
    print(
        f"nginx 1 worker, keep-alive, {options.connections} connections, 1 thread; load average "
        f"before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} CPUs)\n"
    )
    print("| requests asked | completed | errors | wall | peak RSS (ru_maxrss) |")
    print("|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    if samples:
        print(
            f"\nRSS sampled each second in the last run: first {samples[0] / 1024:.1f} MiB, "
            f"min {min(samples) / 1024:.1f}, max {max(samples) / 1024:.1f}, "
            f"last {samples[-1] / 1024:.1f} MiB ({len(samples)} samples)"
        )


if __name__ == "__main__":
    main()
