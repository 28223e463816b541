"""Fuzzing every reader of what the store holds: the experiment's row and
its ``spec_json`` and ``environment_json``, the calls blob, the series blob and the calls
probe's losses JSON. Whatever a damaged store holds, each gives a valid value or a clean
error (DamagedStoreError, CallsBlobError, ValueError as documented), never another exception
or a hang."""

from __future__ import annotations

import copy
import json
import sqlite3
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fuzzing import EVERY_SECTION, no_hang, scaled
from hypothesis import given
from hypothesis import strategies as st

from cutaway.compare import analyze
from cutaway.metrics.series import decode_series
from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.probes import timed_calls as calls_blob
from cutaway.probes.calls.analysis import _losses
from cutaway.report import FORMATS, render_terminal
from cutaway.spec import parse_spec
from cutaway.store import DamagedStoreError, Store
from cutaway.store.checks import Columns
from cutaway.store.rows import stored_experiment
from cutaway.store.stored_spec import spec_from_json

SPECS = [
    parse_spec(EVERY_SECTION, "every.toml"),
    Spec(
        name="quick",
        variants=(Variant("a", ("true",)), Variant("b", "sleep 0", shell=True)),
        baseline="b",
    ),
]
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=10)
    | st.sampled_from(["", "a", "lower", "higher", "output", "rss", "null", "stdout"])
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def key_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += key_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += key_paths(item, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, original: dict[str, Any]) -> dict[str, Any]:
    """``original`` with 1-3 values replaced by any JSON value, removed, or keys added."""
    document = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, 3))):
        places = key_paths(document)
        if not places:
            break
        where = draw(st.sampled_from(places))
        parent: Any = document
        for part in where[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "replace", "remove", "add"]))
        if action == "replace":
            parent[where[-1]] = draw(JSON_VALUES)
        elif action == "remove":
            del parent[where[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=6))] = draw(JSON_VALUES)
        else:
            parent.append(draw(JSON_VALUES))
    return document


def experiment_row(spec_json: object, environment_json: object = "{}") -> tuple[Any, ...]:
    """An experiments row joined with no calibration, as Store.experiment reads it."""
    return (7, "x", "complete", 1.0, 2.0, None, spec_json, None, environment_json, None, "0")


def read_experiment(
    spec_json: object,
    names: list[str],
    environment_json: object = "{}",
    versions: list[object] | None = None,
) -> None:
    """The row as Store.experiment would turn it into a StoredExperiment: a valid one, whose
    spec is usable, or DamagedStoreError naming a column. ``versions``: the variants.version
    column of each variant (NULL by default)."""
    row = (*experiment_row(spec_json, environment_json), None, None, None, None, None)
    variant_rows = [
        (position, name, None if versions is None else versions[position])
        for position, name in enumerate(names)
    ]
    try:
        with no_hang():
            stored = stored_experiment(row, variant_rows, Columns(Path("fuzz.db"), 7))
    except DamagedStoreError as error:
        assert error.experiment_id == 7
        assert error.column.split(".")[0] in ("experiments", "variants"), error.column
        assert str(error).startswith("experiment #7 in fuzz.db is damaged: "), str(error)
        return
    spec = stored.spec
    assert [variant.name for variant in spec.variants] == names
    assert spec.baseline in names and spec.rounds >= 0 and 0 < spec.confidence < 1
    assert {metric.name for metric in spec.all_metrics()}
    json.dumps(spec.to_dict(), default=dict)  # storable again, as resuming does


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_a_mutated_spec_json_reads_back_or_names_the_damage(spec: Spec) -> None:
    original = json.loads(json.dumps(spec.to_dict(), default=dict))
    names = [variant.name for variant in spec.variants]

    @given(mutated(original))
    def property_holds(document: dict[str, Any]) -> None:
        read_experiment(json.dumps(document), names)

    property_holds()


@given(st.text(max_size=40) | st.binary(max_size=40) | JSON_SCALARS | st.just('{"a": ' * 5000))
def test_any_text_in_the_json_columns_reads_back_or_names_the_damage(value: object) -> None:
    text = value if isinstance(value, str | bytes) else json.dumps(value)
    read_experiment(text, ["a", "b"])
    read_experiment(json.dumps(SPECS[1].to_dict(), default=dict), ["a", "b"], text)


@given(
    st.lists(
        st.none() | st.text(max_size=20) | st.binary(max_size=8) | JSON_SCALARS,
        min_size=2,
        max_size=2,
    )
)
def test_any_value_in_the_version_column_reads_back_or_names_the_damage(
    versions: list[object],
) -> None:
    read_experiment(json.dumps(SPECS[1].to_dict(), default=dict), ["a", "b"], versions=versions)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_a_stored_spec_reads_back_as_it_was_written(spec: Spec) -> None:
    data = json.loads(json.dumps(spec.to_dict(), default=dict))
    assert spec_from_json(data, spec.source_text) == spec


# -- blobs -----------------------------------------------------------------------------------


