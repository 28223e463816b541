"""What the benchmarks that drive the `cutaway` command share (bisect_cost.py,
gate_accuracy.py): how to run cutaway, and their records: one JSON object per line in
bench/results/, appended as each is made (a benchmark stopped half-way keeps what it measured),
read back by ``--summarize FILE``. Imported as a sibling module: run the benchmarks as scripts
(``python bench/gate_accuracy.py``)."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"

Record = dict[str, Any]


def cutaway_command() -> list[str]:
    """The installed `cutaway`, else this interpreter's ``python -m cutaway``."""
    found = shutil.which("cutaway")
    return [found] if found else [sys.executable, "-m", "cutaway"]


def new_results(name: str) -> tuple[Path, Path]:
    """A fresh directory for one invocation's raw files, bench/results/NAME-STAMP/, and the
    path of its records file beside it, NAME-STAMP.jsonl."""
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    raw = RESULTS_DIR / f"{name}-{stamp}"
    raw.mkdir()
    return raw, RESULTS_DIR / f"{name}-{stamp}.jsonl"


def append_record(path: Path, record: Record) -> None:
    with path.open("a") as records:
        records.write(json.dumps(record) + "\n")


def read_records(path: str | Path) -> list[Record]:
    with open(path) as records:
        return [json.loads(line) for line in records]
