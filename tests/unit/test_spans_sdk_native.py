"""The span SDK reader's native nester and counter (cutaway._cwsdk, native/cw_sdk_python.c)
give what the Python reference (records._nest_python: ThreadNester and PhaseAccumulator) gives
for the same span file: the same stored table, byte for byte, the same file problems and the
same unbalanced spans per thread in the same words, on hostile records written here into a
real version 5 file (the committed vector's header): names that are not UTF-8, a begin never
ended around everything before it, unbalanced ends, deep and deepest levels, huge and cut
names, undefined names, times past int64 after the clock's conversion, a cut last record."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutaway.probes import phase_tables as phases
from cutaway.probes.interposer import SPAN, SPAN_BEGIN, SPAN_END, SPAN_NAME, SPAN_NAME_TEXT
from cutaway.probes.spans import records
from cutaway.probes.spans.records import SpanFile, Unbalanced, stream_span_file
from cutaway.probes.spans.stream import FOLD_AFTER, KEPT_PROBLEMS

VECTOR_5 = Path(__file__).resolve().parents[1] / "vectors" / "spans_v5_tsc.bin"
HEADER_BYTES = 4096  # the vector's: a version 5 file, TSC clock, 32-byte records
_RECORD = struct.Struct("<HBBiIIqIHh")
TEXT_BYTES = 24
# name id -> its bytes: not UTF-8, a text two ids share, past the writer's cut, plain
NAMES = {
    1: b"request",
    2: b"\xff\xfe",
    3: b"fetch",
    4: b"request",
    5: "caf\u00e9 \u2603".encode(),
    6: b"x" * 1500,
}
Record = tuple[int, int, int, int, int, int]  # kind, thread, level, name id, start, duration


def _name_records(name_id: int, data: bytes) -> bytes:
    cut = len(data) > records.NAME_MAX_BYTES
    data = data[: records.NAME_MAX_BYTES]
    out = _RECORD.pack(SPAN_NAME, 0, 1 if cut else 0, 0, name_id, len(data), 0, 0, 0, 0)
    for part in range(-(-len(data) // TEXT_BYTES)):
        text = data[part * TEXT_BYTES : (part + 1) * TEXT_BYTES].ljust(TEXT_BYTES, b"\0")
        out += struct.pack("<HHI", SPAN_NAME_TEXT, part, name_id) + text
    return out


def _span_record(
    kind: int, thread: int, level: int, name_id: int, start: int, duration: int
) -> bytes:
    level_field = level - 0x10000 if level >= 0x8000 else level
    return _RECORD.pack(
        kind, 0, 0, thread, name_id, 0, start, duration & 0xFFFFFFFF, duration >> 32, level_field
    )


def _write(
    path: Path, spans: list[Record], names: dict[int, bytes] = NAMES, tail: bytes = b""
) -> Path:
    body = b"".join(_name_records(name_id, data) for name_id, data in names.items())
    body += b"".join(_span_record(*record) for record in spans)
    path.write_bytes(VECTOR_5.read_bytes()[:HEADER_BYTES] + body + tail)
    return path


Reading = tuple[SpanFile, Unbalanced, bytes]


def _stream(path: Path, *, native: bool, chunk_records: int) -> Reading:
    accumulator = phases.PhaseAccumulator()
    unbalanced: Unbalanced = {}
    saved = records._native
    try:
        if not native:
            records._native = None
        span_file = stream_span_file(path, accumulator, unbalanced, chunk_records)
    finally:
        records._native = saved
    return span_file, unbalanced, phases.encode(accumulator.table())


def _same(path: Path, chunk_records: tuple[int, ...] = (3, 65536)) -> Reading:
    """The native reading, checked against the Python one, in small chunks and in one."""
    for chunk in chunk_records:
        native = _stream(path, native=True, chunk_records=chunk)
        assert native == _stream(path, native=False, chunk_records=chunk)
    return native


def test_the_native_nester_is_built_and_used() -> None:
    """Built with the package (setup.py), so the probe takes it: the comparisons below are
    of two readers, not one."""
    assert records._native is not None
    nester = records._native.Nester(1, SPAN, SPAN_BEGIN, SPAN_END, lambda *problem: None)
    with pytest.raises(ValueError, match="int64 arrays"):
        nester.add(*([np.zeros(1, np.int32)] * 6), ["a"])  # type: ignore[arg-type]


def _operation(thread: int, start: int, name_ids: tuple[int, int, int] = (1, 2, 3)) -> list[Record]:
    """One operation as the writer writes it, children first: a request with a child that
    has two children of its own."""
    outer, middle, inner = name_ids
    return [
        (SPAN, thread, 2, inner, start + 20, 5),
        (SPAN, thread, 2, inner, start + 30, 7),
        (SPAN, thread, 1, middle, start + 10, 40),
        (SPAN, thread, 0, outer, start, 100),
    ]


def test_hostile_records_give_the_python_readers_table_and_problems(tmp_path: Path) -> None:
    spans: list[Record] = []
    for number in range(50):
        spans += _operation(7, number * 1000, (1, 2 if number % 3 else 5, 3 if number % 4 else 6))
    spans += [
        (SPAN_END, 7, 0, 2, 60_000, 0),  # an end without its begin
        (SPAN, 7, 1, 4, 61_000, 10),  # "request" in "request": recursion, under another id
        (SPAN, 7, 0, 1, 61_000, 50),
        (SPAN, 7, 0, 9, 62_000, 3),  # a name never defined
        (SPAN, 8, 0, 1, -(2**62), 2**40),  # a negative time, long before the file
        (SPAN, 8, 3, 3, 2**63 - 9, 2**47),  # past int64 once converted
        (SPAN, 8, 3, 3, 1000, 2**47),  # its enclosing spans left no record
        (SPAN_BEGIN, 8, 1, 2, 2000, 0),
        (SPAN, 8, 0, 1, 1500, 0),
    ]
    span_file, unbalanced, table = _same(_write(tmp_path / "spans.1.0.bin", spans))
    decoded = phases.decode(table)
    assert ("request", "\ufffd\ufffd", "fetch") in {phase.path for phase in decoded.phases}
    assert any("never defines" in problem for problem in span_file.problems)
    messages = [message for thread in unbalanced.values() for message in thread.messages]
    assert any("end of '\ufffd\ufffd' without a begin" in m for m in messages), messages
    assert any("(the end of the enclosing 'request' came first)" in m for m in messages)


def test_a_begin_never_ended_around_everything_keeps_every_other_span(tmp_path: Path) -> None:
    """The writer writes a begin without its end when its thread exits: every span before
    it waited one level deeper, folded past FOLD_AFTER, and each is an operation."""
    spans: list[Record] = []
    for number in range(FOLD_AFTER * 5):
        spans += [
            (kind, 3, level + 1, *rest) for kind, _, level, *rest in _operation(3, number * 1000)
        ]
        if number % 7 == 0:  # begins never ended inside it, past the kept problems
            spans += [
                (SPAN_BEGIN, 3, 2, 5, number * 1000 + k, 0) for k in range(KEPT_PROBLEMS // 4)
            ]
    # begins never ended beside them, more than are kept, all taken in by the outermost one
    spans += [(SPAN_BEGIN, 3, 1, 5, 10**6 + k, 0) for k in range(KEPT_PROBLEMS + 40)]
    spans += [(SPAN_BEGIN, 3, 0, 2, 0, 0), (SPAN_BEGIN, 3, 0, 6, 5, 0)]
    span_file, unbalanced, table = _same(_write(tmp_path / "spans.1.0.bin", spans), (5, 64, 65536))
    decoded = phases.decode(table)
    assert len(decoded) == FOLD_AFTER * 5  # each request an operation of its own
    thread = unbalanced[(span_file.pid, 3)]
    assert len(thread.messages) == KEPT_PROBLEMS and thread.count > KEPT_PROBLEMS


def test_deep_and_deepest_levels_and_a_cut_record(tmp_path: Path) -> None:
    chain: list[Record] = [(SPAN, 4, level, 1 + level % 6, level, 10_000 - 2 * level)
                           for level in range(3000, -1, -1)]  # fmt: skip
    chain += [
        (SPAN, 4, 0xFFFF, 3, 1, 1),
        (SPAN_BEGIN, 4, 0xFFFE, 2, 2, 0),
        (SPAN, 4, 0xFFFD, 1, 3, 1),
    ]
    chain += [(SPAN_BEGIN, 5, level, 2, level, 0) for level in range(500)]
    # distinct names deeper than a phase path goes: cut at MAX_DEPTH names
    names = {**NAMES, **{100 + level: f"level {level}".encode() for level in range(100)}}
    chain += [(SPAN, 6, level, 100 + level, level, 500 - level) for level in range(99, -1, -1)]
    path = _write(tmp_path / "spans.1.0.bin", chain, names, tail=b"\x01" * 7)
    span_file, _, table = _same(path)
    assert span_file.truncated_bytes == 7
    depths = {len(phase.path) for phase in phases.decode(table).phases if not phase.unaccounted}
    assert max(depths) == phases.MAX_DEPTH


_RECORDS = st.lists(
    st.tuples(
        st.sampled_from([SPAN, SPAN, SPAN, SPAN_BEGIN, SPAN_END]),
        st.integers(1, 3),
        st.one_of(st.integers(0, 4), st.sampled_from([0xFFFF, 0x8000])),
        st.sampled_from([*NAMES, 9]),
        st.one_of(st.integers(0, 10**6), st.integers(-(2**63), 2**63 - 1)),
        st.one_of(st.integers(0, 1000), st.integers(0, 2**48 - 1)),
    ),
    max_size=120,
)


@settings(max_examples=300, deadline=None)
@given(_RECORDS, st.integers(1, 50))
def test_any_records_give_the_python_readers_table_and_problems(
    spans: list[Record], chunk_records: int
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        _same(_write(Path(directory) / "spans.1.0.bin", spans), (chunk_records,))
