"""Span files: the reader on the committed C test vectors, and the Python SDK (cutaway.spans,
with its own writer and with the C writer) writing files the reader decodes as the C
writer's, in real processes: threads, fork, exec, an unbalanced begin, hostile names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hostile import HOSTILE

from cutaway.probes.interposer import CallFileError, read_call_file
from cutaway.probes.span_model import Edge, nest, span_name
from cutaway.probes.spans.records import (
    DIRECTORY_VARIABLE,
    SpanFileError,
    environment_for,
    read_span_file,
    span_files,
)

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "vectors"
VECTOR = VECTORS / "spans_v4_tsc.bin"  # a begin and an end record per span
VECTOR_5 = VECTORS / "spans_v5_tsc.bin"  # one record per span, written at its end


def _name(text: str) -> str:
    # The vector's 1024-byte name, as every name is kept: cut for display.
    return span_name("x" * 1024) if text == "<1024 x>" else text


@pytest.mark.parametrize("vector", [VECTOR, VECTOR_5], ids=["v4", "v5"])
def test_reader_decodes_the_c_vector_to_exactly_the_json(vector: Path) -> None:
    expected: dict[str, Any] = json.loads(vector.with_suffix(".json").read_text())
    span_file = read_span_file(vector)
    for field in ("pid", "ppid", "exe", "sequence", "dropped_records", "truncated_bytes"):
        assert getattr(span_file, field) == expected[field], field
    decoded = [
        {"edge": e.edge.value, "name": e.name, "thread_id": e.tid, "time_ns": e.time_ns}
        for e in span_file.events
    ]
    assert decoded == [{**e, "name": _name(e["name"])} for e in expected["events"]]
    assert [p.split(": ", 1)[1] for p in span_file.problems] == expected["problems"]
    assert all(p.startswith(str(vector)) for p in span_file.problems)


def test_the_vector_nests_with_the_undefined_end_reported() -> None:
    nesting = nest(read_span_file(VECTOR).events)
    assert [(s.name[:6], s.tid, s.depth, s.operation) for s in nesting.spans] == [
        ("op", 7070, 0, 0),
        ("decode", 7070, 1, 0),
        ("twenty", 7070, 1, 0),
        ("op", 7071, 0, 1),
        ("xxxxxx", 7071, 1, 1),
    ]
    (problem,) = nesting.unbalanced
    assert "end of '<undefined span name 9>' without a begin" in problem.message


def test_the_v5_vector_nests_in_record_order_and_reports_what_did_not_pair() -> None:
    nesting = nest(read_span_file(VECTOR_5).events)
    # The long name and the second "decode" both last 0 ns at one instant: the records, not
    # the times, say which came first.
    assert [(s.name[:6], s.tid, s.depth, s.parent, s.operation) for s in nesting.spans] == [
        ("op", 7070, 0, None, 0),
        ("decode", 7070, 1, "op", 0),
        ("twenty", 7070, 1, "op", 0),
        ("decode", 7070, 1, "op", 0),
        ("op", 7071, 0, None, 1),
    ]
    ghost, left_open = (problem.message for problem in nesting.unbalanced)
    assert "end of '<undefined span name 9>' without a begin" in ghost
    assert "without an end (the end of the enclosing 'op' came first)" in left_open


def test_a_call_file_is_not_a_span_file_and_back() -> None:
    with pytest.raises(SpanFileError, match="a call file, not a span file"):
        read_span_file(VECTORS / "calls_v3_monotonic.bin")
    with pytest.raises(CallFileError, match="a span file, not a call file"):
        read_call_file(VECTOR)


def test_a_cut_file_keeps_its_whole_records(tmp_path: Path) -> None:
    cut = tmp_path / "spans.1.0.bin"
    cut.write_bytes(VECTOR.read_bytes()[:-10])  # the last record (end of op, 7071) is cut
    span_file = read_span_file(cut)
    assert span_file.truncated_bytes == 22
    assert len(span_file.events) == len(read_span_file(VECTOR).events) - 1
    assert any("22 bytes at the end do not form a record" in p for p in span_file.problems)


def test_garbage_is_refused_by_name(tmp_path: Path) -> None:
    garbage = tmp_path / "spans.1.0.bin"
    garbage.write_bytes(b"not a span file at all" * 10)
    with pytest.raises(SpanFileError, match=f"{garbage}: not a cutaway call file"):
        read_span_file(garbage)


PROGRAM = textwrap.dedent(
    """
    import os, sys, threading
    from cutaway import spans
    names = sys.argv[1:]

    @spans.span("handle")
    def handle():
        with spans.span("decode"):
            pass
        spans.begin("retrieve")
        spans.end("retrieve")

    for _ in range(3):
        handle()
    thread = threading.Thread(target=handle)
    thread.start()
    thread.join()
    for name in names:
        with spans.span(name):
            pass
    pid = os.fork()
    if pid == 0:
        handle()
        os._exit(0)
    os.waitpid(pid, 0)
    spans.begin("never ended")
    print(spans.enabled())
    """
)


# cutaway.spans has two writers: its own, in Python, and the C writer of span.h through
# cutaway._cwspans, which it takes when the environment names the C writer (as the probe's does).
WRITERS = ["python", "c"]


def _run(
    program: str, directory: Path, *args: str, writer: str = "python"
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUTAWAY_SPANS")}
    if writer == "c":
        env.update(environment_for(directory))
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        env={**env, DIRECTORY_VARIABLE: str(directory)},
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.mark.parametrize("writer", WRITERS)
def test_the_writer_is_the_one_the_environment_asks_for(tmp_path: Path, writer: str) -> None:
    program = "from cutaway import spans\nprint(type(spans.span('x')).__mro__[1].__module__)\n"
    base = _run(program, tmp_path, writer=writer).stdout.strip()
    assert base == ("cutaway._cwspans" if writer == "c" else "builtins")


@pytest.mark.parametrize("writer", WRITERS)
def test_python_sdk_writes_what_the_reader_nests(tmp_path: Path, writer: str) -> None:
    result = _run(PROGRAM, tmp_path, *HOSTILE, writer=writer)
    assert result.stdout.strip() == "True"
    parent, child = span_files(tmp_path)  # the fork child starts its own file
    parent_file, child_file = read_span_file(parent), read_span_file(child)
    assert child_file.ppid == parent_file.pid and parent_file.problems == ()
    nesting = nest(parent_file.events)
    handles = [s for s in nesting.spans if s.name == "handle"]
    assert len(handles) == 4 and len({s.tid for s in handles}) == 2  # main thread and another
    assert [s.operation for s in handles] == [0, 1, 2, 3]
    children = [(s.name, s.parent, s.depth) for s in nesting.spans if s.operation == 0][1:]
    assert children == [("decode", "handle", 1), ("retrieve", "handle", 1)]
    assert [s.name for s in nesting.spans if s.name in HOSTILE] == list(HOSTILE)
    (never,) = nesting.unbalanced
    assert never.event.edge is Edge.BEGIN and never.event.name == "never ended"
    assert "without an end (still open when the records end)" in never.message
    assert [s.name for s in nest(child_file.events).spans] == ["handle", "decode", "retrieve"]


TANGLED = textwrap.dedent(
    """
    import threading
    from cutaway import spans
    spans.begin("outer")
    spans.begin("inner")
    spans.end("outer")  # "inner" has no end now
    spans.end("inner")  # an end without a begin
    thread = threading.Thread(target=spans.begin, args=("thread left open",))
    thread.start()
    thread.join()
    for _ in range(300):  # deeper than the first stack of the C writer
        spans.begin("deep")
    for _ in range(300):
        spans.end("deep")
    """
)


@pytest.mark.parametrize("writer", WRITERS)
def test_spans_that_do_not_pair_are_reported_as_when_each_begin_was_a_record(
    tmp_path: Path, writer: str
) -> None:
    _run(TANGLED, tmp_path, writer=writer)
    (span_file,) = (read_span_file(path) for path in span_files(tmp_path))
    nesting = nest(span_file.events)
    assert span_file.problems == ()
    assert [s.name for s in nesting.spans if s.depth == 0] == ["outer", "deep"]
    assert sorted(s.depth for s in nesting.spans if s.name == "deep") == list(range(300))
    messages = [problem.message for problem in nesting.unbalanced]
    assert len(messages) == 3, messages
    assert (
        "begin of 'inner' without an end (the end of the enclosing 'outer' came first)"
        in (messages[0])
    )
    assert "end of 'inner' without a begin" in messages[1]
    assert "begin of 'thread left open' without an end (still open" in messages[2]


@pytest.mark.parametrize("writer", WRITERS)
def test_exec_starts_the_next_file_of_the_same_pid(tmp_path: Path, writer: str) -> None:
    program = (
        "import os, sys\nfrom cutaway import spans\nspans.begin('before exec')\n"
        "spans.end('before exec')\n"
        "os.execv(sys.executable, [sys.executable, '-c', "
        "'from cutaway import spans\\nwith spans.span(\"after exec\"): pass'])\n"
    )
    _run(program, tmp_path, writer=writer)
    first, second = span_files(tmp_path)
    assert first.name.endswith(".0.bin") and second.name.endswith(".1.bin")
    assert [e.name for e in read_span_file(second).events] == ["after exec", "after exec"]


def test_not_under_cutaway_spans_do_nothing_and_numpy_is_not_imported(tmp_path: Path) -> None:
    program = (
        "import sys\nfrom cutaway import spans\n"
        "with spans.span('x'): pass\nspans.begin('y'); spans.end('y')\n"
        "@spans.span('z')\ndef f(): return 3\n"
        "print(spans.enabled(), f(), 'numpy' in sys.modules, 'typing' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != DIRECTORY_VARIABLE}
    result = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True,
        cwd=tmp_path,
    )  # fmt: skip
    assert result.stdout.split() == ["False", "3", "False", "False"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("writer", WRITERS)
def test_an_unwritable_directory_turns_spans_off_without_failing(
    tmp_path: Path, writer: str
) -> None:
    missing = tmp_path / "missing"
    program = "from cutaway import spans\nwith spans.span('x'): pass\nprint(spans.enabled())\n"
    assert _run(program, missing, writer=writer).stdout.strip() == "False"


OPEN_AT_START = textwrap.dedent(
    """
    from cutaway import spans
    spans.begin("main")  # never ended
    for _ in range(5):
        with spans.span("request"):
            with spans.span("work"):
                pass
    with spans.span("\\udcff\\udcfe bytes that are not UTF-8"):
        pass
    """
)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_span_open_from_the_start_loses_no_other_span(tmp_path: Path, writer: str) -> None:
    from cutaway.probes.phase_tables import operation_table

    _run(OPEN_AT_START, tmp_path, writer=writer)
    (span_file,) = (read_span_file(path) for path in span_files(tmp_path))
    nesting = nest(span_file.events)
    (problem,) = nesting.unbalanced
    assert "begin of 'main' without an end" in problem.message
    table = operation_table(nesting.spans)
    rows = dict(zip((p.path for p in table.phases), table.operations, strict=True))
    assert rows[("request",)] == 5 and rows[("request", "work")] == 5
    (odd,) = (path[0] for path in rows if "bytes" in path[0])
    assert odd == "\ufffd\ufffd bytes that are not UTF-8"
    odd.encode("utf-8")  # safe in every format


@pytest.mark.parametrize("writer", WRITERS)
def test_nesting_past_the_deepest_level_is_reported_as_such(tmp_path: Path, writer: str) -> None:
    from cutaway.probes.span_model import DEEPEST_LEVEL

    program = textwrap.dedent(
        """
        from cutaway import spans
        for _ in range(70000):
            spans.begin("deep")
        for _ in range(70000):
            spans.end("deep")
        """
    )
    _run(program, tmp_path, writer=writer)
    (span_file,) = (read_span_file(path) for path in span_files(tmp_path))
    assert span_file.dropped_records == 2 * (70000 - DEEPEST_LEVEL - 1)
    assert len(nest(span_file.events).spans) == DEEPEST_LEVEL + 1
    assert span_file.nested_too_deep


FIRST_AT_ONCE = textwrap.dedent(
    """
    import threading
    from cutaway import spans
    from cutaway.spans import _Writer
    # Widen the window in which two threads could each make a writer: the first takes a while.
    made = _Writer.__init__
    def slow(self, *args):
        threading.Event().wait(0.05)
        made(self, *args)
    _Writer.__init__ = slow
    barrier = threading.Barrier(8)
    def first():
        barrier.wait()
        with spans.span("first"):
            pass
    threads = [threading.Thread(target=first) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    """
)


def test_threads_that_write_their_first_span_at_once_share_one_file(tmp_path: Path) -> None:
    _run(FIRST_AT_ONCE, tmp_path, writer="python")
    (path,) = span_files(tmp_path)  # one process, one file
    assert [s.name for s in nest(read_span_file(path).events).spans] == ["first"] * 8
