"""cutaway.model offers every public name of its submodules, each imported with its submodule
when first asked for (model/__init__.py): the names it lists are exactly theirs."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import cutaway.model as model

MODEL = Path(model.__file__).parent


def test_every_listed_name_is_its_submodules_object() -> None:
    for name in model.__all__:
        submodule = importlib.import_module(f"cutaway.model.{model._SUBMODULE_OF[name]}")
        assert getattr(model, name) is getattr(submodule, name), name


def test_the_lazy_names_are_the_ones_listed_and_the_ones_mypy_sees() -> None:
    """The names type-checked (the TYPE_CHECKING imports), those listed in __all__ and those
    imported at run time are the same set: one cannot be added without the others."""
    tree = ast.parse((MODEL / "__init__.py").read_text())
    checked = {
        (alias.name, node.module.rpartition(".")[2])
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.startswith("cutaway.model.")
        for alias in node.names
    }
    assert checked == set(model._SUBMODULE_OF.items())
    assert set(model.__all__) == set(model._SUBMODULE_OF)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        model.Nothing  # noqa: B018
    with pytest.raises(ImportError):
        from cutaway.model import Nothing  # type: ignore[attr-defined]  # noqa: F401
