"""Spans -> a run's phases (cutaway.probes.spans.phases): phases add up, the unaccounted
rest, recursion, repeated phases, medians from the histograms, the run metrics, the heaviest
phases kept and the rest folded, and the stored table (and version 1's)."""

from __future__ import annotations

import struct

import pytest

from cutaway.model import parse_phase_key, phase_key
from cutaway.probes.spans.model import Edge, SpanEvent, nest
from cutaway.probes.spans.phases import (
    MAX_PHASES,
    OTHER,
    OperationTable,
    Phase,
    PhaseAccumulator,
    PhaseBlobError,
    decode,
    encode,
    histogram_median,
    operation_table,
    phase_metrics,
)


def _medians(table: OperationTable) -> list[float]:
    return [
        histogram_median(h, n) if h is not None else float("nan")
        for h, n in zip(table.histograms, table.operations, strict=True)
    ]


def _events(*steps: tuple[str, str, int], pid: int = 1, tid: int = 1) -> list[SpanEvent]:
    edges = {"b": Edge.BEGIN, "e": Edge.END}
    return [SpanEvent(edges[edge], name, pid, tid, time) for edge, name, time in steps]


SEARCH = _events(
    ("b", "search", 0), ("b", "decode", 10), ("e", "decode", 40),
    ("b", "retrieve", 50), ("b", "fetch", 60), ("e", "fetch", 160), ("e", "retrieve", 200),
    ("b", "filter", 210), ("e", "filter", 230), ("b", "filter", 240), ("e", "filter", 250),
    ("e", "search", 300),
    # A second operation: no fetch (a cache hit), one filter.
    ("b", "search", 1000), ("b", "decode", 1000), ("e", "decode", 1030),
    ("b", "retrieve", 1030), ("e", "retrieve", 1040),
    ("b", "filter", 1040), ("e", "filter", 1050), ("e", "search", 1100),
)  # fmt: skip


def test_phases_add_up_with_an_unaccounted_rest_under_each_parent() -> None:
    table = operation_table(nest(SEARCH).spans)
    assert table.phases == (
        Phase(("search",)),
        Phase(("search", "decode")),
        Phase(("search", "retrieve")),
        Phase(("search", "retrieve", "fetch")),
        Phase(("search", "retrieve", "unaccounted"), unaccounted=True),
        Phase(("search", "filter")),
        Phase(("search", "unaccounted"), unaccounted=True),
    )
    # Per operation: (300, 30, 150, 100, 50, 30, 90), two filters adding up to 30; and
    # (100, 30, 10, 0, 10, 10, 50): no fetch, 0, all of retrieve is unaccounted.
    assert len(table) == 2 and table.operations == (2,) * 7
    assert table.total_ns == (400, 60, 160, 100, 60, 40, 140)
    assert _medians(table) == [200, 30, 80, 50, 30, 20, 70]
    totals = table.total_ns
    assert totals[1] + totals[2] + totals[5] + totals[6] == totals[0]
    assert totals[3] + totals[4] == totals[2]


def test_medians_come_from_buckets_within_one_percent() -> None:
    events = [
        event
        for start, length in enumerate([1000, 1004, 5000, 9000, 123_456_789])
        for event in _events(("b", "op", start * 10**9), ("e", "op", start * 10**9 + length))
    ]
    table = operation_table(nest(events).spans)
    assert table.operations == (5,)
    assert _medians(table)[0] == pytest.approx(5000, rel=0.01)
    # 1000 and 1004 share a bucket: its mean stands for both.
    assert _medians(operation_table(nest(events[:4]).spans))[0] == pytest.approx(1002)


def test_run_metrics_are_means_per_operation_in_seconds() -> None:
    metrics = phase_metrics(operation_table(nest(SEARCH).spans))
    assert metrics == pytest.approx(
        {
            "phase:search": 200e-9,
            "phase:search/decode": 30e-9,
            "phase:search/retrieve": 80e-9,
            "phase:search/retrieve/fetch": 50e-9,
            "phase:search/retrieve/unaccounted": 30e-9,
            "phase:search/filter": 20e-9,
            "phase:search/unaccounted": 70e-9,
        }
    )


def test_each_operation_counts_its_spans_per_phase() -> None:
    table = operation_table(nest(SEARCH).spans)
    # Per operation (1, 1, 1, 1, 0, 2, 0): two filters, an unaccounted rest counts none; and
    # (1, 1, 1, 0, 0, 1, 0). The table keeps the sums over the operations.
    assert table.calls == (2, 2, 2, 1, 0, 3, 0)


