"""The OTLP reader's native nester and counter (cutaway._cwotlp, native/cw_otlp_python.c)
gives what the Python one gives (otlp._TraceNester and PhaseAccumulator, the reference): the
same stored table byte for byte, the same problems in the same order and the same count of
traces, on hostile files: names that are not clean UTF-8, lone surrogates, huge names, ids
repeated, parents missing or in a cycle, spans nested 100,000 deep, times that are not
numbers or past int64, traces split across lines and left unfinished, more spans than the
reader holds. Without the extension the reader is the Python one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cutaway.probes import phase_tables as phases
from cutaway.probes.spans import otlp

Reading = tuple[bytes, tuple[str, ...], int]


def _stream(path: Path, *, native: bool, monkeypatch: pytest.MonkeyPatch) -> Reading:
    with monkeypatch.context() as patch:
        if not native:
            patch.setattr(otlp, "_native", None)
        accumulator = phases.PhaseAccumulator()
        read = otlp.stream_otlp(path, accumulator)
        return phases.encode(accumulator.table()), read.problems, read.traces


def _same(path: Path, monkeypatch: pytest.MonkeyPatch, held: tuple[int, ...] = ()) -> Reading:
    """The native reading, checked against the Python one (also holding fewer spans)."""
    native = _stream(path, native=True, monkeypatch=monkeypatch)
    assert native == _stream(path, native=False, monkeypatch=monkeypatch)
    for held_spans in held:
        with monkeypatch.context() as patch:
            patch.setattr(otlp, "HELD_SPANS", held_spans)
            held_native = _stream(path, native=True, monkeypatch=monkeypatch)
            assert held_native == _stream(path, native=False, monkeypatch=monkeypatch)
    return native


def _line(*spans: dict[str, object]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


def _span(
    trace: str, name: str, span_id: str, parent: str = "", start: int = 100, end: int = 150
) -> dict[str, object]:
    return {"traceId": trace, "spanId": span_id, "parentSpanId": parent, "name": name,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end)}  # fmt: skip


def test_the_native_nester_is_built_and_used() -> None:
    """`pip install .` builds it: a reader without it would be five times slower."""
    assert otlp._native is not None
    nester = otlp._native.Nester(10, "f", [].append)
    assert nester.add_line(otlp._typed_line(_line(_span("t", "a", "a")).encode())) is True
    assert nester.finish() == (1, 0)
    assert nester.sums(0, 5) == [(("a",), 50, 1, 0, [(phases.bucket_of(50), 1, 50)], None)]
    assert nester.sums(1, 5) == []
    assert nester.roots() == [("a", 1)]


def test_hostile_lines_give_the_python_readers_sums_and_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(otlp, "MAX_PROBLEMS", 1000)
    lines = [
        # names and ids that are not clean: raw and escaped non-ASCII, lone surrogates, huge
        _line(_span("t1", "caf\u00e9 \U0001f600", "r"), _span("t1", "lone \ud800", "c", "r", 110)),
        _line(_span("t1", "x" * 5000, "d", "r", 111), _span("t1", "y" * 200, "e", "d", 112)),
        _line(_span("t\ud800", "surrogate trace", "\udfff", "\ud800", 113)),
        # a parent missing, a parent that is the span itself, a cycle, repeated ids
        _line(_span("t2", "orphan", "o", "gone"), _span("t2", "self", "s", "s", 101)),
        _line(_span("t3", "x", "x", "y"), _span("t3", "y", "y", "x"), _span("t3", "z", "z", "x")),
        _line(_span("t4", "root", "a"), _span("t4", "child", "b", "a", 110)),
        _line(_span("t4", "again", "a", "b", 120), _span("t4", "root 2", "a", start=130)),
        _line(_span("t4", "kid of a", "k", "a", 140), _span("t4", "kid of a", "k", "a", 141)),
        # times: numbers, NaN, negative, floats, not digits, backwards, zero
        _line({**_span("t5", "number", "n"), "startTimeUnixNano": 5, "endTimeUnixNano": 9}),
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t5", "spanId": "m", '
        '"name": "nan", "startTimeUnixNano": NaN, "endTimeUnixNano": "9"}]}]}]}',
        _line({**_span("t5", "negative", "g"), "startTimeUnixNano": -5}),
        _line({**_span("t5", "float", "f"), "endTimeUnixNano": 200.0}),
        _line({**_span("t5", "digits", "i"), "startTimeUnixNano": "\u0665"}),
        _line(_span("t5", "backwards", "b", start=900, end=100), _span("t5", "ok", "k")),
        _line(_span("t5", "zero", "z", start=7, end=7), _span("t5", "under zero", "u", "z", 7, 7)),
        # recursion, and a phase under a phase of the same name deeper down
        _line(
            _span("t6", "r", "1"), _span("t6", "r", "2", "1", 101), _span("t6", "q", "3", "2", 102)
        ),
        # siblings and outermost spans that start together: in the order they came
        _line(_span("t9", "b", "1", "r", 105), _span("t9", "a", "2", "r", 105)),
        _line(_span("t9", "root", "r"), _span("t9", "other root", "s"), _span("t9", "c", "3")),
        # not JSON, not OTLP, unclean UTF-8, line ends inside
        "{not json",
        json.dumps({"resourceSpans": "nope"}) + "\u2028" + _line(_span("t7", "after", "a")),
        _line(_span("t7", "cr", "c")).replace(", ", ",\r "),
        "",
    ]
    path = tmp_path / "traces.jsonl"
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n\xff\xfe{}\n"
    data += _line(_span("t8", "bytes", "b")).encode().replace(b"bytes", b"by\xfftes") + b"\n"
    path.write_bytes(data)
    table, problems, traces = _same(path, monkeypatch, held=(1, 2, 3, 7))
    assert traces == 10
    assert any("its parent gone is not in the file" in problem for problem in problems)
    assert problems[-1].endswith("spans are in a cycle of parent ids or repeat a span id; skipped")
    assert phases.decode(table).phases


def test_traces_split_across_lines_and_left_unfinished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Traces interleaved over many lines, several in one line, children before their
    parents, more spans than are held: the oldest traces go first, as in Python."""
    lines = []
    for i in range(300):
        trace = f"t{i % 17}"
        spans = [_span(trace, f"child {i % 5}", f"c{i}", f"r{i % 3}", 1000 + i, 1100 + 2 * i)]
        if i % 4 == 0:
            spans.append(_span(f"t{(i + 5) % 17}", "root", f"r{i % 3}", start=900 + i, end=2000))
        lines.append(_line(*spans))
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n")
    _same(path, monkeypatch, held=(1, 5, 40, 100))


