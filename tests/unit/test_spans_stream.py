"""Spans nested as their records stream in (records.stream_span_file, otlp.stream_otlp) give
what the whole-run path gives (read_span_file or read_otlp, nest, the phase table): the same
stored table, byte for byte, and the same problems in the same order, for files written by
the real writers (Python's and C's) in real processes: unbalanced begins and ends, a begin
never ended around everything, recursion, threads, chunks cut anywhere."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cutaway.probes import phase_tables as phases
from cutaway.probes.span_model import nest
from cutaway.probes.spans import otlp
from cutaway.probes.spans.records import (
    DIRECTORY_VARIABLE,
    Unbalanced,
    environment_for,
    read_span_file,
    span_files,
    stream_span_files,
)
from cutaway.probes.spans.stream import KEPT_PROBLEMS

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "vectors"
OTLP_FIXTURE = ROOT / "tests" / "fixtures" / "otlp" / "two-services.jsonl"


def _run(program: str, directory: Path, writer: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUTAWAY_SPANS")}
    if writer == "c":
        env.update(environment_for(directory))
    env[DIRECTORY_VARIABLE] = str(directory)
    subprocess.run([sys.executable, "-c", program], env=env, check=True, capture_output=True)


Threads = dict[tuple[int, int], tuple[list[str], int]]  # first problems in words, all counted


def _whole(paths: list[Path]) -> tuple[bytes, list[str], Threads]:
    """The table, file problems and unbalanced spans per thread as the probe made them
    before."""
    events = []
    problems: list[str] = []
    for path in paths:
        span_file = read_span_file(path)
        events += span_file.events
        problems += span_file.problems
    nesting = nest(events)
    table = phases.operation_table(nesting.spans)
    threads: dict[tuple[int, int], list[str]] = {}
    for problem in nesting.unbalanced:
        threads.setdefault((problem.event.pid, problem.event.tid), []).append(problem.message)
    counted = {key: (messages[:KEPT_PROBLEMS], len(messages)) for key, messages in threads.items()}
    return phases.encode(table), problems, counted


def _streamed(paths: list[Path], chunk_records: int) -> tuple[bytes, list[str], Threads]:
    accumulator = phases.PhaseAccumulator()
    unbalanced: Unbalanced = {}
    problems: list[str] = []
    for span_file in stream_span_files(paths, accumulator, unbalanced, chunk_records):
        assert not isinstance(span_file, Exception), span_file
        problems += span_file.problems
    counted = {
        key: (thread.messages, thread.count) for key, thread in unbalanced.items() if thread.count
    }
    return phases.encode(accumulator.table()), problems, counted


def _rows(blob: bytes) -> dict[phases.Phase, tuple[object, ...]]:
    """A stored table's rows by phase, in no order."""
    table = phases.decode(blob)
    columns = (table.operations, table.total_ns, table.histograms, table.calls or ())
    return {phase: tuple(column[i] for column in columns) for i, phase in enumerate(table.phases)}


