"""OpenTelemetry OTLP JSON as spans: a trace recorded with the real opentelemetry-sdk across
two services (tests/fixtures/otlp/record_traces.py) nests by parent id; malformed input is
reported by file, line and field, and loses nothing else."""

from __future__ import annotations

import json
from pathlib import Path

from cutaway.probes.phase_tables import operation_table
from cutaway.probes.span_model import MAX_NAME_CHARACTERS
from cutaway.probes.spans.otlp import parse_otlp, read_otlp

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "otlp" / "two-services.jsonl"


def test_two_services_nest_into_one_operation_per_trace() -> None:
    read = read_otlp(FIXTURE)
    assert read.problems == () and read.traces == 3
    first = [s for s in read.spans if s.operation == 0]
    assert [(s.name, s.depth, s.parent) for s in first] == [
        ("search", 0, None),
        ("decode", 1, "search"),
        ("query directory", 1, "search"),
        ("search backend", 2, "query directory"),  # the other service's span
        ("candidates", 3, "search backend"),
        ("test filter", 3, "search backend"),
        ("test filter", 3, "search backend"),
        ("test filter", 3, "search backend"),
    ]
    assert {s.operation for s in read.spans} == {0, 1, 2}
    table = operation_table(list(read.spans))
    paths = [p.path for p in table.phases if not p.unaccounted]
    assert ("search", "query directory", "search backend", "test filter") in paths
    search, decode, query = table.total_ns[:3]
    assert decode + query <= search  # children within their parent


def _line(*spans: dict[str, object]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


def _span(name: str, span_id: str, parent: str = "", start: object = "100", end: object = "200"):
    return {"traceId": "t1", "spanId": span_id, "parentSpanId": parent, "name": name,
            "startTimeUnixNano": start, "endTimeUnixNano": end}  # fmt: skip


def test_malformed_lines_and_spans_are_named_and_the_rest_kept() -> None:
    lines = [
        _line(_span("root", "a", start=100, end=1000)),
        "{not json",
        json.dumps({"resourceSpans": "nope"}),
        _line(_span("child", "b", "a"), {"spanId": "c", "traceId": "t1", "name": 7}),
        _line(_span("bad time", "d", "a", start="soon")),
        _line(_span("orphan", "e", "zz")),
        _line(_span("backwards", "f", "a", start="300", end="200")),
    ]
    read = parse_otlp(lines, "traces.jsonl")
    assert [(s.name, s.depth) for s in read.spans] == [("root", 0), ("child", 1), ("orphan", 0)]
    assert read.problems == (
        "traces.jsonl:2: not JSON at column 2 (Expecting property name enclosed in double "
        "quotes); line skipped",
        "traces.jsonl:3: field resourceSpans: expected a list; line skipped",
        "traces.jsonl:4: field resourceSpans[0].scopeSpans[0].spans[1].name: expected a "
        "non-empty string; span skipped",
        "traces.jsonl:5: field resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano: "
        "expected nanoseconds, got 'soon'; span skipped",
        "traces.jsonl:7: field resourceSpans[0].scopeSpans[0].spans[0]: ends before it "
        "starts; span skipped",
        "traces.jsonl: span 'orphan' of trace t1: its parent zz is not in the file; taken as "
        "outermost",
    )


def test_lines_appended_after_an_offset_are_read_with_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(_line(_span("old", "a")) + "\n")
    offset = path.stat().st_size
    with path.open("a") as file:
        file.write(_line(_span("new", "b")) + "\n{broken\n")
    read = read_otlp(path, start_offset=offset)
    assert [s.name for s in read.spans] == ["new"]
    assert read.problems[0].startswith(f"{path}:3: not JSON")


def test_a_cycle_of_parent_ids_is_reported() -> None:
    read = parse_otlp([_line(_span("a", "a", "b"), _span("b", "b", "a"))], "x")
    assert read.spans == ()
    assert read.problems == (
        "x: 2 spans are in a cycle of parent ids or repeat a span id; skipped",
    )


def test_names_that_are_not_text_and_deep_lines_are_problems_not_errors() -> None:
    surrogate = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        _span("\ud800 lone", "a"), _span("x" * 5_000_000, "b", "a")
    ]}]}]})  # fmt: skip
    deep = "[" * 100_000 + "]" * 100_000
    read = parse_otlp([surrogate, deep], "traces.jsonl")
    names = [span.name for span in read.spans]
    assert names[0] == "\ufffd lone"
    assert len(names[1]) == MAX_NAME_CHARACTERS and names[1].endswith("\u2026")
    assert all(name.encode("utf-8") for name in names)
    assert read.problems == (
        "traces.jsonl:2: JSON nested deeper than this reader follows; line skipped",
    )
