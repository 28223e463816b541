"""A probe is one package plus one registry line: a toy probe, defined here and registered the
way cutaway.probes.registry lists the real ones, reaches the analysis (compare.analyze, over a
real store) and every report format, with no change to the core."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from cutaway.compare import analyze
from cutaway.model import (
    PROCESS_METRICS,
    Analysis,
    Caution,
    ProbeResult,
    Run,
    RunStatus,
    Spec,
    Variant,
)
from cutaway.probes import registry
from cutaway.probes.plugin import (
    CsvFormat,
    FlameGraphDocument,
    ProbePlugin,
    ProbeViews,
    StoredExperiment,
    TablesView,
    Tags,
)
from cutaway.report import FORMATS, build_formats
from cutaway.report.export_values import write_csv
from cutaway.report.sections import (
    Block,
    Column,
    Figure,
    Heading,
    JsonValue,
    Name,
    Quantity,
    Row,
    Table,
)
from cutaway.store import Store

# Data from a measured program: every format must show it as text, escaped.
HOSTILE_VARIANT = "<b>a|b</b>"


@dataclass(frozen=True)
class ToyResult(ProbeResult):
    probe: ClassVar[str] = "toy"
    ok_runs: tuple[tuple[str, int], ...]  # (variant, counted runs that succeeded)


def _toy_of(analysis: Analysis) -> tuple[tuple[str, int], ...]:
    found = analysis.result(ToyResult)
    return () if found is None else found.ok_runs


def _toy_table(analysis: Analysis) -> Table:
    rows = tuple(
        Row((Name(variant), Quantity(float(n), "count"))) for variant, n in _toy_of(analysis)
    )
    return Table(
        Heading(("toy probe",), (": runs that succeeded",)),
        (Column("variant"), Column("runs")),
        rows,
    )


def _toy_tables(analysis: Analysis, compact: bool) -> list[Block]:
    return [(_toy_table(analysis),)] if _toy_of(analysis) else []


def _toy_csv(analysis: Analysis) -> str:
    return write_csv(("variant", "toy_runs"), _toy_of(analysis))


class ToyPlugin(ProbePlugin):
    name = "toy"
    csv_formats = (CsvFormat("toy-csv", "toy probe: one row per variant", _toy_csv),)

    def selected(self, spec: Spec) -> bool:
        return True  # the toy needs no key in the experiment file

    def analyze(self, stored: StoredExperiment) -> tuple[ProbeResult | None, list[Caution]]:
        runs = stored.store.runs(stored.experiment_id, include_warmup=False)
        counted = Counter(run.variant for run in runs if run.status is RunStatus.OK)
        result = ToyResult(tuple((name, counted[name]) for name in stored.variants))
        return result, [Caution("toy", "the toy probe measured nothing real")]

    def combined(
        self, first: ProbeResult | None, second: ProbeResult | None, tags: Tags
    ) -> ProbeResult | None:
        return None

    @property
    def views(self) -> ProbeViews:
        return TablesView(_toy_tables)

    def figures(self, analysis: Analysis) -> list[Figure]:
        if not _toy_of(analysis):
            return []
        data: dict[str, JsonValue] = {
            "unit": "count",
            "functions": ["runs"],
            "variants": [variant for variant, _ in _toy_of(analysis)],
            "totals": [[n for _, n in _toy_of(analysis)]],
            "counts": [[n for _, n in _toy_of(analysis)]],
            "only": [None],
        }
        return [Figure("bars", Heading(("toy figure",), ()), data, _toy_table(analysis))]

    def json_part(self, analysis: Analysis) -> dict[str, JsonValue]:
        return {"toy": [{"variant": variant, "runs": n} for variant, n in _toy_of(analysis)]}

    def flame_graphs(self, analysis: Analysis) -> list[FlameGraphDocument]:
        from cutaway.probes.profile.flamegraph import render_flamegraph

        svg = render_flamegraph({"toy;main": 1.0}, title="toy", subtitle="", unit="seconds")
        return [FlameGraphDocument(f"toy flame graph of {HOSTILE_VARIANT}", svg)]


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The registry with one more line: what adding a probe's package to it does."""
    monkeypatch.setattr(registry, "PLUGINS", (*registry.PLUGINS, ToyPlugin()))
    yield


def _stored(tmp_path: Path) -> tuple[Store, int]:
    spec = Spec(
        name="toy",
        variants=(Variant("plain", ("true",)), Variant(HOSTILE_VARIANT, ("true",))),
        baseline="plain",
        rounds=3,
        warmup_rounds=0,
    )
    store = Store(tmp_path / "db")
    experiment_id = store.create_experiment(spec, {}, None, "test")
    for round_index in range(3):
        for position, name in enumerate(("plain", HOSTILE_VARIANT)):
            metrics = {m.name: 0.01 * (1 + position + round_index) for m in PROCESS_METRICS}
            run = Run(name, round_index, position, RunStatus.OK, 0, None, metrics, 0.0)
            store.add_run(experiment_id, run)
    store.finish_experiment(experiment_id, "complete", None)
    return store, experiment_id


