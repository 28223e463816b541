"""The C span SDK (native/include/cutaway/span.h) in real processes, built with
AddressSanitizer and UBSan: off without cutaway, its records through libcwspans.so (as
installed, and built instrumented from the same source) with threads, fork, exec, unbalanced
spans and a name too long; the C side of the shared test vector; and whole experiments with
`cutaway run --spans` over a C program, a Python program using cutaway.spans, and OTLP JSON
written to $CUTAWAY_OTLP_FILE, down to the JSON report's phases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cutaway.probes.span_model import nest, span_name
from cutaway.probes.spans.records import (
    LIBRARY_VARIABLE,
    environment_for,
    read_span_file,
    span_files,
)
from tests.cutaway_command import cutaway
from tests.native_build import NATIVE, ROOT, SANITIZERS, compile_native

PROGRAM_SOURCE = NATIVE / "tests" / "cw_span_test_program.c"
OTLP_FIXTURE = ROOT / "tests" / "fixtures" / "otlp" / "two-services.jsonl"
# ASan's leak checker runs at exit; ptrace-based tools are not involved here.
SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
    "UBSAN_OPTIONS": "halt_on_error=1",
}


@pytest.fixture(scope="module")
def program(native_build: Path) -> str:
    include = f"-I{NATIVE / 'include'}"
    return compile_native(
        native_build / "program", [PROGRAM_SOURCE], include, "-O1", "-pthread", *SANITIZERS
    )


@pytest.fixture(scope="module")
def instrumented_writer(native_build: Path) -> str:
    """libcwspans.so built from cw_calls.c as setup.py builds it, plus the sanitizers."""
    return compile_native(
        native_build / "libcwspans.so", [NATIVE / "cw_calls.c"],
        f"-I{NATIVE}", "-DCW_SPANS_LIBRARY",
        "-O1", "-fPIC", "-shared", "-fvisibility=hidden", *SANITIZERS, "-ldl", "-pthread",
    )  # fmt: skip


def _run(program: str, args: Sequence[str], env: dict[str, str]) -> str:
    result = subprocess.run(
        [program, *args], env={**os.environ, **SANITIZER_ENV, **env},
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert "runtime error" not in result.stderr, result.stderr  # UBSan
    return result.stdout


def _events(directory: Path) -> list[Any]:
    return [read_span_file(path) for path in span_files(directory)]


def test_without_cutaway_spans_are_off_and_write_nothing(program: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUTAWAY_SPANS")}
    result = subprocess.run([program, "3"], env=env, capture_output=True, text=True, check=True)
    assert result.stdout == "enabled=0\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("writer", ["installed", "instrumented"])
def test_threads_and_fork_each_nest_in_their_own_file(
    program: str, instrumented_writer: str, tmp_path: Path, writer: str
) -> None:
    env = environment_for(tmp_path)
    if writer == "instrumented":
        env[LIBRARY_VARIABLE] = instrumented_writer
    assert _run(program, ["4", "threads"], env) == "enabled=1\n"
    (threads,) = _events(tmp_path)
    nesting = nest(threads.events)
    assert nesting.unbalanced == () and threads.problems == () and threads.dropped_records == 0
    searches = [s for s in nesting.spans if s.name == "search"]
    assert len(searches) == 8 and len({s.tid for s in searches}) == 2
    assert sorted(s.operation for s in searches) == list(range(8))
    first = [s for s in nesting.spans if s.operation == 0]
    assert [(s.name, s.depth, s.parent) for s in first] == [
        ("search", 0, None),
        ("decode", 1, "search"),
        ("retrieve", 1, "search"),
        ("fetch", 2, "retrieve"),
        ("test filter", 1, "search"),
        ("test filter", 1, "search"),
        ("test filter", 1, "search"),
    ]
    for path in span_files(tmp_path):
        path.unlink()
    _run(program, ["2", "fork"], env)
    parent, child = _events(tmp_path)
    assert child.ppid == parent.pid
    assert [s.name for s in nest(child.events).spans if s.depth == 0] == ["search"]
    assert child.events[0].time_ns > parent.events[-1].time_ns  # the child's own file


def test_exec_starts_the_next_file_of_the_same_pid(program: str, tmp_path: Path) -> None:
    _run(program, ["2", "exec"], environment_for(tmp_path))
    before, after = _events(tmp_path)
    assert before.pid == after.pid and (before.sequence, after.sequence) == (0, 1)
    assert len([s for s in nest(after.events).spans if s.depth == 0]) == 1


def test_unbalanced_and_too_long_names_are_reported_and_nothing_else_lost(
    program: str, tmp_path: Path
) -> None:
    _run(program, ["2", "unbalanced"], environment_for(tmp_path))
    (span_file,) = _events(tmp_path)
    nesting = nest(span_file.events)
    assert len([s for s in nesting.spans if s.name == "search"]) == 2
    messages = [problem.message for problem in nesting.unbalanced]
    assert len(messages) == 2
    assert "end of 'ghost' without a begin" in messages[0]
    assert "begin of 'left open' without an end (still open" in messages[1]
    for path in span_files(tmp_path):
        path.unlink()
    _run(program, ["1", "long"], environment_for(tmp_path))
    (long_file,) = _events(tmp_path)
    assert any("longer than 1024 bytes and is cut there" in p for p in long_file.problems)
    assert span_name("n" * 1024) in {event.name for event in long_file.events}


@pytest.mark.parametrize("writer", ["installed", "instrumented"])
def test_spans_kept_open_by_the_writer_are_reported_as_before(
    program: str, instrumented_writer: str, tmp_path: Path, writer: str
) -> None:
    """Version 5 keeps a thread's open spans in memory until they end: deep nesting, ends that
    close a span around an open one, names matched by text, a thread that exits and a fork
    child must still nest and be reported as when every begin was a record."""
    env = environment_for(tmp_path)
    if writer == "instrumented":
        env[LIBRARY_VARIABLE] = instrumented_writer
    _run(program, ["1", "tangled"], env)
    parent, child = _events(tmp_path)
    nesting = nest(parent.events)
    assert parent.problems == () and parent.dropped_records == 0
    recursion = [s for s in nesting.spans if s.name == "recursion"]
    assert sorted(s.depth for s in recursion) == list(range(1000))
    assert all(s.parent == "recursion" for s in recursion if s.depth > 0)
    names = {s.name for s in nesting.spans}
    assert {"outer", "copied name", "across fork", "search"} <= names
    assert "inner" not in names and "thread left open" not in names
    messages = [problem.message for problem in nesting.unbalanced]
    assert len(messages) == 3, messages
    assert (
        "begin of 'inner' without an end (the end of the enclosing 'outer' came first)"
        in (messages[0])
    )
    assert "end of 'inner' without a begin" in messages[1]
    assert "begin of 'thread left open' without an end (still open" in messages[2]
    (in_child,) = nest(child.events).unbalanced
    assert "end of 'across fork' without a begin" in in_child.message


def test_a_span_open_from_the_start_loses_no_other_span(program: str, tmp_path: Path) -> None:
    from cutaway.probes.phase_tables import operation_table

    _run(program, ["4", "open-at-start"], environment_for(tmp_path))
    (span_file,) = _events(tmp_path)
    nesting = nest(span_file.events)
    (problem,) = nesting.unbalanced
    assert "begin of 'main' without an end" in problem.message
    table = operation_table(nesting.spans)
    rows = dict(zip((p.path for p in table.phases), table.operations, strict=True))
    assert rows[("search",)] == 4
    assert rows[("\ufffd\ufffd not UTF-8",)] == 1  # bytes that are not UTF-8, replaced


def test_the_vectors_program_regenerates_the_committed_vector(
    native_build: Path, tmp_path: Path
) -> None:
    vectors = compile_native(
        native_build / "vectors", [NATIVE / "tests" / "cw_spans_vectors.c"], *SANITIZERS
    )
    subprocess.run([vectors, str(tmp_path)], check=True, env={**os.environ, **SANITIZER_ENV})
    for name in ("spans_v4_tsc.bin", "spans_v5_tsc.bin"):
        committed = ROOT / "tests" / "vectors" / name
        assert (tmp_path / name).read_bytes() == committed.read_bytes(), name


# --- whole experiments ---------------------------------------------------------------------


def _cutaway(tmp_path: Path, *args: str) -> dict[str, Any]:
    report = tmp_path / "report.json"
    cutaway(
        "run", "--db", str(tmp_path / "db.sqlite"),
        "--rounds", "3", "--warmup", "0", "--spans", "--export-json", str(report), *args,
        env=SANITIZER_ENV, check=True,
    )  # fmt: skip
    document: dict[str, Any] = json.loads(report.read_text())
    return document


def _rows(document: dict[str, Any], variant: str, source: str) -> dict[tuple[str, ...], Any]:
    return {
        tuple(row["path"]): row
        for row in document["phases"]
        if row["variant"] == variant and row["source"] == source
    }


def _keys(document: dict[str, Any], variant: str) -> set[str]:
    return {row["key"] for row in document["phases"] if row["variant"] == variant}


def test_a_c_program_under_cutaway_gets_its_dissection(program: str, tmp_path: Path) -> None:
    document = _cutaway(tmp_path, "-n", "one", "-c", f"{program} 5", "-n", "two",
                        "-c", f"{program} 5 unbalanced")  # fmt: skip
    rows = _rows(document, "one", "sdk")
    search = rows[("search",)]
    assert search["n"] == 15 and search["runs"] == 3 and search["share"] == 1.0
    children = [row for path, row in rows.items() if len(path) == 2]
    assert [row["phase"] for row in children] == ["decode", "retrieve", "test filter",
                                                  "unaccounted"]  # fmt: skip
    assert sum(row["mean"] for row in children) == pytest.approx(search["mean"], rel=1e-9)
    assert rows[("search", "retrieve", "fetch")]["mean"] > 0
    metrics = {c["metric"] for c in document["phase_comparisons"]}
    assert {"phase:search", "phase:search/decode", "phase:search/retrieve/fetch",
            "phase:search/unaccounted"} <= metrics  # fmt: skip
    assert {f"phase:{key}" for key in _keys(document, "one")} <= metrics  # a verdict per row
    assert rows[("search", "test filter")]["calls_per_operation"] == 3  # counted, C SDK
    assert rows[("search", "test filter")]["calls_per_run"] == 15
    cautions = [c["message"] for c in document["cautions"] if c["kind"] == "spans"]
    assert any("end of 'ghost' without a begin" in m and "'two'" in m for m in cautions)
    assert any(line.startswith("spans: ") and "per recorded span" in line
               for line in document["probes"])  # fmt: skip


PYTHON_PROGRAM = """
from cutaway import spans
@spans.span("request")
def request():
    with spans.span("parse"):
        sum(range(2000))
    with spans.span("respond"):
        sum(range(1000))
