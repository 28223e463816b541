"""A probe is one package plus one registry line: a toy probe, defined here and registered the
way cutaway.probes.registry lists the real ones, reaches the analysis (compare.analyze, over a
real store) and every report format, with no change to the core; and a toy probe with its own
key of the experiment file's [probes] and its own `cutaway run` flag gets its settings read,
checked, stored and handed to its capture side and its analysis, with no change to the core;
and a toy measured phase with a top-level table of its own, per-variant keys, the command of
every run and the metrics of each, the primary one its own, is one package too."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from cutaway.cli.parser import build_parser, parse_arguments
from cutaway.cli.run_spec import spec_from_args
from cutaway.compare import analyze
from cutaway.model import (
    HIGHER_IS_BETTER,
    PROCESS_METRICS,
    Analysis,
    Caution,
    Metric,
    ProbeResult,
    ProbeSpec,
    Run,
    RunStatus,
    Spec,
    Variant,
)
from cutaway.probes import core, registry
from cutaway.probes.base import Attachment, Overhead
from cutaway.probes.plugin import (
    CsvFormat,
    FlameGraphDocument,
    ProbePlugin,
    ProbeViews,
    StoredExperiment,
    TablesView,
    Tags,
    VariantEntry,
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
from cutaway.settings_reading import KeyPath, expected
from cutaway.spec import SpecError, load_spec
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


# -- a toy probe with its own settings: a key of [probes] and a flag of `cutaway run`

GREETING_KEY = "greeting"


@dataclass(frozen=True)
class GreetingSettings:
    """The toy probe's settings, a type of its own package (here, of this test)."""

    words: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {"words": list(self.words)}


def greeting_settings(probes: ProbeSpec) -> GreetingSettings | None:
    """The toy probe's typed accessor: its settings as the spec or the store has them."""
    stored = probes.setting(GREETING_KEY)
    if not isinstance(stored, Mapping):
        return None
    words = stored["words"]
    assert isinstance(words, list)
    return GreetingSettings(tuple(str(word) for word in words))


def _words(value: object, key_path: KeyPath) -> tuple[str, ...]:
    words = value.split(",") if isinstance(value, str) else value
    if not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
        raise expected("a non-empty list of words", value, key_path)
    return tuple(words)


@dataclass(frozen=True)
class GreetingResult(ProbeResult):
    probe: ClassVar[str] = "greeting"
    words: tuple[str, ...]


class GreetingCapture:
    """The capture side the runner would attach: it holds the settings it was given."""

    name = "greeting"
    own_runs = False

    def __init__(self, settings: GreetingSettings) -> None:
        self.settings = settings

    def check(self) -> str:
        return "toy"

    def overhead(self) -> Overhead:
        return Overhead()

    def check_program(self, program: str) -> str | None:
        return None

    def before_run(self, environment: Mapping[str, str]) -> Attachment:
        return Attachment()

    def after_run(self) -> list[object]:
        return []

    def run_metrics(self) -> Mapping[str, float]:
        return {}

    def close(self) -> None:
        pass


