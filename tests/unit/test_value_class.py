"""``@value_class`` makes what ``@dataclass(frozen=True)`` makes, with ``==``, ``hash()`` and
``repr()`` shared instead of generated (cutaway/value_class.py): each behaves as the
dataclass's own, checked against a twin class made by ``@dataclass(frozen=True)``."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
    nan = math.nan  # one object: equal to itself within a tuple (before Python 3.13)
    assert (Point(nan) == Point(nan)) is (Twin(nan) == Twin(nan))
    assert (Point(nan, nan) != Point(nan, 1.0)) is (Twin(nan, nan) != Twin(nan, 1.0))


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


def outcome(action: Callable[[], object]) -> object:
    """What an action returns, or the type and message of what it raises."""
    try:
        return action()
    except Exception as error:  # the outcome compared, whatever it is
        return (type(error), str(error).replace("Twin", "Point"))


def assigned_past_frozen(instance: object, name: str, value: object) -> object:
    object.__setattr__(instance, name, value)  # what a __post_init__ may do
    return getattr(instance, name)


def assigned(instance: object, name: str, value: object) -> object:
    setattr(instance, name, value)
    return getattr(instance, name)


def deleted(instance: object, name: str) -> bool:
    delattr(instance, name)
    return not hasattr(instance, name)


@pytest.mark.parametrize(
    "action",
    [
        lambda p: setattr(p, "x", 3.0),
        lambda p: setattr(p, "tags", ("a",)),
        lambda p: setattr(p, "extra", 1),
        lambda p: delattr(p, "y"),
        lambda p: delattr(p, "extra"),
        lambda p: assigned_past_frozen(p, "x", 4.0),
        lambda p: dataclasses.replace(p, y=5.0).y,
        lambda p: dataclasses.asdict(p),
        lambda p: dataclasses.astuple(copy.copy(p)),
        lambda p: dataclasses.astuple(copy.deepcopy(p)),
        lambda p: dataclasses.astuple(pickle.loads(pickle.dumps(p))),
        lambda p: [f.name for f in dataclasses.fields(p)],
        lambda p: (p.x, p.y, p.label, p.secret, p.tags),
    ],
)
def test_an_instance_is_frozen_as_the_dataclass_s(action: Callable[[object], object]) -> None:
    assert outcome(lambda: action(Point(1.0, 2.0))) == outcome(lambda: action(Twin(1.0, 2.0)))


def test_the_class_is_the_dataclass_s() -> None:
    assert str(inspect.signature(Point)) == str(inspect.signature(Twin))
    assert Point.__match_args__ == Twin.__match_args__
    assert Point.__doc__ == (Twin.__doc__ or "").replace("Twin", "Point")  # made from fields
    assert getattr(Point, "__dataclass_params__").frozen  # noqa: B009  (mypy knows no such name)


class Plain(Point):
    """A subclass that is no dataclass: its instances may have attributes of their own."""


class PlainTwin(Twin):
    pass


@pytest.mark.parametrize(
    "action",
    [
        lambda p: assigned(p, "own", 1),
        lambda p: assigned(p, "own", 1) and deleted(p, "own"),
        lambda p: setattr(p, "x", 3.0),
        lambda p: delattr(p, "x"),
        lambda p: p == type(p)(1.0, 2.0),
    ],
)
def test_a_plain_subclass_s_instance_is_the_dataclass_s(action: Callable[[object], object]) -> None:
    assert outcome(lambda: action(Plain(1.0, 2.0))) == outcome(lambda: action(PlainTwin(1.0, 2.0)))


def subclass(base: type, **options: bool) -> object:
    return outcome(lambda: dataclass(**options)(type("Sub", (base,), {"__annotations__": {}})))


def test_dataclasses_inherit_from_it_as_from_the_dataclass() -> None:
    refused = subclass(Point)  # a non-frozen one
    assert refused == subclass(Twin)
    assert isinstance(refused, tuple) and refused[0] is TypeError
    made: type[Any] = dataclass(frozen=True)(
        type("Sub", (Point,), {"__annotations__": {"z": int}, "z": 0})
    )
    instance = made(1.0, 2.0, z=3)
    assert (instance.x, instance.z) == (1.0, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        instance.x = 5.0
    assert [f.name for f in dataclasses.fields(Labelled)] == [
        "x",
        "y",
        "label",
        "secret",
        "tags",
        "unit",
    ]
    labelled = Labelled(1.0)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'unit'"):
        labelled.unit = "ms"  # type: ignore[misc]


@value_class
class AfterInit:
    """A field __init__ leaves unset, which __post_init__ may not assign."""

    given: int
    derived: int = field(init=False)

    def __post_init__(self) -> None:
        self.derived = self.given * 2  # type: ignore[misc]


@dataclass(frozen=True)
class AfterInitTwin:
    given: int
    derived: int = field(init=False)

    def __post_init__(self) -> None:
        self.derived = self.given * 2  # type: ignore[misc]


def test_a_field_init_leaves_unset_is_frozen_too() -> None:
    assert outcome(lambda: AfterInit(1)) == outcome(lambda: AfterInitTwin(1))
    assert isinstance(outcome(lambda: AfterInit(1)), tuple)  # FrozenInstanceError, as the twin


def test_a_class_with_its_own_setattr_is_refused_as_by_the_dataclass() -> None:
    def own(self: object, name: str, value: object) -> None:
        pass

    made = outcome(lambda: value_class(type("Own", (), {"__setattr__": own})))
    twin = outcome(lambda: dataclass(frozen=True)(type("Own", (), {"__setattr__": own})))
    assert made == twin
    assert isinstance(made, tuple) and made[0] is TypeError


@value_class
class Defaults:
    items: list[int] = field(default_factory=list)
    count: int = 0


def test_defaults_and_factories_are_set_by_init() -> None:
    first, second = Defaults(), Defaults()
    assert first.items == [] and first.items is not second.items
    assert Defaults([1], 2) == Defaults(items=[1], count=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.items = [3]  # type: ignore[misc]
