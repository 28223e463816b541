"""``@value_class`` makes what ``@dataclass(frozen=True)`` makes, with ``==``, ``hash()`` and
``repr()`` shared instead of generated (cutaway/value_class.py): each behaves as the
dataclass's own, checked against a twin class made by ``@dataclass(frozen=True)``."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import pytest

from cutaway.value_class import value_class


@value_class
class Point:
    x: float
    y: float = 0.0
    label: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Twin:
    x: float
    y: float = 0.0
    label: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)
    tags: tuple[str, ...] = ()


@value_class
class Hashing:
    key: int
    ignored: int = field(default=0, hash=False)
    counted: int = field(default=0, compare=False, hash=True)


@dataclass(frozen=True)
class HashingTwin:
    key: int
    ignored: int = field(default=0, hash=False)
    counted: int = field(default=0, compare=False, hash=True)


@value_class
class Box:
    content: object


@dataclass(frozen=True)
class BoxTwin:
    content: object


@value_class
class Labelled(Point):
    unit: str = "s"


@value_class
class Empty:
    pass


def point_pairs() -> list[tuple[Point, Twin]]:
    return [
        (Point(1.0), Twin(1.0)),
        (Point(1.0, 2.0, "a", "s", ("t",)), Twin(1.0, 2.0, "a", "s", ("t",))),
        (Point(math.nan), Twin(math.nan)),
        (Point(-0.0, label="é\n"), Twin(-0.0, label="é\n")),
    ]


def test_equality_is_the_dataclass_s() -> None:
    pairs = point_pairs()
    for first, first_twin in pairs:
        for second, second_twin in pairs:
            assert (first == second) is (first_twin == second_twin)
            assert (first != second) is (first_twin != second_twin)
    nan = math.nan  # one object: equal within a tuple, as in the dataclass's tuple
    assert Point(nan) == Point(nan)
    assert Twin(nan) == Twin(nan)


def test_an_instance_of_another_class_is_not_compared() -> None:
    twin: object = Twin(1.0)
    fields_as_tuple: object = (1.0, 0.0, "", "", ())
    assert Point(1.0).__eq__(twin) is NotImplemented
    assert Point(1.0) != twin
    assert Point(1.0) != fields_as_tuple
    assert Point(1.0, 2.0) != Labelled(1.0, 2.0)
    assert Labelled(1.0, 2.0) != Point(1.0, 2.0)


def test_hash_is_the_dataclass_s() -> None:
    for value, twin in point_pairs():
        assert hash(value) == hash(twin)
    for arguments in [(1,), (1, 2, 3), (1, 5, 3), (1, 2, 9)]:
        assert hash(Hashing(*arguments)) == hash(HashingTwin(*arguments))
    assert hash(Empty()) == hash(())
    assert len({Point(1.0, label="a"), Point(1.0, label="b"), Point(2.0)}) == 2


def test_repr_is_the_dataclass_s() -> None:
    for value, twin in point_pairs():
        assert repr(value) == repr(twin).replace("Twin(", "Point(", 1)
    assert repr(Labelled(1.0)) == "Labelled(x=1.0, y=0.0, label='', tags=(), unit='s')"
    assert repr(Empty()) == "Empty()"


def test_an_instance_inside_its_own_repr_is_dots() -> None:
    contents: list[object] = []
    box, twin_box = Box(contents), BoxTwin(contents)
    contents.append(box)
    assert repr(box) == "Box(content=[...])"
    contents[0] = twin_box
    assert repr(twin_box) == "BoxTwin(content=[...])"


def test_it_is_a_frozen_dataclass() -> None:
    point = Point(1.0, 2.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 3.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del point.y
    assert dataclasses.replace(point, y=5.0) == Point(1.0, 5.0)
    assert dataclasses.asdict(point) == dataclasses.asdict(Twin(1.0, 2.0))
    assert [f.name for f in dataclasses.fields(Labelled)] == [
        "x",
        "y",
        "label",
        "secret",
        "tags",
        "unit",
    ]
    assert Point.__match_args__ == Twin.__match_args__
    with pytest.raises(TypeError, match="non-frozen dataclass from a frozen one"):
        dataclass(type("Thawed", (Point,), {}))
