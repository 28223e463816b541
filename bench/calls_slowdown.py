"""How much the calls probe slows the nscd example's workload, measured by cutaway itself.

Three variants of the same workload as examples/nscd (two getent processes, two passwd and two
services lookups), with nscd running: `plain`; `loaded`, with the interposer preloaded but
timing nothing (what loading one more library costs); and `probed`, timing getpwnam and
getservbyname exactly as the calls probe sets it up (TSC clock where the kernel trusts it,
record files in /dev/shm). cutaway's paired rounds give the ratio of their wall times (and of
the other whole-process metrics) with an interval.

Usage: python bench/calls_slowdown.py [--rounds 200]   (prints the comparison table)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from cutaway.probes.interposer import environment_for, library_path, records_directory, tsc_hz

HERE = Path(__file__).resolve().parent
WORKLOAD = "getent passwd root nobody && getent services http ssh"


def experiment(records: str, rounds: int) -> str:
    env = environment_for(["getpwnam", "getservbyname"], records, tsc_hz=tsc_hz(), environment={})
    inline = ", ".join(f"{key} = {json.dumps(value)}" for key, value in env.items())
    loaded = json.dumps(library_path())
    ctl = HERE.parent / "examples" / "nscd" / "nscd-ctl"
    return f"""
name = "calls probe slowdown on the nscd workload"
rounds = {rounds}
warmup_rounds = 5
shell = true
baseline = "plain"
command = {json.dumps(WORKLOAD)}

[[variants]]
name = "plain"
setup = "{ctl} start"
cleanup = "{ctl} stop"

[[variants]]
name = "loaded"
env = {{ LD_PRELOAD = {loaded} }}

[[variants]]
name = "probed"
env = {{ {inline} }}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    records = records_directory()
    try:
        path = results / "calls-slowdown.toml"
        path.write_text(experiment(str(records), args.rounds))
        report = results / "calls-slowdown.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "cutaway",
                "run",
                str(path),
                "--color",
                "never",
                "--db",
                str(results / "calls-slowdown.db"),
                "--export-json",
                str(report),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    finally:
        shutil.rmtree(records, ignore_errors=True)
    data = json.loads(report.read_text())
    print("| metric | variant vs plain | change | 95 % CI | verdict |")
    print("|---|---|---:|---:|---|")
    for c in data["comparisons"]:
        if c["metric"] in ("wall", "cpu", "max_rss", "minor_faults"):
            print(
                f"| {c['metric']} | {c['variant']} | {c['ratio'] - 1:+.2%} | "
                f"[{c['ci_low'] - 1:+.2%}, {c['ci_high'] - 1:+.2%}] | {c['verdict']} |"
            )
    plain = next(s for s in data["summaries"] if s["variant"] == "plain" and s["metric"] == "wall")
    print(
        f"\nplain wall time per run: median {plain['median'] * 1e3:.2f} ms over {plain['n']} runs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
