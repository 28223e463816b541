"""The instructions probe's key of the [probes] table (``instructions = true``) and its
command-line option ``--instructions``, kept in the :class:`~cutaway.model.ProbeSpec` under
``instructions`` in their stored form (true; unset when off) and read back by
:func:`instructions_counted`."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from cutaway.model import ProbeSpec
from cutaway.settings_reading import KeyPath, StoredSettingError, describe, read_bool

KEY = "instructions"  # its key of [probes], in the experiment file and in the stored spec
SETTINGS_KEYS = (KEY,)
OPTIONS = ("--instructions",)


def instructions_counted(probes: ProbeSpec) -> bool:
    """Whether ``probes`` count instructions (the probe on)."""
    stored = probes.setting(KEY)
    if stored is None:
        return False
    if stored is not True:  # false is unset (None above); anything else cutaway never writes
        raise StoredSettingError(f"probes.{KEY}: {describe(stored)} is not true or false")
    return True


def with_instructions(probes: ProbeSpec, counted: bool) -> ProbeSpec:
    """``probes`` with instructions counted or not."""
    return probes.with_setting(KEY, counted)


def read_settings(table: Mapping[str, object], key_path: KeyPath, probes: ProbeSpec) -> ProbeSpec:
    if KEY not in table:
        return probes
    return with_instructions(probes, read_bool(table[KEY], (*key_path, KEY)))


def read_option(option: str, value: object, probes: ProbeSpec) -> ProbeSpec:
    """``--instructions``: counted runs too, whatever the file says."""
    return with_instructions(probes, True) if value else probes


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
