"""Phases are known by their place in the tree: a ``parse`` under ``request`` and one under
``reply`` are two phases with two metrics and two verdicts, in every format, and each phase's
spans are counted (calls per operation and per run), through the store and the analysis as a
run of the spans probe (or uprobes) leaves them."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from cutaway.compare import analyze
from cutaway.model import PROCESS_METRICS, Analysis, ProbeSpec, Run, RunStatus, Spec
from cutaway.model import Variant as SpecVariant
from cutaway.probes.phase_tables import phase_data
from cutaway.probes.span_model import Edge, Span, SpanEvent, nest
from cutaway.probes.spans.result import phases_result
from cutaway.probes.spans.settings import SpansSpec, with_spans
from cutaway.report import FORMATS
from cutaway.store import Store

ROUNDS = 12
REQUEST_PARSE = "phase:op/request/parse"
REPLY_PARSE = "phase:op/reply/parse"


def _spans(request_parse_ns: int, reply_parse_ns: int, checks: int) -> list[Span]:
    """Five operations: ``op`` with a ``request`` and a ``reply``, each with a ``parse``; the
    reply also makes `checks` ``check`` spans (a function called in a loop)."""
    events: list[SpanEvent] = []
    t = 0

    def span(name: str, duration: int) -> None:
        nonlocal t
        events.append(SpanEvent(Edge.BEGIN, name, 1, 1, t))
        t += duration
        events.append(SpanEvent(Edge.END, name, 1, 1, t))

    for _ in range(5):
        events.append(SpanEvent(Edge.BEGIN, "op", 1, 1, t))
        events.append(SpanEvent(Edge.BEGIN, "request", 1, 1, t))
        span("parse", request_parse_ns)
        t += 10_000
        events.append(SpanEvent(Edge.END, "request", 1, 1, t))
        events.append(SpanEvent(Edge.BEGIN, "reply", 1, 1, t))
        span("parse", reply_parse_ns)
        for _ in range(checks):
            span("check", 1_000)
        t += 10_000
        events.append(SpanEvent(Edge.END, "reply", 1, 1, t))
        t += 5_000
        events.append(SpanEvent(Edge.END, "op", 1, 1, t))
        t += 100_000
    return list(nest(events).spans)


def _analysis(tmp_path: Path, source: str) -> Analysis:
    """Two variants; only ``reply``'s ``parse`` is slower (3x) in the second."""
    spec = Spec(
        name="two parses",
        variants=(SpecVariant("base", ("x",)), SpecVariant("slow", ("x",))),
        baseline="base",
        rounds=ROUNDS,
        warmup_rounds=0,
        probes=with_spans(ProbeSpec(), SpansSpec()),
    )
    store = Store(tmp_path / "db")
    experiment_id = store.create_experiment(spec, {}, None, "test")
    rng = np.random.default_rng(3)
    for round_index in range(ROUNDS):
        for variant, reply_ns in (("base", 100_000), ("slow", 300_000)):
            noise = float(rng.normal(1.0, 0.005))
            spans = _spans(int(100_000 * noise), int(reply_ns * noise), checks=7)
            data, metrics = phase_data(source, spans)
            assert data is not None
            values = {m.name: float(rng.uniform(1.0, 1.01)) for m in PROCESS_METRICS}
            run = Run(variant, round_index, 0, RunStatus.OK, 0, None, {**values, **metrics}, 0.0)
            store.add_run(experiment_id, run, [data])
    store.finish_experiment(experiment_id, "complete", None)
    return analyze(store, experiment_id, resamples=500)


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    return _analysis(tmp_path_factory.mktemp("phases"), "sdk")


def test_one_name_under_two_parents_gets_two_verdicts(analysis: Analysis) -> None:
    verdicts = {c.metric: c.verdict.value for c in phases_result(analysis).phase_comparisons}
    assert verdicts[REPLY_PARSE] == "regressed"
    assert verdicts[REQUEST_PARSE] != "regressed"
    assert verdicts["phase:op/reply/unaccounted"] != "regressed"
    assert "phase:parse" not in verdicts and "phase:unaccounted" not in verdicts


def test_every_row_of_the_dissection_has_its_verdict(analysis: Analysis) -> None:
    compared = {c.metric for c in phases_result(analysis).phase_comparisons}
    rows = [stat for stat in phases_result(analysis).phases if stat.variant == "slow"]
    assert {stat.metric for stat in rows} <= compared
    assert any(stat.unaccounted and len(stat.path) == 3 for stat in rows)


