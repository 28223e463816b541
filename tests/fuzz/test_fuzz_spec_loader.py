"""Fuzzing the experiment-file loader: whatever the file holds, loading
gives a valid Spec or a SpecError naming the file and a line or a key; never another exception,
never a hang. Inputs are the example files and a file using every section, mutated as text
(bytes cut, pasted, repeated) and as data (a value replaced by any TOML value, a key removed or
added), within the budget tests/fuzzing.py sets."""

from __future__ import annotations

import datetime
import json
import math
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from fuzzing import EVERY_SECTION, no_hang
from hypothesis import given
from hypothesis import strategies as st

from cutaway.model import Spec
from cutaway.spec import SpecError, load_spec

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [
    *(path.read_text() for path in sorted(ROOT.glob("examples/*/experiment.toml"))),
    EVERY_SECTION,
]
# What a TOML file is made of, so that mutations make near-misses rather than noise.
PIECES = [
    "=", '"', "'", "[", "]", "[[", "]]", "{", "}", ",", ".", "\n", "#", "\\", '"""', "'''",
    " ", "\t", "\r\n", "0", "-1", "1e400", "nan", "inf", "true", "1979-05-27", "{threads}",
    "{", "\x00", "\u202e", "\ufeff", "rounds", "variants", "command", "matrix", "metrics",
    "probes", "%", "s", "ms", "name", "baseline", "[[variants]]", "[matrix]", "x = 1",
]  # fmt: skip


def check_load(text: str) -> None:
    """Load ``text`` as a file: a Spec, or a SpecError that says where."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "experiment.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            with no_hang():
                spec = load_spec(path)
        except SpecError as error:
            assert error.path == str(path), repr(error)
            assert str(error).startswith(f"{path}"), str(error)
            assert error.line is not None or error.key is not None or "UTF-8" in error.message, (
                repr(error)
            )
            if error.line is not None:
                assert 1 <= error.line <= text.count("\n") + text.count("\r") + 1, repr(error)
            return
    assert isinstance(spec, Spec)
    assert spec.variants and spec.baseline in {variant.name for variant in spec.variants}
    assert spec.rounds >= 1


@st.composite
def mutated_text(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(text)))
        end = min(len(text), start + draw(st.integers(0, 20)))
        action = draw(st.sampled_from(["cut", "paste", "replace", "repeat"]))
        piece = draw(st.sampled_from(PIECES) | st.text(max_size=8))
        if action == "cut":
            text = text[:start] + text[end:]
        elif action == "paste":
            text = text[:start] + piece + text[start:]
        elif action == "replace":
            text = text[:start] + piece + text[end:]
        else:
            text = text[:start] + text[start:end] * draw(st.integers(2, 5)) + text[end:]
    return text


@given(mutated_text())
def test_a_mutated_file_loads_or_is_refused_with_file_line_and_key(text: str) -> None:
    check_load(text)


# -- the same files as data: values replaced, keys removed or added, written back as TOML ------

TOML_SCALARS = (
    st.text(max_size=12)
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats()
    | st.booleans()
    | st.datetimes(min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(9999, 12, 31))
    | st.sampled_from(["10s", "0s", "-1s", "1%", "150%", "{threads}", "", " ", "ok", "lower"])
)
TOML_VALUES = st.recursive(
    TOML_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def toml_value(value: Any) -> str:
    """``value`` written as TOML, inline (tables as inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_document(document: dict[str, Any]) -> str:
    return "".join(f"{json.dumps(key)} = {toml_value(value)}\n" for key, value in document.items())


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path inside a document, tables and arrays included."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


@st.composite
def mutated_document(draw: st.DrawFn) -> str:
    document = tomllib.loads(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(paths(document)))
        parent: Any = document
        for part in where[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "remove", "add"]))
        if action == "replace":
            parent[where[-1]] = draw(TOML_VALUES)
        elif action == "remove":
            del parent[where[-1]]
            if not paths(document):
                break
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=8))] = draw(TOML_VALUES)
        else:
            parent.append(draw(TOML_VALUES))
    return toml_document(document)


@given(mutated_document())
def test_a_mutated_experiment_loads_or_is_refused_with_file_line_and_key(text: str) -> None:
    check_load(text)


def test_the_seeds_themselves_load() -> None:
    """The mutations start from valid files: the properties above test near-misses."""
    for text in SEEDS:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "experiment.toml"
            path.write_text(text)
            assert isinstance(load_spec(path), Spec)
        assert isinstance(load_spec_from_document(text), Spec)


def load_spec_from_document(text: str) -> Spec:
    """A seed as data, written back as TOML by toml_document: the writer is faithful."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "experiment.toml"
        path.write_text(toml_document(tomllib.loads(text)))
        return load_spec(path)