class GreetingPlugin(ProbePlugin):
    name = "greeting"
    settings_keys = (GREETING_KEY,)
    options = ("--greeting",)

    def read_settings(
        self, table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec
    ) -> ProbeSpec:
        words = _words(table[GREETING_KEY], (*key_path, GREETING_KEY))
        return probes.with_setting(GREETING_KEY, GreetingSettings(words).to_dict())

    def read_option(self, option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
        earlier = greeting_settings(probes)
        words = (*(earlier.words if earlier else ()), *_words(value, (option,)))
        return probes.with_setting(GREETING_KEY, GreetingSettings(words).to_dict())

    def add_arguments(self, run: argparse.ArgumentParser) -> None:
        run.add_argument("--greeting", metavar="W,X", help="toy probe: words to greet with")

    def option_values(self, args: argparse.Namespace) -> dict[str, object]:
        return {"--greeting": args.greeting}

    def selected(self, spec: Spec) -> bool:
        return greeting_settings(spec.probes) is not None

    def capture(self, spec: ProbeSpec) -> GreetingCapture:  # type: ignore[override]
        settings = greeting_settings(spec)
        assert settings is not None
        return GreetingCapture(settings)

    def analyze(self, stored: StoredExperiment) -> tuple[ProbeResult | None, list[Caution]]:
        settings = greeting_settings(stored.spec.probes)
        assert settings is not None
        return GreetingResult(settings.words), []

    def json_part(self, analysis: Analysis) -> dict[str, JsonValue]:
        result = analysis.result(GreetingResult)
        return {"greeting": [] if result is None else list(result.words)}


GREETING_FILE = """name = "greeting"
rounds = 3
warmup_rounds = 0

[[variants]]
name = "plain"
command = "true"

[[variants]]
name = "other"
command = "true"

[probes]
greeting = ["hello", "<b>"]
"""


@pytest.fixture
def greeting_registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(registry, "PLUGINS", (*registry.PLUGINS, GreetingPlugin()))
    yield


def test_a_probes_own_key_and_flag_reach_its_capture_and_its_analysis(
    tmp_path: Path, greeting_registered: None
) -> None:
    path = tmp_path / "greeting.toml"
    path.write_text(GREETING_FILE)
    spec = spec_from_args(parse_arguments(["run", str(path), "--greeting", "world"]))
    assert greeting_settings(spec.probes) == GreetingSettings(("hello", "<b>", "world"))

    probes = core.build_probes(spec)
    assert len(probes) == 1 and isinstance(probes[0], GreetingCapture)
    assert probes[0].settings == GreetingSettings(("hello", "<b>", "world"))

    store = Store(tmp_path / "db")
    experiment_id = store.create_experiment(spec, {}, None, "test")
    for round_index in range(3):
        for position, name in enumerate(("plain", "other")):
            metrics = {m.name: 0.01 * (1 + position + round_index) for m in PROCESS_METRICS}
            store.add_run(
                experiment_id, Run(name, round_index, position, RunStatus.OK, 0, None, metrics, 0.0)
            )
    store.finish_experiment(experiment_id, "complete", None)
    assert store.experiment(experiment_id).spec.probes == spec.probes  # stored as it was read
    analysis = analyze(store, experiment_id, resamples=200)
    assert analysis.result(GreetingResult) == GreetingResult(("hello", "<b>", "world"))
    assert json.loads(FORMATS["json"].render(analysis))["greeting"] == ["hello", "<b>", "world"]


def test_a_probes_bad_key_is_named_with_its_file_and_line(
    tmp_path: Path, greeting_registered: None
) -> None:
    path = tmp_path / "greeting.toml"
    path.write_text(GREETING_FILE.replace('["hello", "<b>"]', "3"))
    with pytest.raises(SpecError) as error:
        load_spec(str(path))
    assert (
        str(error.value)
        == f"{path}:14: probes.greeting: expected a non-empty list of words, found 3"
    )


def test_an_unregistered_probe_has_no_key_and_no_flag(tmp_path: Path) -> None:
    path = tmp_path / "greeting.toml"
    path.write_text(GREETING_FILE)
    with pytest.raises(SpecError, match="unknown probe setting"):
        load_spec(str(path))
    assert "--greeting" not in build_parser("run").format_help()


# -- a toy measured phase: a top-level table of the experiment file, per-variant keys, the
# command every run runs, the metrics of each run and the primary one, in one package (here)

TALLY_KEY = "tally"
TALLY_METRIC = Metric("tallied", "count", "words the toy phase tallied", HIGHER_IS_BETTER)


class TallyTable:
    """[tally]: ``times`` (how often each run says its variant's word), and a ``word`` per
    variant (its own, else the table's); each run is ``echo`` saying it."""

    key: str = TALLY_KEY
    variant_keys: tuple[str, ...] = ("word",)
    program: str = "echo"
    no_command: str = "each run says the variant's word"

    def read(self, value: object, key_path: KeyPath) -> object:
        if not isinstance(value, Mapping):
            raise expected("a table", value, key_path)
        times = value.get("times", 1)
        if isinstance(times, bool) or not isinstance(times, int) or times < 1:
            raise expected("a count >= 1", times, (*key_path, "times"))
        return {"times": times, "words": {}}

    def with_variants(
        self, settings: object, variants: Sequence[Variant], entries: Sequence[VariantEntry]
    ) -> tuple[object, tuple[Variant, ...]]:
        assert isinstance(settings, Mapping)
        words: dict[str, str] = {}
        for entry, variant in zip(entries, variants, strict=True):
            given = entry.text("word")
            if given is None:
                raise SpecError("no word", key_path=(*entry.key_path, "word"))
            words[variant.name] = given[0]
        shaped = tuple(
            dataclasses.replace(v, command=("echo", *[words[v.name]] * settings["times"]))
            for v in variants
        )
        return {**settings, "words": words}, shaped

    def conditioned(self, settings: object, variants: Sequence[Variant]) -> object:
        assert isinstance(settings, Mapping)
        words = {v.name: settings["words"][v.family_name] for v in variants}
        return {**settings, "words": words}

    def check(self, spec: Spec) -> None:
        for index, metric in enumerate(spec.metrics):
            if metric.name == TALLY_METRIC.name:
                raise SpecError("the toy phase's", key_path=("metrics", index, "name"))


class TallyPlugin(ProbePlugin):
    name = "tally"
    known_metrics = (TALLY_METRIC,)

    @property
    def phase_table(self) -> TallyTable:
        return TallyTable()

    def selected(self, spec: Spec) -> bool:
        return spec.plugin_table(TALLY_KEY) is not None

    def phase_metrics(self, spec: Spec) -> tuple[Metric, ...]:
        return (PROCESS_METRICS[0], TALLY_METRIC)

    def primary_metric(self, spec: Spec) -> str:
        return TALLY_METRIC.name


TALLY_FILE = """name = "tally"
rounds = 3
warmup_rounds = 0

[matrix]
say = ["hi", "ho"]

[tally]
times = 2
word = "{say}!"

[[variants]]
name = "v-{say}"
"""


@pytest.fixture
def tally_registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(registry, "PLUGINS", (*registry.PLUGINS, TallyPlugin()))
    yield


def test_a_measured_phase_owns_its_table_variants_metrics_and_primary_metric(
    tmp_path: Path, tally_registered: None
) -> None:
    path = tmp_path / "tally.toml"
    path.write_text(TALLY_FILE)
    spec = load_spec(str(path))
    assert [v.command for v in spec.variants] == [("echo", "hi!", "hi!"), ("echo", "ho!", "ho!")]
    assert spec.plugin_tables == (
        (TALLY_KEY, {"times": 2, "words": {"v-hi": "hi!", "v-ho": "ho!"}}),
    )
    assert core.spec_metrics(spec) == (PROCESS_METRICS[0], TALLY_METRIC)
    assert core.primary_metric(spec) == "tallied"

    store = Store(tmp_path / "db")
    experiment_id = store.create_experiment(spec, {}, None, "test")
    for round_index in range(3):
        for position, name in enumerate(("v-hi", "v-ho")):
            metrics = {"wall": 0.01 * (1 + round_index), "tallied": 2.0 + position}
            store.add_run(
                experiment_id, Run(name, round_index, position, RunStatus.OK, 0, None, metrics, 0.0)
            )
    store.finish_experiment(experiment_id, "complete", None)
    stored = store.experiment(experiment_id).spec
    assert stored.plugin_tables == spec.plugin_tables  # stored under its key, read back
    analysis = analyze(store, experiment_id, resamples=200)
    assert [m.name for m in analysis.metrics] == ["wall", "tallied"]
    (tallied,) = [c for c in analysis.comparisons if c.metric == "tallied"]
    assert tallied.ratio == pytest.approx(1.5)
    # Its metric is known by name (known_metrics): the JSON export gives its unit.
    summaries = json.loads(FORMATS["json"].render(analysis))["summaries"]
    assert {(s["metric"], s["unit"]) for s in summaries} == {
        ("wall", "seconds"),
        ("tallied", "count"),
    }


def test_a_measured_phase_re_keys_its_settings_for_conditions(
    tmp_path: Path, tally_registered: None
) -> None:
    path = tmp_path / "tally.toml"
    path.write_text(TALLY_FILE + '[[conditions]]\nname = "a"\n[[conditions]]\nname = "b"\n')
    table = load_spec(str(path)).plugin_table(TALLY_KEY)
    assert isinstance(table, Mapping)
    assert table["words"] == {"v-hi/a": "hi!", "v-hi/b": "hi!", "v-ho/a": "ho!", "v-ho/b": "ho!"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("times = 2", 'times = "x"'), ':9: tally.times: expected a count >= 1, found "x"'),
        (
            ('name = "v-{say}"', 'name = "v-{say}"\ncommand = "true"'),
            ":14: variants[0].command: a tally experiment ([tally]) has no command: each run "
            "says the variant's word",
        ),
        (('word = "{say}!"', 'word = "{sya}!"'), ":10: tally.word: {sya} is not a matrix param"),
        (('word = "{say}!"\n', ""), ":11: variants[0].word: no word"),
        (
            (
                "[[variants]]",
                '[[metrics]]\nname = "tallied"\nsource = "file"\npath = "."\n\n[[variants]]',
            ),
            ":13: metrics[0].name: the toy phase's",
        ),
    ],
)
def test_a_measured_phase_s_bad_table_is_named_with_its_file_line_and_key(
    tmp_path: Path, tally_registered: None, change: tuple[str, str], message: str
) -> None:
    path = tmp_path / "tally.toml"
    path.write_text(TALLY_FILE.replace(*change))
    with pytest.raises(SpecError) as error:
        load_spec(str(path))
    assert str(error.value).startswith(f"{path}{message}")