for _ in range(4):
    request()
"""


def test_a_python_program_and_an_otlp_file_under_cutaway(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(PYTHON_PROGRAM)
    otlp = tmp_path / "otlp.sh"
    broken = tmp_path / "broken.jsonl"
    broken.write_text(OTLP_FIXTURE.read_text() + "{not json\n")
    otlp.write_text(f'#!/bin/sh\ncat {broken} > "$CUTAWAY_OTLP_FILE"\n')
    otlp.chmod(0o755)
    document = _cutaway(tmp_path, "-n", "python", "-c", f"{sys.executable} {script}",
                        "-n", "traced", "-c", str(otlp))  # fmt: skip
    python = _rows(document, "python", "sdk")
    assert [path for path in python] == [
        ("request",), ("request", "parse"), ("request", "respond"), ("request", "unaccounted"),
    ]  # fmt: skip
    assert python[("request",)]["n"] == 12
    assert python[("request", "parse")]["calls_per_operation"] == 1  # counted, Python SDK
    assert python[("request", "parse")]["calls_per_run"] == 4
    traced = _rows(document, "traced", "otlp")
    assert traced[("search",)]["n"] == 9  # three traces per run
    backend = traced[("search", "query directory", "search backend")]
    assert backend["parent"] == "query directory" and backend["mean"] > 0
    assert backend["key"] == "search/query directory/search backend"
    assert backend["calls_per_operation"] >= 1  # counted, OpenTelemetry
    cautions = [c["message"] for c in document["cautions"] if c["kind"] == "spans"]
    assert any("$CUTAWAY_OTLP_FILE:3: not JSON at column 2" in m for m in cautions), cautions


def test_a_collector_file_is_read_from_where_each_run_began(tmp_path: Path) -> None:
    """``otlp_file``: a file a collector appends to across runs; each run gets the lines
    appended while it ran, so every run holds one copy of the fixture's three traces."""
    collector = tmp_path / "collector.jsonl"
    collector.write_text("{old line, not this experiment's\n")
    experiment = tmp_path / "experiment.toml"
    experiment.write_text(
        f'name = "collector"\nshell = true\ncommand = "cat {OTLP_FIXTURE} >> {collector}"\n'
        f'[probes]\nspans = {{ otlp_file = "{collector}" }}\n'
    )
    report = tmp_path / "report.json"
    result = cutaway(
        "run", str(experiment), "--db", str(tmp_path / "db.sqlite"),
        "--rounds", "2", "--warmup", "1", "--export-json", str(report),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(report.read_text())
    (variant,) = {row["variant"] for row in document["phases"]}
    search = _rows(document, variant, "otlp")[("search",)]
    assert search["n"] == 6 and search["runs"] == 2  # 3 traces in each counted run
    assert not [c for c in document["cautions"] if c["kind"] == "spans"]  # old line unread
