"""{param} substitution and matrix combinations."""

from __future__ import annotations

import pytest

from cutaway.spec import SpecError
from cutaway.spec.matrix import combinations, read_matrix, substitute


def test_substitute_replaces_only_identifier_placeholders() -> None:
    params = {"n": "5", "dir_2": "/q"}
    assert substitute("{n} {dir_2} {{n}} {not a placeholder} {1x} }{", params, ()) == (
        "5 /q {n} {not a placeholder} {1x} }{"
    )


def test_substitute_rejects_an_unknown_placeholder() -> None:
    with pytest.raises(SpecError) as caught:
        substitute("${HOME}", {"n": "1"}, ("command",))
    assert caught.value.key == "command"
    assert "{HOME} is not a matrix parameter (parameters: n)" in caught.value.message


def test_combinations_first_parameter_varies_slowest() -> None:
    matrix = {"a": ("1", "2"), "b": ("x", "y", "z")}
    assert [tuple(c.values()) for c in combinations(matrix)] == [
        ("1", "x"),
        ("1", "y"),
        ("1", "z"),
        ("2", "x"),
        ("2", "y"),
        ("2", "z"),
    ]


def test_matrix_values_are_rendered_as_text() -> None:
    assert read_matrix({"b": [True, False], "f": [0.5, 2], "s": ["x"]}) == {
        "b": ("true", "false"),
        "f": ("0.5", "2"),
        "s": ("x",),
    }


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"n": [1, 1]}, "matrix.n[1]"),
        ({"n": [1, "1"]}, "matrix.n[1]"),
        ({"queue-dirs": [1]}, "matrix.queue-dirs"),
        ({"n": 1}, "matrix.n"),
        ({"n": [{"a": 1}]}, "matrix.n[0]"),
        ([1], "matrix"),
    ],
)
def test_bad_matrices(raw: object, key: str) -> None:
    with pytest.raises(SpecError) as caught:
        read_matrix(raw)
    assert caught.value.key == key
