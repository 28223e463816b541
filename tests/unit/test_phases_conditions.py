"""Under ``[[conditions]]`` the phases are compared along both axes, as the whole-process
metrics are (cutaway.families.compared_pairs): the dissection shows every one of those pairs
with its verdicts, not only the pairs against the baseline."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cutaway.compare import analyze
from cutaway.families import compared_pairs
from cutaway.model import PROCESS_METRICS, Run, RunStatus, Verdict
from cutaway.probes.phase_tables import phase_data
from cutaway.probes.span_model import Edge, Span, SpanEvent, nest
from cutaway.probes.spans.result import phases_result
from cutaway.report import FORMATS
from cutaway.spec import parse_spec
from cutaway.store import Store

ROUNDS = 12
FILE = """
name = "search"
baseline = "scan"
rounds = 12
warmup_rounds = 0
[probes]
spans = {}
[[variants]]
name = "scan"
command = "true"
[[variants]]
name = "index"
command = "true"
[[conditions]]
name = "warm"
[[conditions]]
name = "cold"
"""
# Time in "retrieve" (ns) per variant: the index and the cold cache each change it.
RETRIEVE_NS = {
    "scan/warm": 400_000,
    "scan/cold": 1_600_000,
    "index/warm": 40_000,
    "index/cold": 900_000,
}


def _spans(retrieve_ns: int) -> list[Span]:
    events, t = [], 0
    for _ in range(3):  # operations per run
        events.append(SpanEvent(Edge.BEGIN, "search", 1, 1, t))
        events += [
            SpanEvent(Edge.BEGIN, "retrieve", 1, 1, t + 100),
            SpanEvent(Edge.END, "retrieve", 1, 1, t + 100 + retrieve_ns),
        ]
        t += retrieve_ns + 5_000
        events.append(SpanEvent(Edge.END, "search", 1, 1, t))
        t += 1000
    return list(nest(events).spans)


def test_every_compared_pair_of_the_phases_is_shown(tmp_path: Path) -> None:
    spec = parse_spec(FILE)
    store = Store(tmp_path / "db")
    experiment_id = store.create_experiment(spec, {}, None, "test")
    rng = np.random.default_rng(7)
    for round_index in range(ROUNDS):
        for order, variant in enumerate(v.name for v in spec.variants):
            noise = float(rng.normal(1.0, 0.01))
            data, phase_metrics = phase_data("sdk", _spans(int(RETRIEVE_NS[variant] * noise)))
            assert data is not None
            values = {m.name: float(rng.uniform(1.0, 1.01)) for m in PROCESS_METRICS}
            metrics = {**values, **phase_metrics}
            run = Run(variant, round_index, order, RunStatus.OK, 0, None, metrics, 0.0)
            store.add_run(experiment_id, run, [data])
    store.finish_experiment(experiment_id, "complete", None)
    analysis = analyze(store, experiment_id, resamples=500)
    pairs = compared_pairs(spec)
    assert ("index/warm", "index/cold") in pairs  # a pair whose reference is not the baseline
    verdicts = {
        (c.baseline, c.variant): c.verdict
        for c in phases_result(analysis).phase_comparisons
        if c.metric == "phase:search/retrieve"
    }
    assert verdicts[("index/warm", "index/cold")] is Verdict.REGRESSED
    assert verdicts[("scan/cold", "index/cold")] is Verdict.IMPROVED
    for name in ("terminal", "markdown", "html"):
        text = FORMATS[name].render(analysis)
        # The dissection: from its title to its note (the verdict table above it names
        # every pair too).
        dissection = text[text.index("phases from spans") : text.index("unaccounted: a phase")]
        for reference, variant in pairs:
            assert f"{variant} vs {reference}" in dissection, (name, reference, variant)
