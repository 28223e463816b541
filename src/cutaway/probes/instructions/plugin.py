"""The instructions probe's plugin (cutaway.probes.plugin): its setting, its capture and its
metric (``instructions``, :data:`INSTRUCTIONS_METRIC`), which is compared like every other,
and which the gate judges by default (deterministic). Its callgrind profiles are stored as the
profile probe's, which reports them, and the attribution reconciles them with the metric."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from cutaway.model import Metric, ProbeSpec, Spec
from cutaway.probes.plugin import PROFILE_RECORDS, ProbePlugin

if TYPE_CHECKING:
    from cutaway.probes.base import Probe

# The instructions probe's metric, measured in its own runs (never in the timed ones).
INSTRUCTIONS_METRIC = Metric(
    "instructions",
    "count",
    "instructions executed, every process (valgrind callgrind, in runs of its own): "
    "deterministic, not time",
    purpose="instructions",
    deterministic=True,
)
# The kind of stacks its callgrind profiles are stored as (cutaway.probes.stacks.INSTRUCTIONS,
# not imported here: the registry imports every plugin on start-up).
INSTRUCTIONS_STACKS = "instructions"


class InstructionsPlugin(ProbePlugin):
    name = "instructions"
    recorded_event = "instruction"
    record_kinds = (PROFILE_RECORDS,)

    settings_keys = ("instructions",)
    options = ("--instructions",)
    settings_module = "cutaway.probes.instructions.settings"
    known_metrics = (INSTRUCTIONS_METRIC,)
    # Added beside the process metrics of any experiment that counts instructions (from the
    # command line too), so no declared metric may take its name.
    reserved_metrics = (INSTRUCTIONS_METRIC.name,)
    # Its profiles count the same instructions as the metric: the attribution's total of them.
    stack_metrics = MappingProxyType({INSTRUCTIONS_STACKS: INSTRUCTIONS_METRIC})

    def selected(self, spec: Spec) -> bool:
        from cutaway.probes.instructions.settings import instructions_counted

        return instructions_counted(spec.probes)

    def metrics(self, spec: Spec) -> tuple[Metric, ...]:
        # Not in an experiment whose measured phase a plugin owns (the load phase): the core
        # leaves every probe's metrics out of it (cutaway.probes.core.spec_metrics).
        return (INSTRUCTIONS_METRIC,)

    def capture(self, spec: ProbeSpec) -> Probe:
        from cutaway.probes.instructions.capture import InstructionsProbe

        return InstructionsProbe()