PROGRAMS = {
    "tangled": """
        import threading
        from cutaway import spans
        spans.begin("outer")
        spans.begin("inner")
        spans.end("outer")  # "inner" has no end now
        spans.end("inner")  # an end without a begin
        thread = threading.Thread(target=spans.begin, args=("thread left open",))
        thread.start()
        thread.join()
        for _ in range(300):
            spans.begin("deep")
        for _ in range(300):
            spans.end("deep")
        """,
    # A begin never ended around everything: each request is an operation, with more of them
    # than a level keeps apart, and begins without an end inside spans that end.
    "open at the start": """
        from cutaway import spans
        spans.begin("main")
        for i in range(100):
            with spans.span("request"):
                with spans.span("parse" if i % 3 else "decode"):
                    pass
                if i % 10 == 0:
                    spans.begin("left open")
                    with spans.span("inside the open one"):
                        pass
                with spans.span("request"):  # recursion: in the outer one's time
                    with spans.span("work"):
                        pass
        with spans.span("\\udcff\\udcfe bytes that are not UTF-8"):
            pass
        """,
    # A process that dies inside its spans leaves no record of them: the spans that ended
    # inside wait for a record that never comes.
    "exit inside": """
        import os
        from cutaway import spans
        spans.begin("serve")
        for i in range(50):
            with spans.span("request"):
                with spans.span("query" if i % 2 else "cache"):
                    pass
        spans.begin("last request")
        with spans.span("query"):
            pass
        os._exit(0)
        """,
    # Ended spans around unended begins around many children: folded sums move up a level.
    "unended inside ended": """
        from cutaway import spans
        for _ in range(3):
            with spans.span("batch"):
                spans.begin("job")
                for i in range(80):
                    with spans.span(f"step {i % 5}"):
                        with spans.span("io"):
                            pass
                spans.begin("job 2")
                with spans.span("tail"):
                    pass
        spans.end("stray")
        """,
    "threads and depth": """
        import random, threading
        from cutaway import spans
        def work(seed):
            rng = random.Random(seed)
            open_names = []
            for _ in range(3000):
                if open_names and rng.random() < 0.45:
                    name = open_names.pop() if rng.random() < 0.9 else rng.choice("abcdefgh")
                    spans.end(name)
                else:
                    name = rng.choice("abcdefgh")
                    open_names.append(name)
                    spans.begin(name)
        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for _ in range(80):
            spans.begin("deep")
        for _ in range(80):
            spans.end("deep")
        """,
}


@pytest.mark.parametrize("writer", ["python", "c"])
@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("chunk_records", [5, 65536])
def test_streamed_spans_give_the_whole_runs_table_and_problems(
    tmp_path: Path, writer: str, program: str, chunk_records: int
) -> None:
    """Byte for byte; where threads share phase names, the phases first seen in several
    threads may be listed in another order (whole: by start across threads; streamed: by
    the records' order in the file), with the same sums."""
    _run(textwrap.dedent(PROGRAMS[program]), tmp_path, writer)
    paths = span_files(tmp_path)
    table, problems, unbalanced = _whole(paths)
    streamed_table, streamed_problems, streamed_unbalanced = _streamed(paths, chunk_records)
    assert (streamed_problems, streamed_unbalanced) == (problems, unbalanced)
    assert _rows(streamed_table) == _rows(table)
    if program != "threads and depth":
        assert streamed_table == table
    assert json.loads(table)["phases"]  # something was measured


# A thread's records in two files of its process: the Python writer's _start made a second
# file while the thread had spans open (what two threads starting the writer at once did), so
# the span around "parse" is in one file and "parse" in the other, in file order (clean) or
# against it (the later file first). Forced here through the writer's module state, so that
# the split is the same in every run.
SPLIT_PROGRAMS = {
    "clean": """
        from cutaway import spans
        spans.begin("request")
        with spans.span("parse"):
            pass
        spans.begin("left open")
        spans._writer = None  # the next record starts spans.<pid>.1.bin
        with spans.span("query"):
            pass
        spans.end("request")
        spans.end("parse")  # an end without a begin
        """,
    "against the file order": """
        from cutaway import spans
        first = spans._start()  # spans.<pid>.0.bin
        spans._writer = None
        spans.begin("request")
        with spans.span("parse"):  # into spans.<pid>.1.bin
            spans.begin("left open")
        spans._writer = first
        with spans.span("query"):
            pass
        spans.end("request")  # into spans.<pid>.0.bin
        spans.end("stray")
        """,
}


@pytest.mark.parametrize("split", sorted(SPLIT_PROGRAMS))
@pytest.mark.parametrize("chunk_records", [2, 65536])
def test_a_thread_in_two_files_of_its_process_is_nested_in_one_piece(
    tmp_path: Path, split: str, chunk_records: int
) -> None:
    """nest() takes a thread's events from all the files of its process in time order; the
    streamed reader gives the same spans and problems (each file nested on its own would
    make "parse" an operation of its own, outside "request")."""
    _run(textwrap.dedent(SPLIT_PROGRAMS[split]), tmp_path, "python")
    paths = span_files(tmp_path)
    assert len(paths) == 2
    whole = _whole(paths)
    assert _streamed(paths, chunk_records) == whole
    assert phases.Phase(("request", "parse")) in _rows(whole[0])
    assert phases.Phase(("parse",)) not in _rows(whole[0])
    ((messages, count),) = whole[2].values()
    assert count == 2 and any("end of 'stray'" in m or "end of 'parse'" in m for m in messages)


