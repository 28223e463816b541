"""Folding speed: cutaway's folders of ``perf script`` output (the C one, native/cw_fold.c, and
the Python one, its reference) against ``inferno-collapse-perf``
(single thread, ``-n 1``, and its default threads) and Brendan Gregg's ``stackcollapse-perf.pl``
when it is on PATH, on the same input, in one run; and whether the outputs are identical.

The input is a perf script output given with ``--input``, or one recorded here: the whole system
(``perf record -a -g``) for ``--seconds`` at 999 Hz, so the stacks are as diverse as a real
machine's (a single hot loop would flatter any cache). Each folder runs ``--repeat`` times,
alternating; the figure is the best time (the least disturbed), as MB/s of input.
Usage: ``python bench/fold.py [--input FILE | --seconds 10] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from cutaway.probes.profile.native_fold import fold_file_natively, fold_perf_script, folder_path


def record_input(seconds: float, directory: Path) -> Path:
    data, text = directory / "bench.data", directory / "bench.txt"
    subprocess.run(
        [
            *("perf", "record", "-q", "--no-bpf-event", "-a", "-F", "999", "-g"),
            *("-o", str(data), "--", "sleep", str(seconds)),
        ],
        check=True,
    )
    with text.open("wb") as output:
        subprocess.run(
            ["perf", "script", "-i", str(data)],
            stdout=output,
            stderr=subprocess.DEVNULL,
            check=True,
        )
    return text


def external(argv: list[str]) -> Callable[[Path], str]:
    def run(path: Path) -> str:
        done = subprocess.run([*argv, str(path)], capture_output=True, text=True, check=True)
        return done.stdout

    return run


def ours(path: Path) -> str:
    # Reading and decoding the file is part of the work, as it is for the others.
    return fold_perf_script(path.read_bytes().decode("utf-8", errors="replace"), native=False)


def ours_native(path: Path) -> str:
    # Through the Python API, as the probe and the exports call it: cw_fold reads the file.
    folded = fold_file_natively(path)
    if folded is None:
        raise RuntimeError("cw_fold failed")
    return folded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, help="a perf script output (default: record one)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    folders: dict[str, Callable[[Path], str]] = {}
    if folder_path() is not None:
        folders["cutaway (C, cw_fold)"] = ours_native
    else:
        print("cw_fold not built (pip install .)", file=sys.stderr)
    folders["cutaway (Python)"] = ours
    inferno = shutil.which("inferno-collapse-perf")
    if inferno:
        folders["inferno-collapse-perf -n 1"] = external([inferno, "-n", "1"])
        folders["inferno-collapse-perf (default threads)"] = external([inferno])
    else:
        print("inferno-collapse-perf not found (cargo install inferno)", file=sys.stderr)
    perl = shutil.which("stackcollapse-perf.pl")
    if perl:
        folders["stackcollapse-perf.pl"] = external([perl])
    else:
        print("stackcollapse-perf.pl not found: not packaged in Debian", file=sys.stderr)
    with tempfile.TemporaryDirectory() as directory:
        path = args.input or record_input(args.seconds, Path(directory))
        size = path.stat().st_size
        events = path.read_text(errors="replace").count("\n\n")
        with open("/proc/loadavg") as loadavg:
            load_before = " ".join(loadavg.read().split()[:3])
        best = {name: float("inf") for name in folders}
        outputs: dict[str, str] = {}
        for _ in range(args.repeat):
            for name, fold in folders.items():
                start = time.perf_counter()
                outputs[name] = fold(path)
                best[name] = min(best[name], time.perf_counter() - start)
    with open("/proc/loadavg") as loadavg:
        print(f"load average before/after: {load_before} / {' '.join(loadavg.read().split()[:3])}")
    print(f"input: {size / 1e6:.1f} MB of perf script output, about {events} samples\n")
    print(f"| folder | best of {args.repeat} | MB/s | output identical to inferno's |")
    print("|---|---:|---:|---|")
    reference = outputs.get("inferno-collapse-perf -n 1")
    for name, seconds in best.items():
        same = "-" if reference is None else ("yes" if outputs[name] == reference else "NO")
        print(f"| {name} | {seconds:.3f} s | {size / 1e6 / seconds:.1f} | {same} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
