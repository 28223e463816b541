"""The experiment specification: the TOML experiment file and quick mode, both -> ``Spec``.

The file format is documented in docs/experiment-file.md. Every problem raises
:class:`SpecError` with the file, line and key at fault.
"""

from cutaway.spec.errors import SpecError
from cutaway.spec.locate import find_line
from cutaway.spec.overrides import apply_overrides
from cutaway.spec.parse import FORMAT_VERSION, load_spec, parse_spec
from cutaway.spec.quick import quick_spec
from cutaway.spec.units import parse_duration, parse_fraction

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
