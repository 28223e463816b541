"""The instructions probe's key of the [probes] table (``instructions = true``) and its
command-line option ``--instructions``, read into the :class:`~cutaway.model.ProbeSpec`."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping

from cutaway.model import ProbeSpec
from cutaway.settings_reading import KeyPath, read_bool

SETTINGS_KEYS = ("instructions",)
OPTIONS = ("--instructions",)


def read_settings(table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec) -> ProbeSpec:
    if "instructions" not in table:
        return probes
    counted = read_bool(table["instructions"], (*key_path, "instructions"))
    return dataclasses.replace(probes, instructions=counted)


def read_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``--instructions``: counted runs too, whatever the file says."""
    return dataclasses.replace(probes, instructions=True) if value else probes


def add_arguments(run: argparse.ArgumentParser) -> None:
    """``cutaway run --instructions``."""
    run.add_argument(
        "--instructions",
        action="store_true",
        default=None,
        help="also count instructions with valgrind (callgrind), whole process and per "
        "function, in runs of each variant separate from the timed runs: the metric "
        "`instructions`, deterministic but not time (the instructions probe)",
    )


def option_values(args: argparse.Namespace) -> dict[str, object]:
    return {"--instructions": args.instructions}