@pytest.mark.parametrize("vector", ["spans_v4_tsc.bin", "spans_v5_tsc.bin"])
def test_streamed_vectors_give_the_whole_runs_table_and_problems(vector: str) -> None:
    paths = [VECTORS / vector]
    assert _streamed(paths, 3) == _whole(paths)


def _otlp_whole(path: Path, offset: int = 0) -> tuple[bytes, tuple[str, ...], int]:
    read = otlp.read_otlp(path, start_offset=offset)
    return phases.encode(phases.operation_table(read.spans)), read.problems, read.traces


def _otlp_streamed(path: Path, offset: int = 0) -> tuple[bytes, tuple[str, ...], int]:
    accumulator = phases.PhaseAccumulator()
    read = otlp.stream_otlp(path, accumulator, start_offset=offset)
    return phases.encode(accumulator.table()), read.problems, read.traces


def _line(*spans: dict[str, object]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


def _span(trace: str, name: str, span_id: str, parent: str = "", start: int = 100) -> object:
    return {"traceId": trace, "spanId": span_id, "parentSpanId": parent, "name": name,
            "startTimeUnixNano": start, "endTimeUnixNano": start + 50}  # fmt: skip


def test_streamed_otlp_gives_the_whole_files_table_and_problems(tmp_path: Path) -> None:
    assert _otlp_streamed(OTLP_FIXTURE) == _otlp_whole(OTLP_FIXTURE)
    lines = [
        _line(_span("t2", "child", "c", "r", 120)),  # before its parent, in a later trace
        _line(_span("t1", "root", "a", start=100), _span("t1", "root", "a2", start=90)),
        "{not json",
        _line(_span("t2", "root", "r", start=110), _span("t2", "orphan", "o", "zz")),
        _line(_span("t3", "loop", "x", "y"), _span("t3", "loop", "y", "x")),
        _line(_span("t4", "named: spans are in a cycle of parent ids", "q", "gone")),
        json.dumps({"resourceSpans": "nope"}) + "\u2028",
        _line(_span("t1", "late child", "b", "a", 101)),
    ]
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _otlp_streamed(path) == _otlp_whole(path)
    offset = len("\n".join(lines[:3]).encode()) + 1  # from the 4th line on: its number is 4
    streamed = _otlp_streamed(path, offset)
    assert streamed == _otlp_whole(path, offset)
    assert any(problem.startswith(f"{path}:7: ") for problem in streamed[1])


def test_streamed_otlp_lets_the_oldest_traces_go_and_keeps_their_sums(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past HELD_SPANS, a trace is nested and summed as soon as its lines are the oldest:
    memory stays bounded, and a file whose traces are each on their lines gives the same
    sums."""
    path = tmp_path / "traces.jsonl"
    lines = [
        _line(_span(f"{i}", "GET", "a", start=1000 * i), _span(f"{i}", "db", "b", "a", 1000 * i))
        for i in range(50)
    ]
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(otlp, "HELD_SPANS", 6)
    assert _otlp_streamed(path) == _otlp_whole(path)


def test_the_probe_counts_every_unbalanced_span_beyond_those_it_keeps(tmp_path: Path) -> None:
    """Each thread keeps KEPT_PROBLEMS unbalanced spans in words: the run's problems still
    count all of them, as when every one was kept."""
    from cutaway.probes.phase_tables import MAX_PROBLEMS, PROBLEMS_KIND
    from cutaway.probes.spans.capture import SpansProbe
    from cutaway.probes.spans.settings import SpansSpec

    program = "from cutaway import spans\nfor _ in range(500):\n    spans.end('stray')\n"
    probe = SpansProbe(SpansSpec())
    try:
        _run(program, probe.directory, "python")
        (paths,) = [span_files(probe.directory)]
        _, _, whole = _whole(paths)
        ((_, total),) = whole.values()
        (problems,) = [d for d in probe.after_run() if d.kind == PROBLEMS_KIND]
    finally:
        probe.close()
    shown = json.loads(problems.data)
    assert total == 500
    assert len(shown) == MAX_PROBLEMS + 1
    assert all("end of 'stray' without a begin" in problem for problem in shown[:-1])
    assert shown[-1] == f"and {total - MAX_PROBLEMS} more problems in this run"


def _lines_as_json_reads_them(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[bytes, tuple[str, ...], int]:
    """stream_otlp with every line read by json.loads and the field checks (the typed
    decoder taking none)."""
    with monkeypatch.context() as patch:
        patch.setattr(otlp, "_typed_line", lambda raw: None)
        return _otlp_streamed(path)


HOSTILE_SPANS = [
    {"name": "caf\u00e9 \U0001f600"},  # not ASCII, raw and escaped
    {"name": "lone \ud800"},  # JSON's lone surrogate: cleaned
    {"name": "x" * 201},  # cut
    {"name": "y" * 200},  # not cut
    {"name": "line\u2028separator"},  # str.splitlines ends a line there
    {"name": "next\x85line"},
    {"name": "return\rinside"},  # written as "\r" by json.dumps: one line
    {"name": ""},
    {"name": 7},
    {"traceId": "", "name": "no trace"},
    {"spanId": None, "name": "no id"},
    {"parentSpanId": None, "name": "parent null"},
    {"parentSpanId": 0, "name": "parent 0"},
    {"parentSpanId": 5, "name": "parent 5"},
    {"parentSpanId": "p" * 300, "name": "long parent"},
    {"startTimeUnixNano": 5, "name": "number"},
    {"startTimeUnixNano": -5, "name": "negative"},
    {"startTimeUnixNano": 5.0, "name": "float"},
    {"startTimeUnixNano": True, "name": "bool"},
    {"startTimeUnixNano": "", "name": "empty time"},
    {"startTimeUnixNano": " 5", "name": "space"},
    {"startTimeUnixNano": "+5", "name": "plus"},
    {"startTimeUnixNano": "1_0", "name": "underscore"},
    {"startTimeUnixNano": "\u0665", "name": "arabic digit"},
    {"startTimeUnixNano": "007", "name": "zeros"},
    {"startTimeUnixNano": str(2**70), "endTimeUnixNano": str(2**71), "name": "big"},
    {"startTimeUnixNano": "900", "name": "backwards"},
    {"attributes": [[[[[]]]]] * 3, "name": "nested attribute"},
]


def test_the_typed_decoder_reads_what_json_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Most lines are read by the typed decoder; a line it does not take as it is goes to
    json.loads and the field checks: the sums, problems and traces are those of json alone,
    for names, ids and times of every kind and lines cut anywhere."""
    lines = []
    for number, fields in enumerate(HOSTILE_SPANS):
        span = {"traceId": "t", "spanId": "r", "name": "root"}
        span |= {"startTimeUnixNano": str(100 + number), "endTimeUnixNano": str(800 + number)}
        lines.append(_line(span, {**span, "spanId": f"c{number}", "parentSpanId": "r", **fields}))
        lines.append(json.dumps(json.loads(lines[-1]), ensure_ascii=False))
    lines += [
        _line(
            {
                "traceId": "t",
                "spanId": "e",
                "name": "empty",
                "startTimeUnixNano": "",
                "endTimeUnixNano": "5",
            },
            {
                "traceId": "t",
                "spanId": "f",
                "name": "late",
                "startTimeUnixNano": "9",
                "endTimeUnixNano": "7",
            },
            _span("t", "number", "n", "r", 900),
        ),
        _line(_span("t1", "a", "x"), _span("t2", "b", "y"), _span("t1", "c", "z", "x")),
        json.dumps(
            {"resourceSpans": [{"scopeSpans": [{"spans": [_span("t", "d", "d")]}]}]}
        ).replace('"name"', '"\\u006eame"'),  # an escaped key
        _line(_span("t", "e", "e")).replace('"name": "e"', '"name": "e", "name": "f"'),
        _line(_span("t", "g", "g")).replace(", ", ",\r "),  # "\r": a line end to splitlines
        _line(_span("t", "h", "h")) + "\r",  # CRLF
        _line(_span("t", "i", "i")) + "\r\r",
        "\f" + _line(_span("t", "j", "j")),
        _line(_span("t", "k", "k"))[:-2],
        '{"resourceSpans": [{"scopeSpans": [{"spans": [' + "[" * 5000 + "]" * 5000 + "]}]}]}",
        '{"resourceSpans": [{"scopeSpans": [{"spans": [], "x": '
        + "[" * 5000
        + "]" * 5000
        + "}]}]}",
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": NaN}]}]}]}',
        '{"resourceSpans": [{"scopeSpans": null}]}',
        '{"resourceSpans": [7]}',
        "[]",
        "",
        "   ",
    ]
    path = tmp_path / "traces.jsonl"
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n\xff\xfe{}\n"
    path.write_bytes(data.replace(b"next\\u0085line", b"next\xc2\x85line"))
    monkeypatch.setattr(otlp, "MAX_PROBLEMS", 1000)
    streamed = _otlp_streamed(path)
    assert streamed == _lines_as_json_reads_them(path, monkeypatch)
    assert len(streamed[1]) > 40  # the bad fields are each a problem
    for held in (3, 40):  # traces let go while lines still come
        monkeypatch.setattr(otlp, "HELD_SPANS", held)
        assert _otlp_streamed(path) == _lines_as_json_reads_them(path, monkeypatch)


def test_streamed_otlp_nests_repeated_ids_cycles_and_mixed_lines_as_the_whole_file(
    tmp_path: Path,
) -> None:
    """A span id repeated in a trace is reached once per outermost span, as _nest reaches it;
    spans in a cycle of parent ids are not reached and are counted in one problem; a line of
    several traces holds each span in its own."""
    lines = [
        _line(_span("t1", "root", "a"), _span("t1", "child", "b", "a", 110)),
        _line(_span("t1", "again", "a", "b", 120), _span("t1", "root 2", "a", start=130)),
        _line(_span("t2", "x", "x", "y"), _span("t2", "y", "y", "x"), _span("t2", "me", "m", "m")),
        _line(_span("t3", "a", "p"), _span("t4", "b", "q"), _span("t3", "c", "s", "p", 101)),
        _line(_span("t4", "d", "r", "q", 102)),
    ]
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n")
    streamed = _otlp_streamed(path)
    assert streamed == _otlp_whole(path)
    assert streamed[1][-1].endswith(
        ": 2 spans are in a cycle of parent ids or repeat a span id; skipped"
    )


@pytest.mark.parametrize("block_bytes", [1, 3, 7, 64, 1 << 20])
@pytest.mark.parametrize("ending", [b"", b"\n", b"\n\n"])
def test_otlp_lines_are_split_by_blocks_as_iterating_over_the_file_splits_them(
    tmp_path: Path, block_bytes: int, ending: bytes
) -> None:
    """Lines read by blocks are the file's lines (without their b"\\n") wherever a block ends:
    inside a line, at its end, a line longer than several blocks, empty lines."""
    data = b'{"a": 1}\n\n' + b"x" * 50 + b"\r\n\xe2\x80\xa8\n" + b"y" * 5 + ending
    path = tmp_path / "lines.jsonl"
    path.write_bytes(data)
    with open(path, "rb") as file:
        expected = [line.removesuffix(b"\n") for line in file]
    with open(path, "rb") as file:
        assert list(itertools.chain.from_iterable(otlp._line_blocks(file, block_bytes))) == expected
