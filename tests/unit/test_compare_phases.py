"""`cutaway compare A B` with the spans probe in both: the phases of two stored experiments side
by side, and each phase compared with the verdicts of the whole-process metrics, in every
format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from cutaway.compare import compare_experiments
from cutaway.model import (
    PROCESS_METRICS,
    ProbeSpec,
    Run,
    RunStatus,
    Spec,
    Variant,
    Verdict,
)
from cutaway.probes.phase_tables import phase_data
from cutaway.probes.span_model import Edge, SpanEvent, nest
from cutaway.probes.spans.result import phases_result
from cutaway.probes.spans.settings import SpansSpec, with_spans
from cutaway.report import FORMATS
from cutaway.store import Store

ROUNDS = 20


def _spans(decode_ns: int, retrieve_ns: int) -> list:  # type: ignore[type-arg]
    events, t = [], 0
    for _ in range(5):  # operations per run
        events.append(SpanEvent(Edge.BEGIN, "search", 1, 1, t))
        for name, duration in (("decode", decode_ns), ("retrieve", retrieve_ns)):
            events += [
                SpanEvent(Edge.BEGIN, name, 1, 1, t + 100),
                SpanEvent(Edge.END, name, 1, 1, t + 100 + duration),
            ]
            t += duration + 200
        events.append(SpanEvent(Edge.END, "search", 1, 1, t))
        t += 1000
    return list(nest(events).spans)


def _store_experiment(store: Store, retrieve_ns: int, seed: int) -> int:
    spec = Spec(
        name="search",
        variants=(Variant("server", ("x",)),),
        baseline="server",
        rounds=ROUNDS,
        warmup_rounds=0,
        probes=with_spans(ProbeSpec(), SpansSpec()),
    )
    experiment_id = store.create_experiment(spec, {}, None, "test")
    rng = np.random.default_rng(seed)
    for round_index in range(ROUNDS):
        noise = float(rng.normal(1.0, 0.01))
        spans = _spans(int(100_000 * noise), int(retrieve_ns * noise))
        data, phase_metrics = phase_data("sdk", spans)
        assert data is not None
        values = {m.name: float(rng.uniform(1.0, 1.01)) for m in PROCESS_METRICS}
        run = Run("server", round_index, 0, RunStatus.OK, 0, None, {**values, **phase_metrics}, 0.0)
        store.add_run(experiment_id, run, [data])
    store.finish_experiment(experiment_id, "complete", None)
    return experiment_id


def test_compare_carries_phases_with_their_verdicts(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    first = _store_experiment(store, 300_000, seed=1)
    second = _store_experiment(store, 150_000, seed=2)  # retrieve twice as fast
    analysis = compare_experiments(store, first, second, resamples=500)
    assert {(s.variant, s.phase) for s in phases_result(analysis).phases} >= {
        ("server (#1)", "retrieve"),
        ("server (#2)", "retrieve"),
        ("server (#2)", "decode"),
    }
    verdicts = {c.metric: c for c in phases_result(analysis).phase_comparisons}
    assert (
        verdicts["phase:search/retrieve"].baseline,
        verdicts["phase:search/retrieve"].variant,
    ) == (
        "server (#1)",
        "server (#2)",
    )
    assert verdicts["phase:search/retrieve"].verdict is Verdict.IMPROVED
    assert 0.45 < verdicts["phase:search/retrieve"].ratio < 0.55
    assert verdicts["phase:search/decode"].verdict is not Verdict.IMPROVED
    document = json.loads(FORMATS["json"].render(analysis))
    assert {c["metric"] for c in document["phase_comparisons"]} >= {"phase:search/retrieve"}
    assert {p["variant"] for p in document["phases"]} == {"server (#1)", "server (#2)"}
    for name in ("terminal", "markdown", "html"):
        text = FORMATS[name].render(analysis)
        assert "phases from spans" in text, name
        assert "server (#2) vs server (#1)" in text, name
    csv = FORMATS["phases-csv"].render(analysis)
    assert "phase:search/retrieve,server (#1)," in csv and ",improved" in csv


def test_compare_without_phases_on_both_sides_has_none(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    first = _store_experiment(store, 300_000, seed=1)
    spec = Spec(name="plain", variants=(Variant("server", ("x",)),), baseline="server", rounds=3)
    second = store.create_experiment(spec, {}, None, "test")
    for round_index in range(3):
        values = {m.name: 1.0 + round_index / 100 for m in PROCESS_METRICS}
        store.add_run(second, Run("server", round_index, 0, RunStatus.OK, 0, None, values, 0.0))
    store.finish_experiment(second, "complete", None)
    analysis = compare_experiments(store, first, second, resamples=200)
    assert phases_result(analysis).phases == () and phases_result(analysis).phase_comparisons == ()