def test_a_measured_phase_s_keys_need_its_table_and_its_registration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tally.toml"
    path.write_text('name = "tally"\n[[variants]]\nname = "v"\ncommand = "true"\nword = "x"\n')
    with pytest.raises(SpecError, match=r"variants\[0\]\.word: unknown key"):
        load_spec(str(path))  # unregistered: no key of its own
    monkeypatch.setattr(registry, "PLUGINS", (*registry.PLUGINS, TallyPlugin()))
    with pytest.raises(SpecError) as error:
        load_spec(str(path))
    assert str(error.value).endswith(
        "variants[0].word: word belongs to a tally experiment: add a [tally] section"
    )
    path.write_text(TALLY_FILE)
    monkeypatch.setattr(registry, "PLUGINS", registry.PLUGINS[:-1])
    with pytest.raises(SpecError, match="tally: unknown key"):
        load_spec(str(path))


# -- a toy probe that counts a deterministic metric: the gate judges it when no rule is given,
# says how to count it when it is not counted, and no declared metric may take its name


WORDS_METRIC = Metric(
    "words", "count", "words the toy counted: the same in every run", deterministic=True
)


class CountingPlugin(ProbePlugin):
    name = "counting"
    options = ("--count-words",)
    known_metrics = (WORDS_METRIC,)
    reserved_metrics = (WORDS_METRIC.name,)

    def selected(self, spec: Spec) -> bool:
        return spec.name == "counted"

    def metrics(self, spec: Spec) -> tuple[Metric, ...]:
        return (WORDS_METRIC,)