def calls_of(processes: list[list[tuple[int, int, int, int]]]) -> bytes:
    parts = []
    for number, calls in enumerate(processes):
        columns = np.array(calls, dtype=np.int64).reshape(-1, 4).T
        parts.append(calls_blob.ProcessCalls(number, *columns))
    return calls_blob.encode(parts)


CALL = st.tuples(
    st.integers(1, 5), st.integers(0, 2**40), st.integers(-1, 2**20), st.integers(-200, 200)
)
BLOBS = st.lists(st.lists(CALL, min_size=1, max_size=5), min_size=1, max_size=3).map(calls_of)


@st.composite
def damaged_blobs(draw: st.DrawFn) -> bytes:
    """A real calls blob, then bytes flipped, cut, or its JSON header's values changed."""
    blob = bytearray(draw(BLOBS))
    action = draw(st.sampled_from(["flip", "cut", "header", "header", "append"]))
    if action == "flip":
        for _ in range(draw(st.integers(1, 4))):
            blob[draw(st.integers(0, len(blob) - 1))] ^= 1 << draw(st.integers(0, 7))
    elif action == "cut":
        del blob[draw(st.integers(0, len(blob))) :]
    elif action == "append":
        blob += draw(st.binary(min_size=1, max_size=40))
    else:
        header_bytes = struct.unpack_from("<I", blob, 12)[0]
        header = json.loads(bytes(blob[16 : 16 + header_bytes]))
        header = draw(mutated(header))
        text = json.dumps(header).encode()
        blob = blob[:12] + struct.pack("<I", len(text)) + text + blob[16 + header_bytes :]
    return bytes(blob)


def read_calls(blob: bytes) -> None:
    """Decoded and used as the analysis uses it, or CallsBlobError."""
    try:
        with no_hang():
            calls = calls_blob.decode(blob)
            n = len(calls)
            for field in calls_blob.FIELDS:
                assert calls[field].shape == (n,), field
            np.divide(calls.duration_ns, 1e9, dtype=np.float64)
            assert int(calls.group_calls.sum()) == n
    except calls_blob.CallsBlobError as error:
        assert str(error)


@scaled(5)
@given(damaged_blobs())
def test_a_damaged_calls_blob_decodes_or_is_refused(blob: bytes) -> None:
    read_calls(blob)


@scaled(5)
@given(st.binary(max_size=200))
def test_any_bytes_as_a_calls_blob_decode_or_are_refused(blob: bytes) -> None:
    read_calls(blob)
    read_calls(calls_blob.MAGIC + blob)


@scaled(5)
@given(st.binary(max_size=100))
def test_any_bytes_as_a_series_blob_decode_or_are_refused(blob: bytes) -> None:
    try:
        times, values = decode_series(blob)
    except ValueError:
        return
    assert len(times) == len(values) == len(blob) // 16


@scaled(5)
@given(st.binary(max_size=60) | JSON_VALUES.map(lambda value: json.dumps(value).encode()))
def test_any_losses_json_reads_as_counts_or_none(data: bytes) -> None:
    losses = _losses(data)
    assert losses is None or all(isinstance(count, int) and count >= 0 for count in losses.values())


# -- the environment, through the analysis into every report ---------------------------------


@pytest.fixture(scope="module")
def small_store() -> tuple[Store, int]:
    directory = tempfile.mkdtemp(prefix="cutaway-fuzz-")
    store = Store(Path(directory) / "fuzz.db")
    experiment_id = store.create_experiment(SPECS[1], {}, None, "fuzz")
    for round_index in range(3):
        for order, name in enumerate(("a", "b")):
            wall = {"wall": 0.01 * (round_index + order + 1)}
            run = Run(name, round_index, order, RunStatus.OK, 0, None, wall, 0.0)
            store.add_run(experiment_id, run)
    store.finish_experiment(experiment_id, "complete", {})
    return store, experiment_id


ENVIRONMENT_KEYS = st.sampled_from(
    ["cores", "cpu_model", "loadavg_start", "loadavg_end", "kernel", "host", "captured_at",
     "git_commit", "cpu_governor", "argv", "python"]
) | st.text(max_size=6)  # fmt: skip


def test_any_environment_reaches_every_report(small_store: tuple[Store, int]) -> None:
    store, experiment_id = small_store

    @scaled(0.3)  # each example analyses and renders every report
    @given(
        st.dictionaries(ENVIRONMENT_KEYS, JSON_VALUES, max_size=5),
        st.dictionaries(ENVIRONMENT_KEYS, JSON_VALUES, max_size=3),
    )
    def property_holds(start: dict[str, Any], end: dict[str, Any]) -> None:
        with sqlite3.connect(store.path) as connection:
            connection.execute(
                "UPDATE experiments SET environment_json = ?, environment_end_json = ?",
                (json.dumps(start), json.dumps(end)),
            )
        with no_hang():
            analysis = analyze(store, experiment_id, resamples=50)
            render_terminal(analysis, color=False, width=100, all_metrics=True)
            for report in FORMATS.values():
                report.render(analysis)

    property_holds()