def test_one_name_under_two_parents_is_two_phases_with_two_metrics() -> None:
    events = _events(
        ("b", "op", 0), ("b", "request", 0), ("b", "parse", 0), ("e", "parse", 10),
        ("e", "request", 15), ("b", "reply", 20), ("b", "parse", 20), ("e", "parse", 60),
        ("e", "reply", 70), ("e", "op", 80),
    )  # fmt: skip
    metrics = phase_metrics(operation_table(nest(events).spans))
    assert metrics["phase:op/request/parse"] == pytest.approx(10e-9)
    assert metrics["phase:op/reply/parse"] == pytest.approx(40e-9)
    assert metrics["phase:op/request/unaccounted"] == pytest.approx(5e-9)
    assert metrics["phase:op/reply/unaccounted"] == pytest.approx(10e-9)
    assert not any(name.endswith(":parse") or name == "phase:unaccounted" for name in metrics)


def test_a_metric_is_the_mean_over_the_operations_of_its_outermost_span() -> None:
    events = _events(
        ("b", "bind", 0), ("e", "bind", 10),
        ("b", "search", 20), ("b", "x", 20), ("e", "x", 30), ("e", "search", 60),
    )  # fmt: skip
    metrics = phase_metrics(operation_table(nest(events).spans))
    assert metrics["phase:search"] == pytest.approx(40e-9)  # not halved by the bind
    assert metrics["phase:search/x"] == pytest.approx(10e-9)
    assert metrics["phase:bind"] == pytest.approx(10e-9)


def test_keys_escape_the_separator_and_a_span_called_unaccounted() -> None:
    assert phase_key(("GET /users", "a\\b")) == "GET \\/users/a\\\\b"
    assert phase_key(("op", "unaccounted")) == "op/\\unaccounted"
    assert phase_key(("op", "unaccounted"), unaccounted=True) == "op/unaccounted"
    for path, unaccounted in [(("GET /users", "a\\b"), False), (("op", "unaccounted"), False),
                              (("op", "unaccounted"), True)]:  # fmt: skip
        assert parse_phase_key(phase_key(path, unaccounted=unaccounted)) == (path, unaccounted)


def test_recursion_is_inside_its_outer_span_not_a_phase_of_its_own() -> None:
    events = _events(("b", "f", 0), ("b", "g", 1), ("b", "f", 2), ("e", "f", 5), ("e", "g", 6),
                     ("e", "f", 10))  # fmt: skip
    table = operation_table(nest(events).spans)
    assert [p.path for p in table.phases] == [("f",), ("f", "g"), ("f", "unaccounted")]
    assert table.total_ns == (10, 5, 5)


def test_operations_of_processes_and_threads_are_operations_of_their_own() -> None:
    events = [
        *_events(("b", "op", 0), ("e", "op", 10), pid=7, tid=7),
        *_events(("b", "op", 5), ("e", "op", 8), pid=7, tid=8),
        *_events(("b", "op", 0), ("e", "op", 4), pid=3, tid=3),
    ]
    table = operation_table(nest(events).spans)
    assert len(table) == 3 and table.total_ns == (17,)
    assert _medians(table) == [4]


def test_the_spans_inside_a_span_that_never_ended_are_operations_of_their_own() -> None:
    events = _events(("b", "op", 0), ("e", "op", 10), ("b", "op", 20), ("b", "x", 21),
                     ("e", "x", 22))  # fmt: skip
    table = operation_table(nest(events).spans)
    assert [p.path for p in table.phases] == [("op",), ("x",)]
    assert table.operations == (1, 1) and table.total_ns == (10, 1)


def test_past_the_heaviest_phases_the_rest_is_one_other_phase_per_parent() -> None:
    events = _events(("b", "heavy", 0), ("e", "heavy", 1000))
    for number in range(50):  # fifty names, each a light operation of its own
        start = 2000 + number * 10
        events += _events((("b", f"url {number}", start)), ("e", f"url {number}", start + 2))
    events += _events(("b", "heavy", 5000), ("b", "a", 5001), ("e", "a", 5002),
                      ("b", "b", 5002), ("e", "b", 5005), ("e", "heavy", 6000))  # fmt: skip
    table = operation_table(nest(events).spans, max_phases=2)
    assert table.phases == (
        Phase(("heavy",)),
        Phase(("heavy", "b")),
        Phase(("heavy", OTHER)),
        Phase(("heavy", "unaccounted"), unaccounted=True),
        Phase((OTHER,)),
    )
    assert table.folded == 51
    assert table.operations == (2, 2, 2, 2, 50)
    assert table.total_ns == (2000, 3, 1, 1996, 100)
    assert len(table) == 52
    medians = _medians(table)
    assert medians[0] == 1000 and medians[4] != medians[4]  # OTHER: no median (nan)
    assert decode(encode(table)) == table


