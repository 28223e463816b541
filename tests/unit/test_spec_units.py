"""Durations and fractions as written in experiment files and on the command line."""

from __future__ import annotations

import pytest

from cutaway.spec import SpecError, parse_duration, parse_fraction


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10s", 10.0),
        ("250ms", 0.25),
        ("2m", 120.0),
        ("1.5h", 5400.0),
        ("500us", 0.0005),
        (" 3 s ", 3.0),
        ("7", 7.0),
        (4, 4.0),
        (0.5, 0.5),
    ],
)
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["ten", "10 parsecs", "-1s", -1, True, "", [1], float("nan")])
def test_bad_durations(bad: object) -> None:
    with pytest.raises(SpecError, match="expected a duration"):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("value", "fraction"),
    [("0.5%", 0.005), ("1%", 0.01), ("10 %", 0.1), (0.01, 0.01), (0, 0.0), ("0.02", 0.02)],
)
def test_fractions(value: object, fraction: float) -> None:
    assert parse_fraction(value) == pytest.approx(fraction)


@pytest.mark.parametrize("bad", ["-1%", -0.01, "one percent", "%", False, None])
def test_bad_fractions(bad: object) -> None:
    with pytest.raises(SpecError, match="expected a percentage"):
        parse_fraction(bad)


def test_errors_are_value_errors_without_a_key() -> None:
    with pytest.raises(ValueError) as caught:
        parse_duration("soon")
    assert isinstance(caught.value, SpecError)
    assert caught.value.key is None
    assert str(caught.value).endswith('found "soon"')
