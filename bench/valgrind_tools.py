"""callgrind against cachegrind for the instructions probe: what each costs and how stable its
count is. The eight-function program (bench/cuts.c) runs alone and under each tool (callgrind
as the probe runs it, with calling contexts; cachegrind without cache simulation), ``--repeat``
times each in turn; per tool: the median CPU time (user + system, read with wait4) against the
program alone, and the distinct instruction counts seen (one distinct count: deterministic).
Usage: ``python bench/valgrind_tools.py [--repeat 5] [--scale 10000000]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from cutaway.probes.instructions.capture import MAX_CALLERS

BENCH_DIR = Path(__file__).resolve().parent
_COUNT = re.compile(r"(?:Collected :|I\s+refs:)\s+([\d,]+)")


def cpu_seconds(argv: list[str]) -> tuple[float, str]:
    """(user + system CPU seconds of ``argv`` and its children, its standard error)."""
    with tempfile.TemporaryFile() as errors:
        pid = os.posix_spawn(
            argv[0],
            argv,
            dict(os.environ),
            file_actions=[(os.POSIX_SPAWN_DUP2, errors.fileno(), 2)],
        )
        _, status, usage = os.wait4(pid, 0)
        errors.seek(0)
        text = errors.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv} failed: {text}")
    return usage.ru_utime + usage.ru_stime, text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scale", type=int, default=10_000_000)
    args = parser.parse_args()
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("needs valgrind")
    with tempfile.TemporaryDirectory(prefix="bench-valgrind-") as name:
        directory = Path(name)
        binary = directory / "cuts"
        subprocess.run(
            ["gcc", "-O2", "-fno-omit-frame-pointer", "-o", str(binary), str(BENCH_DIR / "cuts.c")],
            check=True,
        )
        program = [str(binary), str(args.scale), *["1000"] * 8]
        tools = {
            "alone": [],
            "callgrind": [
                valgrind, "--tool=callgrind", f"--separate-callers={MAX_CALLERS}",
                "--separate-recs=1", f"--callgrind-out-file={directory / 'cg.out'}",
            ],
            "cachegrind": [
                valgrind, "--tool=cachegrind", "--cache-sim=no",
                f"--cachegrind-out-file={directory / 'cc.out'}",
            ],
        }  # fmt: skip
        seconds: dict[str, list[float]] = {tool: [] for tool in tools}
        counts: dict[str, set[int]] = {tool: set() for tool in tools}
        for _ in range(args.repeat):
            for tool, prefix in tools.items():
                cpu, errors = cpu_seconds([*prefix, *program])
                seconds[tool].append(cpu)
                found = _COUNT.search(errors)
                if found:
                    counts[tool].add(int(found[1].replace(",", "")))
    alone = statistics.median(seconds["alone"])
    print(f"program alone: {alone:.3f} s CPU (median of {args.repeat})")
    for tool in ("callgrind", "cachegrind"):
        median = statistics.median(seconds[tool])
        distinct = ", ".join(f"{c:,}" for c in sorted(counts[tool]))
        print(
            f"{tool}: {median:.2f} s CPU, {median / alone:.0f}x the program alone; "
            f"{len(counts[tool])} distinct count(s) in {args.repeat} runs: {distinct}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
