"""``@value_class``: ``@dataclass(frozen=True)`` with the same ``==``, ``hash()`` and ``repr()``,
shared by every such class instead of written and compiled for each one.

Why: a dataclass writes the source of each method it adds and compiles it as the class is
created, some 0.1 ms a method. A frozen dataclass gets six (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``); `cutaway run` creates some eighty
such classes as it imports its modules, a fifth of its start-up. ``__eq__``, ``__hash__`` and
``__repr__`` read the class's fields and do the same for every class, so they are written once
here; ``__init__`` and the two methods that keep an instance frozen stay the dataclass's own.

The methods do what Python 3.11's dataclass generates: ``==`` is True for an instance of the
very same class whose fields (those with ``compare``) are equal as a tuple, else
NotImplemented; ``hash()`` hashes the tuple of the fields with ``hash`` (or ``compare`` where
``hash`` is None); ``repr()`` is ``Class(field=value, ...)`` over the fields with ``repr``, and
``...`` for an instance met again inside its own repr. tests/unit/test_value_class.py holds
them equal to a dataclass's."""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from dataclasses import Field, dataclass, fields
from typing import TypeVar, dataclass_transform

_Class = TypeVar("_Class", bound=type)


@dataclass_transform(frozen_default=True)
def value_class(cls: _Class) -> _Class:
    """``cls`` as ``@dataclass(frozen=True)`` makes it, with the shared methods."""
    dataclass(frozen=True, eq=False, repr=False)(cls)  # the class itself, made a dataclass
    for name, method in _SHARED_METHODS.items():
        setattr(cls, name, method)
    return cls


def _names(
    cache: dict[type, tuple[str, ...]], cls: type, keep: Callable[[Field[object]], bool]
) -> tuple[str, ...]:
    names = cache.get(cls)
    if names is None:
        names = cache[cls] = tuple(field.name for field in fields(cls) if keep(field))
    return names


# The names of a class's fields that each method reads, found on its first call.
_COMPARED: dict[type, tuple[str, ...]] = {}
_HASHED: dict[type, tuple[str, ...]] = {}
_SHOWN: dict[type, tuple[str, ...]] = {}


def _compared(field: Field[object]) -> bool:
    return field.compare


def _hashed(field: Field[object]) -> bool:
    return field.compare if field.hash is None else field.hash


def _shown(field: Field[object]) -> bool:
    return field.repr


def _equal(self: object, other: object) -> object:  # bool, or NotImplemented
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = _names(_COMPARED, self.__class__, _compared)
    mine: tuple[object, ...] = tuple(getattr(self, name) for name in names)
    return mine == tuple(getattr(other, name) for name in names)


def _hash(self: object) -> int:
    names = _names(_HASHED, self.__class__, _hashed)
    return hash(tuple(getattr(self, name) for name in names))


@reprlib.recursive_repr()
def _repr(self: object) -> str:
    names = _names(_SHOWN, self.__class__, _shown)
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
    return f"{self.__class__.__qualname__}({shown})"


_SHARED_METHODS: dict[str, Callable[..., object]] = {
    "__eq__": _equal,
    "__hash__": _hash,
    "__repr__": _repr,
}