def test_calls_are_counted_per_operation_and_per_run(analysis: Analysis) -> None:
    by_key = {(s.variant, s.key): s for s in phases_result(analysis).phases}
    check = by_key[("slow", "op/reply/check")]
    assert (check.calls_per_operation, check.calls_per_run) == (7, 35)
    assert by_key[("base", "op/request/parse")].calls_per_operation == 1


def _line(text: str, name: str) -> str:
    """The one line of `text` naming the phase `name` under ``reply``: its row."""
    lines = text.splitlines()
    reply = next(i for i, line in enumerate(lines) if re.search(r"\breply\b", line))
    return next(line for line in lines[reply:] if name in line)


@pytest.mark.parametrize("name", ["terminal", "markdown"])
def test_text_formats_show_each_parse_with_its_own_verdict_and_counts(
    analysis: Analysis, name: str
) -> None:
    text = FORMATS[name].render(analysis)
    lines = text.splitlines()
    request = next(i for i, line in enumerate(lines) if re.search(r"\brequest\b", line))
    request_parse = next(line for line in lines[request:] if "parse" in line)
    reply_parse = _line(text, "parse")
    assert "regressed" in reply_parse and "regressed" not in request_parse
    assert re.search(r"\b7\b", _line(text, "check")) and re.search(r"\b35\b|calls", text)


def test_json_and_csv_key_each_phase_by_its_place(analysis: Analysis) -> None:
    document = json.loads(FORMATS["json"].render(analysis))
    comparisons = {c["key"]: c for c in document["phase_comparisons"]}
    assert comparisons["op/reply/parse"]["verdict"] == "regressed"
    assert comparisons["op/reply/parse"]["parent"] == "reply"
    assert comparisons["op/reply/parse"]["parent_key"] == "op/reply"
    assert comparisons["op/reply/parse"]["path"] == ["op", "reply", "parse"]
    assert comparisons["op/request/parse"]["verdict"] != "regressed"
    check = next(p for p in document["phases"] if p["key"] == "op/reply/check")
    assert check["calls_per_operation"] == 7 and check["calls_per_run"] == 35
    for fmt in ("csv", "phases-csv"):
        rows = list(csv.DictReader(io.StringIO(FORMATS[fmt].render(analysis))))
        if fmt == "phases-csv":
            slow = {row["key"]: row for row in rows if row["variant"] == "slow"}
            assert slow["op/reply/parse"]["verdict"] == "regressed"
            assert slow["op/request/parse"]["verdict"] != "regressed"
            assert float(slow["op/reply/check"]["calls_per_operation"]) == 7
        else:
            by_metric = {row.get("metric"): row for row in rows}
            assert by_metric.get(REPLY_PARSE, {}).get("verdict", "regressed") == "regressed"


def test_html_shows_each_parse_with_its_own_verdict(analysis: Analysis) -> None:
    html = FORMATS["html"].render(analysis)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", html, flags=re.S)
    parse_rows = [row for row in rows if re.search(r">\s*(&nbsp;|\s)*parse\s*<", row)]
    assert parse_rows and len(parse_rows) % 2 == 0  # the table, and the waterfall's own
    assert sum("regressed" in row for row in parse_rows) == len(parse_rows) // 2
    assert any(re.search(r">\s*7(\.0)?\s*<", row) for row in rows)


def test_uprobes_phases_are_counted_the_same(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, "uprobes")
    found = phases_result(analysis)
    check = next(s for s in found.phases if s.key == "op/reply/check" and s.variant == "base")
    assert check.calls_per_operation == 7 and check.source == "uprobes"
    verdicts = {c.metric: c.verdict.value for c in phases_result(analysis).phase_comparisons}
    assert verdicts[REPLY_PARSE] == "regressed" and verdicts[REQUEST_PARSE] != "regressed"


def test_history_follows_a_phase_by_its_place(tmp_path: Path) -> None:
    from cutaway.history import load_history
    from tests.unit.test_compare_phases import _store_experiment

    store = Store(tmp_path / "db")
    _store_experiment(store, 300_000, seed=1)
    _store_experiment(store, 150_000, seed=2)
    history = load_history(store, "search", metric="phase:search/retrieve", variant="server")
    assert history.metric.name == "phase:search/retrieve" and history.metric.unit == "seconds"
    assert [round(p.value * 1e5) for p in history.points] == [30, 15]  # seconds: 300, 150 µs