def test_a_registered_probe_reaches_the_analysis_and_every_format(
    tmp_path: Path, toy_registered: None
) -> None:
    store, experiment_id = _stored(tmp_path)
    analysis = analyze(store, experiment_id, resamples=200)
    assert analysis.result(ToyResult) == ToyResult((("plain", 3), (HOSTILE_VARIANT, 3)))
    assert any(caution.kind == "toy" for caution in analysis.cautions)

    for name in ("terminal", "markdown"):
        text = FORMATS[name].render(analysis)
        assert "toy probe" in text, name
    markdown = FORMATS["markdown"].render(analysis)
    assert "| `<b>a\\|b</b>` | 3 |" in markdown  # the variant's name is data: a code span
    html = FORMATS["html"].render(analysis)
    assert "toy probe" in html and "toy figure" in html
    # Its flame graph, in the HTML report's section, its title escaped.
    assert '<section class="flamegraphs" id="flamegraphs">' in html
    assert "<summary>toy flame graph of &lt;b&gt;a|b&lt;/b&gt;</summary>" in html
    assert HOSTILE_VARIANT not in html and "&lt;b&gt;a|b&lt;/b&gt;" in html

    document = json.loads(FORMATS["json"].render(analysis))
    assert document["toy"] == [
        {"variant": "plain", "runs": 3},
        {"variant": HOSTILE_VARIANT, "runs": 3},
    ]
    assert list(document)[-2:] == ["toy", "results"]  # a part with no anchor: before "results"

    formats = build_formats()
    rows = list(csv.DictReader(io.StringIO(formats["toy-csv"].render(analysis))))
    assert rows == [
        {"variant": "plain", "toy_runs": "3"},
        {"variant": HOSTILE_VARIANT, "toy_runs": "3"},
    ]


def test_an_unregistered_probe_is_in_no_format(tmp_path: Path) -> None:
    store, experiment_id = _stored(tmp_path)
    analysis = analyze(store, experiment_id, resamples=200)
    assert analysis.result(ToyResult) is None
    assert "toy" not in json.loads(FORMATS["json"].render(analysis))
    assert "toy-csv" not in build_formats()
    assert 'id="flamegraphs"' not in FORMATS["html"].render(analysis)
    assert all(
        "toy probe" not in FORMATS[name].render(analysis) for name in ("terminal", "markdown")
    )


class TwoPartToyPlugin(ToyPlugin):
    """A toy whose keys sit in two places: one among another probe's keys, one after a key of
    the report that another probe's part follows too."""

    def json_parts(self, analysis: Analysis) -> list[tuple[str | None, dict[str, JsonValue]]]:
        return [("top_stacks", {"toy_after_stacks": 1}), ("series", {"toy_after_series": 2})]


def test_a_probes_json_parts_follow_the_keys_they_name_even_another_probes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "PLUGINS", (*registry.PLUGINS, TwoPartToyPlugin()))
    store, experiment_id = _stored(tmp_path)
    keys = list(json.loads(FORMATS["json"].render(analyze(store, experiment_id, resamples=200))))
    start = keys.index("series")
    assert keys[start : start + 6] == [
        "series",
        "profile_totals",
        "top_functions",
        "top_stacks",
        "toy_after_stacks",
        "profile_phases",
    ]
    # The profile probe is registered before the toy: its part after "series", and every
    # part that follows one of its keys, come before the toy's.
    assert keys[-2:] == ["toy_after_series", "results"]


class FollowingPlugin(ProbePlugin):
    """A plugin whose JSON part follows another probe's part (the uprobes probe's), not a key
    of the core's document."""

    name = "following"
    json_after = "function_calls"

    def json_part(self, analysis: Analysis) -> dict[str, JsonValue]:
        return {"following": []}


def test_a_json_part_may_follow_another_probes_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "PLUGINS", (FollowingPlugin(), *registry.PLUGINS))
    store, experiment_id = _stored(tmp_path)
    keys = list(json.loads(FORMATS["json"].render(analyze(store, experiment_id, resamples=200))))
    assert keys[keys.index("function_calls") + 1] == "following"
    # The probes' parts keep the places format version 9 gave them.
    assert keys.index("profile_phases") + 1 == keys.index("phases")
    assert keys[keys.index("phases") :][:3] == ["phases", "phase_comparisons", "function_calls"]
    assert keys[-2:] == ["load", "results"] and keys.index("attribution_curve") + 1 == keys.index(
        "load"
    )
