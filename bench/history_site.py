"""History site cost: seconds for `cutaway publish DIR` over a store of 1,000 experiments, and
the size of what it writes.

The store is written directly (cutaway.store, as `cutaway run` writes it): NAMES experiment
names, each run as VERSIONS versions (labels v1..vN), 2 variants, 10 counted rounds of the 11
process metrics with 2 % noise, and in the first name a 10 % step at the middle version. Two
layouts of the same 1,000 experiments: 100 names x 10 versions (a team's nightly suite), and
10 names x 100 versions (a long history). Then `cutaway publish` runs as a user runs it, in a
subprocess; the figures are its wall-clock seconds (median of --repeat), with the load average
before and after, and the step it found.

Usage: ``python bench/history_site.py [--experiments 1000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent / "src"))

from cutaway.model import PROCESS_METRICS, Run, RunStatus, Spec, Variant  # noqa: E402
from cutaway.store import Store  # noqa: E402

ROUNDS = 10
NOISE = 0.02
STEP = 0.10


def write_store(path: Path, names: int, versions: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    with Store(str(path)) as store:
        for version in range(1, versions + 1):
            for name_index in range(names):
                spec = Spec(
                    name=f"suite/bench-{name_index:03d}",
                    variants=(
                        Variant(name="baseline", command=("true",)),
                        Variant(name="candidate", command=("true",)),
                    ),
                    baseline="baseline",
                    rounds=ROUNDS,
                )
                experiment = store.create_experiment(spec, {}, f"v{version}", "bench")
                stepped = name_index == 0 and version > versions // 2
                for round_index in range(ROUNDS):
                    for order, variant in enumerate(("baseline", "candidate")):
                        level = 0.01 * (1 + STEP if stepped and variant == "candidate" else 1)
                        metrics = {
                            m.name: level * (1 + rng.gauss(0, NOISE))
                            if m.unit == "seconds"
                            else float(rng.randint(100, 200))
                            for m in PROCESS_METRICS
                        }
                        metrics["cpu"] = metrics["user"] + metrics["sys"]
                        run = Run(variant, round_index, order, RunStatus.OK, 0, None, metrics, 0.0)
                        store.add_run(experiment, run)
                store.finish_experiment(experiment, "complete", None)


def publish_seconds(db: Path, site: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "cutaway", "publish", str(site), "--db", str(db)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results = []
    for names in (100, 10):
        versions = args.experiments // names
        with tempfile.TemporaryDirectory() as directory:
            db = Path(directory) / "store.db"
            started = time.perf_counter()
            write_store(db, names, versions)
            written = time.perf_counter() - started
            load_before = os.getloadavg()[0]
            sites = [Path(directory) / f"site{i}" for i in range(args.repeat)]
            seconds = [publish_seconds(db, site) for site in sites]
            load_after = os.getloadavg()[0]
            site = Path(directory) / "site0"
            size = sum(p.stat().st_size for p in site.iterdir())
            page = next(p for p in site.iterdir() if p.name.startswith("suite-bench-000"))
            document = page.read_text(encoding="utf-8")
            start = document.index('id="cutaway-data">') + len('id="cutaway-data">')
            figures = json.loads(document[start : document.index("</script>", start)])["figures"]
            wall = next(f for f in figures if f["data"]["metric"] == "wall")
            steps = [
                (wall["data"]["series"][s["series"]]["name"], wall["data"]["labels"][s["x"]])
                for s in wall["data"]["steps"]
            ]
            results.append(
                {
                    "experiments": names * versions,
                    "names": names,
                    "versions": versions,
                    "store_written_seconds": round(written, 1),
                    "publish_seconds": [round(s, 2) for s in seconds],
                    "publish_median_seconds": round(statistics.median(seconds), 2),
                    "pages": len(list(site.iterdir())),
                    "site_megabytes": round(size / 1e6, 1),
                    "steps_found_in_the_stepped_name": steps,
                    "load_before": load_before,
                    "load_after": load_after,
                }
            )
            print(json.dumps(results[-1]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
