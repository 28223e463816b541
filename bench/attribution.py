"""Attribution power: does the attribution name the functions made
slower, and only them?

A program of eight named functions of equal work (bench/cuts.c) against a copy of itself with
some functions made slower, each trial choosing them at random:

- ``instructions``: three of the eight made 1 % slower each (0.375 % of the whole), counted with
  ``--instructions`` over 3 rounds. Named = the functions whose self change is positive and
  beyond noise; the trial is exact when they are exactly the three chosen.
- ``profile``: one of the eight made 10 % slower (1.25 % of the whole), sampled with ``--profile``
  within a 60 s budget (``--max-time``). Named first = the function with the largest self change
  in on-CPU time; also whether that change is beyond noise.

Usage: ``python bench/attribution.py [--trials 10] [--profile-trials 10] [--budget 60s]``
(``--profile-trials 0`` skips sampling, the long part: a budget per trial).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
FUNCTIONS = tuple(
    f"cut_{name}"
    for name in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")
)


def build(directory: Path) -> Path:
    binary = directory / "cuts"
    subprocess.run(
        ["gcc", "-O2", "-fno-omit-frame-pointer", "-o", str(binary), str(BENCH_DIR / "cuts.c")],
        check=True,
    )
    return binary


def command(binary: Path, scale: int, slower: dict[str, int]) -> str:
    per_mille = [str(slower.get(name, 1000)) for name in FUNCTIONS]
    return f"{binary} {scale} {' '.join(per_mille)}"


def cutaway(directory: Path, *arguments: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "cutaway", *arguments],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"cutaway {' '.join(arguments[:2])} failed:\n{done.stderr}")
    return done.stdout


def trial(
    binary: Path, scale: int, slower: dict[str, int], options: list[str], profile: str
) -> tuple[list[dict[str, object]], dict[str, object], float]:
    """One experiment (baseline against the slower copy): its self attribution entries, its
    totals, and its wall time."""
    with tempfile.TemporaryDirectory(prefix="bench-attribution-") as name:
        directory = Path(name)
        start = time.monotonic()
        cutaway(
            directory,
            "run", "-c", command(binary, scale, {}), "-n", "base",
            "-c", command(binary, scale, slower), "-n", "slower", *options,
        )  # fmt: skip
        elapsed = time.monotonic() - start
        document = json.loads(cutaway(directory, "report", "--format", "json"))
    entries = [
        e
        for e in document["attribution"]
        if e["variant"] == "slower" and e["profile"] == profile and e["kind"] == "self"
    ]
    (total,) = [t for t in document["attribution_totals"] if t["profile"] == profile]
    return entries, total, elapsed


def instructions_trials(binary: Path, trials: int, rng: random.Random) -> None:
    exact = 0
    for index in range(trials):
        chosen = set(rng.sample(FUNCTIONS, 3))
        options = ["--instructions", "--rounds", "3", "--warmup", "0"]
        entries, total, elapsed = trial(
            binary, 1_000_000, dict.fromkeys(chosen, 1010), options, "instructions"
        )
        named = {e["function"] for e in entries if e["beyond_noise"] and e["delta"] > 0}
        exact += named == chosen
        deltas = ", ".join(f"{e['function']} {e['delta']:+,.0f}" for e in entries[:4])
        print(
            f"instructions trial {index + 1}: chose {sorted(chosen)}, named {sorted(named)}: "
            f"{'exact' if named == chosen else 'WRONG'}; measured "
            f"{total['measured_delta']:+,.0f} instructions, largest {deltas}; {elapsed:.1f} s",
            flush=True,
        )
    print(f"instructions: exact in {exact} of {trials} trials", flush=True)


def profile_trials(binary: Path, trials: int, budget: str, rng: random.Random) -> None:
    first = beyond = 0
    for index in range(trials):
        chosen = rng.choice(FUNCTIONS)
        options = ["--profile", "--rounds", "1000", "--warmup", "1", "--max-time", budget]
        entries, total, elapsed = trial(binary, 50_000_000, {chosen: 1100}, options, "on-cpu")
        top = entries[0] if entries else None
        named = top is not None and top["function"] == chosen
        first += named
        beyond += named and bool(top and top["beyond_noise"])
        deltas = ", ".join(f"{e['function']} {e['delta'] * 1e3:+.2f} ms" for e in entries[:3])
        print(
            f"profile trial {index + 1}: chose {chosen}, first {top and top['function']}"
            f"{' (beyond noise)' if top and top['beyond_noise'] else ''}; {total['rounds']} "
            f"rounds; largest {deltas}; {elapsed:.1f} s",
            flush=True,
        )
    print(
        f"profile: named first in {first} of {trials} trials ({beyond} of them beyond noise)",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--profile-trials", type=int, default=10)
    parser.add_argument("--budget", default="60s")
    parser.add_argument("--seed", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-cuts-") as name:
        binary = build(Path(name))
        if args.trials:
            instructions_trials(binary, args.trials, rng)
        if args.profile_trials:
            profile_trials(binary, args.profile_trials, args.budget, rng)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
