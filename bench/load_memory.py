"""The generator's memory for 10 million requests: cw_load's peak RSS for 100,000, 1,000,000
and 10,000,000 keep-alive requests against the same nginx on 127.0.0.1, as it reports it
(generator.peak_rss_bytes: VmHWM, the peak since its exec, read at the very end; ru_maxrss from
wait4 would not do: Linux keeps in it the RSS of the Python process it was forked from), and
its RSS sampled from /proc every 0.2 s over the longest run. Latencies go
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


def memory_kib(pid: int) -> tuple[int, int] | None:
    """(VmRSS, VmHWM) of a process, KiB; None once it is gone."""
    try:
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
        return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])
    except (OSError, KeyError, ValueError):
        return None


def run(target: str, requests: int, connections: int) -> tuple[dict, int, list[int]]:  # type: ignore[type-arg]
    """The summary, the peak RSS (KiB) and the RSS samples (KiB) of one run."""
    path = generator_path()
    assert path is not None, "cw_load is not built: pip install -e ."
    argv = [path, "--target", target, "--connections", str(connections)]
    process = subprocess.Popen([*argv, "--requests", str(requests)], stdout=subprocess.PIPE)
    samples: list[int] = []
    peak = [0]

    def sample() -> None:
        while process.poll() is None:
            found = memory_kib(process.pid)
            if found is not None and found[1] > 0:
                samples.append(found[0])
                peak[0] = max(peak[0], found[1])
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        assert process.stdout is not None
        output = process.stdout.read()
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    sampler.join()
    if process.returncode != 0:
        raise RuntimeError(f"cw_load failed ({process.returncode})")
    summary = json.loads(output)
    return summary, summary["generator"].get("peak_rss_bytes", peak[0] * 1024) // 1024, samples


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
            summary, peak_kib, samples = run(target, count, options.connections)
            seconds = time.monotonic() - started
            errors = sum(summary["errors"].values())
            rows.append(
                f"| {count:,} | {summary['requests']:,} | {errors} | {seconds:.0f} s | "
                f"{peak_kib / 1024:.1f} MiB |"
            )
            print(rows[-1], file=sys.stderr)
    load_after = os.getloadavg()
    print(
        f"nginx 1 worker, keep-alive, {options.connections} connections, 1 thread; load average "
        f"before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} CPUs)\n"
    )
    print("| requests asked | completed | errors | wall | peak RSS (VmHWM, reported by cw_load) |")
    print("|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    if samples:
        print(
            f"\nRSS sampled every 0.2 s in the last run: first {samples[0] / 1024:.1f} MiB, "
            f"min {min(samples) / 1024:.1f}, max {max(samples) / 1024:.1f}, "
            f"last {samples[-1] / 1024:.1f} MiB ({len(samples)} samples)"
        )


if __name__ == "__main__":
    main()
