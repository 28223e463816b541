"""The experiment specification: the TOML experiment file and quick mode, both -> ``Spec``.

The file format is documented in docs/experiment-file.md. Every problem raises
:class:`SpecError` with the file, line and key at fault.

Every public name is importable from ``cutaway.spec`` itself; its submodule is imported when
the name is first asked for (PEP 562): `cutaway run -c CMD` reads no experiment file, and does
not pay for the file's reader (cutaway.spec.parse, its dataclasses among them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.lazy_names import lazy_names
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


# A public name of a submodule is imported with that submodule when first asked for (PEP 562).
__getattr__, __dir__ = lazy_names(__name__, _SUBMODULE_OF, globals(), __all__)
