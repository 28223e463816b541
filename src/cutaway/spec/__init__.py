"""The experiment specification: the TOML experiment file and quick mode, both -> ``Spec``.

The file format is documented in docs/experiment-file.md. Every problem raises
:class:`SpecError` with the file, line and key at fault.

Every public name is importable from ``cutaway.spec`` itself; its submodule is imported when
the name is first asked for (PEP 562): `cutaway run -c CMD` reads no experiment file, and does
not pay for the file's reader (cutaway.spec.parse, its dataclasses among them).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from cutaway.spec.errors import SpecError

if TYPE_CHECKING:  # what mypy and readers see; at run time each name comes with its module
    from cutaway.spec.locate import find_line
    from cutaway.spec.overrides import apply_overrides
    from cutaway.spec.parse import FORMAT_VERSION, load_spec, parse_spec
    from cutaway.spec.quick import quick_spec
    from cutaway.spec.units import parse_duration, parse_fraction

_SUBMODULE_OF = {
    "FORMAT_VERSION": "parse",
    "apply_overrides": "overrides",
    "find_line": "locate",
    "load_spec": "parse",
    "parse_duration": "units",
    "parse_fraction": "units",
    "parse_spec": "parse",
    "quick_spec": "quick",
}

__all__ = [
    "FORMAT_VERSION",
    "SpecError",
    "apply_overrides",
    "find_line",
    "load_spec",
    "parse_duration",
    "parse_fraction",
    "parse_spec",
    "quick_spec",
]


def __getattr__(name: str) -> object:
    """A public name of a submodule, imported with that submodule when first asked for."""
    submodule = _SUBMODULE_OF.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value  # asked once: the next lookup finds it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
