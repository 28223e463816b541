"""The instructions probe end to end: real valgrind (callgrind) on a small C program compiled
here, counted runs separate from the timed runs, the metric ``instructions`` judged like wall,
the attribution naming the function that does more work, and the refusal before anything runs
when valgrind is missing."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cutaway import api
from tests.cutaway_command import cutaway

pytestmark = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="needs valgrind (Debian: valgrind)"
)

PROGRAM = r"""
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) void heavy_work(unsigned long n) {
    unsigned long x = 0; for (unsigned long i = 0; i < n; i++) x += i * i; sink += x; }
__attribute__((noinline)) void light_work(unsigned long n) {
    unsigned long x = 0; for (unsigned long i = 0; i < n; i++) x += i ^ 3; sink += x; }
int main(int argc, char **argv) {
    heavy_work(strtoul(argv[1], 0, 10));
    light_work(strtoul(argv[2], 0, 10));
    return 0; }
"""


def compile_program(directory: Path) -> Path:
    source = directory / "two.c"
    source.write_text(PROGRAM)
    binary = directory / "two"
    subprocess.run(["cc", "-O1", "-o", str(binary), str(source)], check=True)
    return binary


def test_counted_instructions_judge_and_attribute_the_function_doing_more(
    tmp_path: Path,
) -> None:
    binary = compile_program(tmp_path)
    # "same" runs exactly what the baseline runs (an A/A); "more" does 5 % more heavy work.
    result = cutaway(
        "run", "-c", f"{binary} 400000 400000", "-n", "base",
        "-c", f"{binary} 400000 400000", "-n", "same",
        "-c", f"{binary} 420000 400000", "-n", "more",
        "--rounds", "3", "--warmup", "0", "--instructions", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "probe instructions: valgrind callgrind" in result.stderr
    assert "instruction counts are not time" in result.stdout
    database = tmp_path / ".cutaway" / "cutaway.db"
    with sqlite3.connect(database) as raw:
        purposes = raw.execute(
            "SELECT purpose, COUNT(*) FROM runs GROUP BY purpose ORDER BY purpose"
        ).fetchall()
    raw.close()
    assert purposes == [("instructions", 9), ("timed", 9)]
    counted = api.load(db=database).values("instructions")  # read from the counted runs
    assert {name: len(values) for name, values in counted.items()} == dict.fromkeys(
        ("base", "same", "more"), 3
    )
    assert (counted["base"] == counted["same"]).all()  # deterministic
    report = cutaway("report", "--format", "json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    document = json.loads(report.stdout)
    verdicts = {
        c["variant"]: c["verdict"] for c in document["comparisons"] if c["metric"] == "instructions"
    }
    assert verdicts == {"same": "equivalent", "more": "regressed"}
    more = [e for e in document["attribution"] if e["variant"] == "more"]
    first = next(e for e in more if e["kind"] == "self")
    assert (first["function"], first["unit"], first["profile"]) == (
        "heavy_work", "instructions", "instructions"
    )  # fmt: skip
    assert first["delta"] > 0 and first["ci_low"] > 0  # more work, beyond noise
    # The loop's 20,000 more iterations, a few instructions each.
    assert 20_000 * 2 <= first["delta"] <= 20_000 * 10
    (total,) = [t for t in document["attribution_totals"] if t["variant"] == "more"]
    assert total["measured_metric"] == "instructions"
    assert first["delta"] / total["measured_delta"] > 0.99  # it explains the difference
    same = [e for e in document["attribution"] if e["variant"] == "same"]
    assert not any(e["beyond_noise"] for e in same)


def test_valgrind_missing_is_refused_before_anything_runs(tmp_path: Path) -> None:
    bin_directory = tmp_path / "bin"
    bin_directory.mkdir()
    for tool in ("true", "sh"):
        os.symlink(shutil.which(tool) or "", bin_directory / tool)
    result = cutaway(
        "run", "-c", "true", "--instructions", cwd=tmp_path, env={"PATH": str(bin_directory)}
    )
    assert result.returncode == 2
    assert "needs valgrind, which is not on PATH" in result.stderr
    assert "apt-get install valgrind" in result.stderr
    assert "harness overhead" not in result.stderr  # nothing ran