def test_the_stored_table_reads_back_and_damage_is_named() -> None:
    table = operation_table(nest(SEARCH).spans)
    assert decode(encode(table)) == table
    with pytest.raises(PhaseBlobError, match="not a phase table"):
        decode(encode(table)[:-3])
    with pytest.raises(PhaseBlobError, match="not a phase table"):
        decode(b"garbage")
    with pytest.raises(PhaseBlobError, match="not a phase table"):
        decode(encode(table).replace(b'"total_ns":[400', b'"total_ns":["400"'))
    newer = encode(table).replace(b'"version":3', b'"version":99')
    with pytest.raises(PhaseBlobError, match="version 99, this cutaway reads 3"):
        decode(newer)


def test_version_1_and_2_tables_of_one_row_per_operation_read_as_their_sums() -> None:
    import json

    phases = [{"path": ["search"], "unaccounted": False},
              {"path": ["search", "decode"], "unaccounted": False},
              {"path": ["search", "unaccounted"], "unaccounted": True}]  # fmt: skip
    rows = [(0, 0, 300, 30, 270), (0, 1, 100, 0, 100)]
    header = json.dumps({"version": 1, "phases": phases, "operations": 2}).encode()
    body = struct.pack("<10q", *(value for row in rows for value in row))
    table = decode(header + b"\n" + body)
    assert table.operations == (2, 2, 2) and table.total_ns == (400, 30, 370)
    assert _medians(table) == [200, 15, 185]
    assert table.calls is None  # version 1 did not count spans
    with pytest.raises(PhaseBlobError, match="bytes of values for 2 operations"):
        decode(header + b"\n" + body[:-3])
    counted = [(0, 0, 300, 30, 270, 1, 2, 0), (0, 1, 100, 0, 100, 1, 0, 0)]
    header = header.replace(b'"version": 1', b'"version": 2')
    body = struct.pack("<16q", *(value for row in counted for value in row))
    table = decode(header + b"\n" + body)
    assert table.total_ns == (400, 30, 370) and table.calls == (2, 2, 0)


def test_the_stored_run_says_how_many_phases_were_folded() -> None:
    from cutaway.probes.spans.capture import phase_data

    events = []
    for number in range(MAX_PHASES + 50):
        events += _events(
            ("b", f"GET /item/{number}", number * 10), ("e", f"GET /item/{number}", number * 10 + 5)
        )
    problems: list[str] = []
    data, metrics = phase_data("otlp", nest(events).spans, problems)
    assert data is not None and len(decode(data.data).phases) == MAX_PHASES + 1
    assert problems == [
        f"OpenTelemetry: 50 distinct phases beyond the {MAX_PHASES} heaviest are counted "
        "together as '(other)'"
    ]
    assert metrics["phase:(other)"] == pytest.approx(5e-9)  # per operation of its own


def test_a_tree_by_path_numbers_counts_as_the_tree_by_paths_also_mixed_with_them() -> None:
    """add_numbered_tree sums as add_tree does, also into paths add_tree counted first and
    under a parent path that only another operation had, with rests and negative times."""
    trees: list[dict[tuple[str, ...], list[int]]] = [
        {("a",): [100, 1], ("a", "b"): [30, 2], ("a", "b", "c"): [40, 1]},  # overlapping
        {("a",): [0, 1], ("a", "d"): [-5, 1]},
        {("a", "b"): [7, 1]},  # under an ancestor that left no span in this operation
        {("x",): [9, 1], ("x", "a"): [3, 1]},
    ]
    by_paths = PhaseAccumulator()
    for tree in trees:
        by_paths.add_tree(tree)
    for numbered_from in range(len(trees) + 1):
        mixed = PhaseAccumulator()
        for index, tree in enumerate(trees):
            if index < numbered_from:
                mixed.add_tree(tree)
                continue
            numbered: dict[int, list[int]] = {}
            for path, sums in tree.items():
                number = 0
                for name in path:
                    step = mixed.numbered_steps[number].get(name)
                    number = mixed.step_number(number, name) if step is None else step
                numbered[number] = sums
            mixed.add_numbered_tree(numbered)
        assert encode(mixed.table()) == encode(by_paths.table())
        assert list(mixed.sums()) == list(by_paths.sums())
