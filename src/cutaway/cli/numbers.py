"""The argparse type of every integer option (``--rounds``, ``--seed``, ``--connections``...):
defined in cutaway.settings_reading (:func:`~cutaway.settings_reading.integer_argument`), below
the probes, whose packages add options of their own."""

from __future__ import annotations

from cutaway.settings_reading import integer_argument as integer

__all__ = ["integer"]