def test_spans_nested_100000_deep_and_a_line_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nesting deeper than MAX_DEPTH names keeps each span's time in its ancestor's phase;
    nothing recurses."""
    depth = 100_000
    spans = [_span("deep", f"level {i % 70}", str(i), str(i - 1) if i else "", i, 2 * depth - i)
             for i in range(depth)]  # fmt: skip
    path = tmp_path / "deep.jsonl"
    path.write_text(_line(*spans[: depth // 2]) + "\n" + _line(*spans[depth // 2 :]) + "\n")
    table, problems, traces = _same(path, monkeypatch, held=(1000,))
    assert traces == 1 and not problems
    assert max(len(phase.path) for phase in phases.decode(table).phases) == phases.MAX_DEPTH


def test_many_distinct_names_are_folded_as_in_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MAX_PHASES the heaviest phases are kept, ties by their first-counted order."""
    lines = [
        _line(
            _span(f"{i:x}", f"GET /item/{i}", "a", start=10 * i, end=10 * i + 5 + i % 3),
            _span(f"{i:x}", "db", "b", "a", 10 * i, 10 * i + 1),
        )
        for i in range(500)
    ]
    path = tmp_path / "names.jsonl"
    path.write_text("\n".join(lines) + "\n")
    table, _, _ = _same(path, monkeypatch, held=(10,))
    assert phases.decode(table).folded
    monkeypatch.setattr(otlp._native_sums, "__defaults__", (7,))  # sums taken 7 at a time
    assert _same(path, monkeypatch)[0] == table


def test_a_time_past_int64_is_read_in_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native nester keeps times in 64 bits; a later time sends the file to Python, which
    sums it exactly (and nothing is counted twice)."""
    lines = [
        _line(_span("t", "root", "a", start=1, end=2**63 - 1)),
        _line(_span("t", "big", "b", "a", start=2**63, end=2**70)),
        _line(_span("u", "u root", "c"), _span("u", "kid", "d", "c", 120, 140)),
    ]
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    table, _, _ = _same(path, monkeypatch, held=(1,))
    assert 2**70 - 2**63 in phases.decode(table).total_ns
    path.write_text(lines[0] + "\n" + lines[2] + "\n")  # past int64 when summed: 128 bits
    twice = path.read_text() * 3
    path.write_text(twice)
    table, _, _ = _same(path, monkeypatch)
    assert 3 * (2**63 - 2) in phases.decode(table).total_ns


def test_two_files_into_one_accumulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe reads the run's file and the workload's into one table: the second file's
    sums add to the first's, new phases after the first's, as in Python."""
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text(_line(_span("t", "GET", "a"), _span("t", "db", "b", "a", 110, 120)) + "\n")
    second.write_text(_line(_span("u", "POST", "a"), _span("u", "db", "b", "a", 110, 130)) + "\n")
    second.write_text(second.read_text() + _line(_span("v", "GET", "a", end=400)) + "\n")

    def both(native: bool) -> bytes:
        with monkeypatch.context() as patch:
            if not native:
                patch.setattr(otlp, "_native", None)
            accumulator = phases.PhaseAccumulator()
            otlp.stream_otlp(first, accumulator)
            otlp.stream_otlp(second, accumulator)
            return phases.encode(accumulator.table())

    assert both(native=True) == both(native=False)


def test_the_reader_counts_in_python_without_the_extension(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(_line(_span("t", "GET", "a"), _span("t", "db", "b", "a", 110, 120)) + "\n")
    monkeypatch.setattr(otlp, "_native", None)
    accumulator = phases.PhaseAccumulator()
    assert otlp.stream_otlp(path, accumulator).traces == 1
    keys = [phase.key for phase in accumulator.table().phases]
    assert keys == ["GET", "GET/db", "GET/unaccounted"]
