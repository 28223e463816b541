"""The uprobes probe end to end: real bpftrace uprobes on a small threaded C program compiled
here, its calls nested per thread into spans stored with each run; and the refusals before
anything runs (an unknown function, a binary without symbols), which store nothing."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cutaway.probes.base import ProbeError
from cutaway.probes.uprobes import records
from cutaway.probes.uprobes.targets import check_system
from tests.cutaway_command import cutaway


def _why_not() -> str | None:
    try:
        check_system()
    except ProbeError as error:
        return str(error)
    return None if shutil.which("cc") else "needs a C compiler"


REASON = _why_not()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"uprobes impossible here: {REASON}")

PROGRAM = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) int lookup(int x) { volatile int y = x * 7; return y; }
__attribute__((noinline)) int handle(int x) { return lookup(x) + lookup(x + 1); }
static void *worker(void *arg) { long n = (long)arg; long s = 0;
    for (long i = 0; i < n; i++) s += handle((int)i); return (void *)s; }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 3;
    pthread_t thread; pthread_create(&thread, NULL, worker, (void *)n);
    void *other; worker((void *)n); pthread_join(thread, &other);
    printf("%ld\n", (long)other); return 0; }
"""


def compile_program(directory: Path, *flags: str) -> Path:
    source = directory / "server.c"
    source.write_text(PROGRAM)
    binary = directory / "server"
    subprocess.run(["cc", "-O1", "-pthread", *flags, "-o", str(binary), str(source)], check=True)
    return binary


def stored(database: Path, key: str) -> list[bytes]:
    with sqlite3.connect(database) as raw:
        rows = raw.execute(
            "SELECT data FROM run_data WHERE kind = ? AND key = ? ORDER BY run_id",
            (records.KIND, key),
        ).fetchall()
    raw.close()
    return [row[0] for row in rows]


def test_calls_nest_per_thread_into_spans_of_every_run(tmp_path: Path) -> None:
    binary = compile_program(tmp_path)
    result = cutaway(
        "run", "-c", f"{binary} 3", "--rounds", "2", "--warmup", "1",
        "--uprobes", f"{binary}:handle,lookup", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "probe uprobes: uprobes by bpftrace" in result.stderr
    assert f"{binary}: handle, lookup" in result.stderr
    blobs = stored(tmp_path / ".cutaway" / "cutaway.db", records.SPANS_KEY)
    assert len(blobs) == 3  # the warmup run and two counted runs
    for blob in blobs:
        spans = records.decode(blob)
        threads = {span.tid for span in spans}
        assert len(threads) == 2 and len({span.pid for span in spans}) == 1
        for tid in threads:
            handles = [s for s in spans if s.tid == tid and s.name == "handle"]
            lookups = [s for s in spans if s.tid == tid and s.name == "lookup"]
            assert len(handles) == 3 and len(lookups) == 6
            assert all(s.depth == 0 and s.parent is None for s in handles)
            assert all(s.depth == 1 and s.parent == "handle" for s in lookups)
            for lookup in lookups:  # inside its handle, in time
                outer = next(h for h in handles if h.operation == lookup.operation)
                assert outer.start_ns <= lookup.start_ns <= lookup.end_ns <= outer.end_ns
        # Operations are numbered per process over both threads, in order of start.
        assert sorted(s.operation for s in spans if s.depth == 0) == list(range(6))
        assert all(s.end_ns > s.start_ns for s in spans)
    database = tmp_path / ".cutaway" / "cutaway.db"
    with sqlite3.connect(database) as raw:
        assert raw.execute(
            "SELECT COUNT(*) FROM run_data WHERE kind = 'spans-problems'"
        ).fetchone() == (0,)
    raw.close()
    # The dissection and the phase metrics read the phase tables, as for every span source.
    assert "phases from spans: uprobes" in result.stdout
    assert "  lookup" in result.stdout and "  unaccounted" in result.stdout


def test_an_unknown_function_stops_before_anything_is_stored(tmp_path: Path) -> None:
    binary = compile_program(tmp_path)
    result = cutaway("run", "-c", f"{binary} 1", "--uprobes", f"{binary}:handel", cwd=tmp_path)
    assert result.returncode == 2
    assert f"no function 'handel' in {binary}" in result.stderr
    assert "nearest: handle" in result.stderr
    assert "Traceback" not in result.stderr
    database = tmp_path / ".cutaway" / "cutaway.db"
    if database.exists():
        with sqlite3.connect(database) as raw:
            assert raw.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)
        raw.close()


def test_a_binary_without_symbols_is_refused_with_what_to_do(tmp_path: Path) -> None:
    binary = compile_program(tmp_path, "-s")
    result = cutaway("run", "-c", f"{binary} 1", "--uprobes", f"{binary}:handle", cwd=tmp_path)
    assert result.returncode == 2
    assert "has no function symbols" in result.stderr and "debug symbols" in result.stderr


def test_two_builds_compare_by_the_same_function_and_count_its_calls(tmp_path: Path) -> None:
    """One function probed in two builds is one phase: each variant runs its own build, and
    the phase of one is compared with the other's; calls are counted per operation."""
    for build in ("v1", "v2"):  # two inodes: each build gets its own uprobes
        (tmp_path / build).mkdir()
    v1, v2 = compile_program(tmp_path / "v1"), compile_program(tmp_path / "v2")
    report = tmp_path / "report.json"
    result = cutaway(
        "run", "-n", "v1", "-c", f"{v1} 3", "-n", "v2", "-c", f"{v2} 3", "--rounds", "3",
        "--warmup", "0", "--uprobes", f"{v1}:handle,lookup", "--uprobes", f"{v2}:handle,lookup",
        "--export-json", str(report), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(report.read_text())
    rows = {
        (row["variant"], row["key"]): row
        for row in document["phases"]
        if row["source"] == "uprobes"
    }
    for variant in ("v1", "v2"):
        assert rows[(variant, "handle/lookup")]["calls_per_operation"] == 2
        assert rows[(variant, "handle")]["calls_per_run"] == 6  # 3 per thread, 2 threads
    compared = {(c["variant"], c["metric"]) for c in document["phase_comparisons"]}
    assert {("v2", "phase:handle"), ("v2", "phase:handle/lookup")} <= compared
    assert ("v2", "phase:handle/unaccounted") in compared
    counted = {
        (item["variant"], item["binary"], item["function"]): item
        for item in document["function_calls"]
    }
    for variant, binary in (("v1", v1), ("v2", v2)):  # each variant's calls in its own build
        assert counted[(variant, str(binary), "lookup")]["calls_per_operation"] == 2
        assert counted[(variant, str(binary), "lookup")]["calls_per_run"] == 12
    assert ("v1", str(v2), "lookup") not in counted and ("v2", str(v1), "lookup") not in counted
