"""Calls per probed function (cutaway.probes.uprobes.counts): every call of each function of
each binary in the operations of each outermost function, recursion included; stored and read
back; and shown beside the dissection in every format."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pytest

from cutaway.model import FunctionCalls
from cutaway.probes.uprobes import counts
from cutaway.probes.uprobes.operations import Operations
from cutaway.probes.uprobes.plugin import FunctionCallsResult
from cutaway.probes.uprobes.tracer import Event
from cutaway.report import FORMATS
from tests.unit.test_reports import phases

FUNCTIONS = ("do_search", "test_filter", "do_bind", "test_filter")
BINARIES = ("/usr/sbin/slapd", "/usr/sbin/slapd", "/usr/sbin/slapd", "./v2/slapd")


def _operations(*events: tuple[str, int, int]) -> list:  # type: ignore[type-arg]
    """(edge b/e, function index, time) on one thread, cut into operations."""
    return Operations().add(Event(edge == "b", index, 1, 1, time) for edge, index, time in events)


def test_every_call_is_counted_in_its_outermost_functions_operations() -> None:
    operations = _operations(
        ("b", 0, 0), ("b", 1, 1), ("b", 1, 2), ("e", 1, 4), ("e", 1, 6),  # recursion: 2 calls
        ("b", 1, 7), ("e", 1, 8), ("e", 0, 10),
        ("b", 0, 20), ("b", 1, 21), ("e", 1, 22), ("e", 0, 30),
        ("b", 2, 40), ("b", 3, 41), ("e", 3, 43), ("e", 2, 50),  # the other build's
    )  # fmt: skip
    counted = counts.count_calls(operations, FUNCTIONS, BINARIES)
    assert counted.operations == {"do_search": 2, "do_bind": 1}
    assert counted.calls[("do_search", "/usr/sbin/slapd", "test_filter")] == (4, 2 + 5 + 1 + 1)
    assert counted.calls[("do_search", "/usr/sbin/slapd", "do_search")] == (2, 20)
    assert counted.calls[("do_bind", "./v2/slapd", "test_filter")] == (1, 2)
    assert [key[2] for key in counted.calls][:2] == ["do_search", "test_filter"]  # entry order
    assert counts.decode(counts.encode(counted)) == counted
    with pytest.raises(counts.DamagedCounts, match="version 9"):
        counts.decode(b'{"version": 9, "operations": {}, "functions": []}')
    with pytest.raises(counts.DamagedCounts, match="damaged"):
        counts.decode(b"[")


def test_calls_per_probed_function_are_shown_in_every_format() -> None:
    item = FunctionCalls("warm", "do_search", "/usr/sbin/slapd", "test_filter", 3, 12,
                         120_132, 10_011.0, 40_044.0, 37e-6)  # fmt: skip
    counted = FunctionCallsResult((item, replace(item, variant="cold")))
    analysis = replace(phases(), probe_results=(counted,))
    for name in ("terminal", "markdown", "html"):
        text = FORMATS[name].render(analysis)
        assert "calls per probed function" in text and "test_filter" in text, name
        assert "10,011" in text, name
        # The terminal names the binary only where a function is probed in two (two builds).
        assert ("/usr/sbin/slapd" in text) is (name != "terminal"), name
    two_builds = replace(
        analysis,
        probe_results=(FunctionCallsResult((item, replace(item, binary="./v2/slapd"))),),
    )
    assert "./v2/slapd" in FORMATS["terminal"].render(two_builds)
    document = json.loads(FORMATS["json"].render(analysis))
    assert document["function_calls"][0] == {
        "variant": "warm", "operation": "do_search", "binary": "/usr/sbin/slapd",
        "function": "test_filter", "runs": 3, "operations": 12, "calls": 120_132,
        "calls_per_operation": 10_011.0, "calls_per_run": 40_044.0, "seconds_per_call": 37e-6,
    }  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(FORMATS["uprobe-calls-csv"].render(analysis))))
    assert [row["variant"] for row in rows] == ["warm", "cold"]
    assert (
        float(rows[0]["calls_per_operation"]) == 10_011 and rows[0]["binary"] == "/usr/sbin/slapd"
    )