def _counting_spec(name: str) -> Spec:
    return Spec(
        name=name, variants=(Variant("a", ("true",)), Variant("b", ("true",))), baseline="a"
    )


def test_a_probes_deterministic_metric_is_the_gates_and_its_name_is_reserved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cutaway.gate.rules import GateRule, check_settings
    from cutaway.spec.metrics import read_metric

    declared = {"name": "words", "source": "file", "path": "."}
    assert check_settings(_counting_spec("counted")).rules == (GateRule("wall", 0.05),)
    assert read_metric(declared, ("metrics", 0)).name == "words"  # unregistered: a free name

    monkeypatch.setattr(registry, "PLUGINS", (*registry.PLUGINS, CountingPlugin()))
    assert check_settings(_counting_spec("counted")).rules == (GateRule("words", 0.005),)
    assert check_settings(_counting_spec("plain")).rules == (GateRule("wall", 0.05),)
    with pytest.raises(SpecError) as error:
        check_settings(_counting_spec("plain"), (GateRule("words", 0.01),))
    assert str(error.value).startswith(
        '--fail-on: the experiment does not measure "words" (add --count-words to count them)'
    )
    with pytest.raises(
        SpecError, match='"words" is a whole-process metric cutaway always measures'
    ):
        read_metric(declared, ("metrics", 0))
