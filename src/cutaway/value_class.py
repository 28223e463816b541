"""``@value_class``: what ``@dataclass(frozen=True)`` makes, with methods shared by every such
class instead of written and compiled for each one.

Why: a dataclass writes the source of each method it adds and compiles it as the class is
created, some 0.1 ms a method. A frozen dataclass gets six (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``), and `cutaway run` creates some
eighty such classes as it imports its modules: a fifth of its start-up. Only ``__init__``
needs code of its own (its parameters are the fields); the other five do the same for every
class, reading its fields, so they are written once here and a class costs one compiled method.

They do what the running Python's dataclass generates:

- ``==``: for an instance of the very same class, whether its fields (those with ``compare``)
  are equal: as a tuple before Python 3.13 (a NaN field is then equal to itself), one by one
  from 3.13; NotImplemented for any other object;
- ``hash()``: the hash of the tuple of the fields with ``hash`` (or ``compare``, where ``hash``
  is None);
- ``repr()``: ``Class(field=value, ...)`` over the fields with ``repr``, and ``...`` for an
  instance met again inside its own repr;
- frozen: assigning or deleting a field raises FrozenInstanceError, and so does any other
  attribute of an instance of the class itself (one of a plain subclass may have its own).
  ``__init__`` is the dataclass's, which assigns each field once as the instance is made; an
  assignment finds the field unset then, and set ever after.

A class the dataclass must check against its bases (one with a dataclass among its bases),
one with a field that ``__init__`` leaves unset (``init=False`` without a default) or one that
defines its own ``__setattr__`` or ``__delattr__`` is made by ``@dataclass(frozen=True)``
itself, with only ``==``, ``hash()`` and ``repr()`` shared. tests/unit/test_value_class.py
holds every behaviour equal to a twin dataclass's."""

from __future__ import annotations

import reprlib
import sys
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, fields, is_dataclass
from typing import Any, TypeVar, dataclass_transform

_Class = TypeVar("_Class", bound=type)


@dataclass_transform(frozen_default=True)
def value_class(cls: _Class) -> _Class:
    """``cls`` made a frozen dataclass, with the shared methods."""
    methods = dict(_SHARED_METHODS)
    if _checked_by_the_dataclass(cls):
        dataclass(frozen=True, eq=False, repr=False)(cls)
    else:
        dataclass(eq=False, repr=False)(cls)  # __init__ alone: frozen by the methods below
        cls.__dataclass_params__.frozen = True  # type: ignore[attr-defined]  # for subclasses
        field_names = frozenset(field.name for field in fields(cls))
        methods["__setattr__"] = _frozen_setattr(cls, field_names)
        methods["__delattr__"] = _frozen_delattr(cls, field_names)
    for name, method in methods.items():
        setattr(cls, name, method)
    return cls


def _checked_by_the_dataclass(cls: type) -> bool:
    """Whether ``@dataclass(frozen=True)`` itself must make ``cls`` (see the module's doc)."""
    if any(is_dataclass(base) for base in cls.__mro__[1:]):
        return True
    if "__setattr__" in cls.__dict__ or "__delattr__" in cls.__dict__:
        return True
    for declared in vars(cls).values():
        if (
            isinstance(declared, Field)
            and not declared.init
            and declared.default is MISSING
            and declared.default_factory is MISSING
        ):
            return True
    return False


def _frozen_setattr(cls: type[Any], field_names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if name in field_names:
            if name in self.__dict__:
                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            object.__setattr__(self, name, value)  # __init__ (the dataclass's) sets it
            return
        if type(self) is cls:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    return __setattr__


def _frozen_delattr(cls: type[Any], field_names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in field_names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    return __delattr__


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


if sys.version_info >= (3, 13):  # field by field, as Python 3.13's dataclass compares

    def _equal(self: object, other: object) -> object:  # what == gives, or NotImplemented
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        equal: object = True  # self.a == other.a and self.b == other.b ...
        for name in _names(_COMPARED, self.__class__, _compared):
            equal = getattr(self, name) == getattr(other, name)
            if not equal:
                break
        return equal

else:  # as tuples, as Python 3.11's and 3.12's (a NaN field is equal to itself)

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
