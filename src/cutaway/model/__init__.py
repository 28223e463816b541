"""Value objects shared by every layer of cutaway, one module per subject.

Everything here is immutable and does no I/O. ``model`` imports nothing else of cutaway, so
every other module may import it (see docs/how-it-works.md for the dependency direction).
Every public name of the submodules is importable from ``cutaway.model`` itself.
"""

from __future__ import annotations

from cutaway.model.calls import (
    CALL_POSITIONS,
    PERCENTILE_GRID,
    CallPercentiles,
    CallSummary,
    FunctionCalls,
)
from cutaway.model.experiment import (
    DEFAULT_HOOK_TIMEOUT_SECONDS,
    DEFAULT_SAMPLE_INTERVAL,
    ESTIMATORS,
    METRIC_SOURCES,
    OUTPUT_MODES,
    OUTPUT_STREAMS,
    PROCESS_STATS,
    VERSION_KEYS,
    Condition,
    Hooks,
    MetricSpec,
    Spec,
    Variant,
    VersionSource,
)
from cutaway.model.frozen import frozen_mapping
from cutaway.model.metrics import (
    DEFAULT_MARGIN,
    DIRECTIONS,
    HIGHER_IS_BETTER,
    LOWER_IS_BETTER,
    PRIMARY_METRIC,
    PROCESS_METRICS,
    Metric,
)
from cutaway.model.phases import (
    PHASE_METRIC_PREFIX,
    PHASE_SEPARATOR,
    UNACCOUNTED,
    PhaseStat,
    parse_phase_key,
    phase_key,
)
from cutaway.model.probe_spec import ProbeSpec
from cutaway.model.profile import (
    ATTRIBUTION_KINDS,
    AttributionEntry,
    AttributionPoint,
    AttributionTotal,
    FlameProfile,
    FunctionWeight,
    PhaseWeight,
    ProfileTotal,
    StackWeight,
)
from cutaway.model.results import (
    Analysis,
    Calibration,
    Caution,
    Comparison,
    ExperimentInfo,
    ProbeResult,
    Summary,
    TimeSeries,
    Verdict,
)
from cutaway.model.runs import TIMED, Run, RunData, RunStatus

__all__ = [
    "ATTRIBUTION_KINDS",
    "CALL_POSITIONS",
    "DEFAULT_HOOK_TIMEOUT_SECONDS",
    "DEFAULT_MARGIN",
    "DEFAULT_SAMPLE_INTERVAL",
    "DIRECTIONS",
    "ESTIMATORS",
    "HIGHER_IS_BETTER",
    "LOWER_IS_BETTER",
    "METRIC_SOURCES",
    "OUTPUT_MODES",
    "OUTPUT_STREAMS",
    "PERCENTILE_GRID",
    "PHASE_METRIC_PREFIX",
    "PHASE_SEPARATOR",
    "PRIMARY_METRIC",
    "PROCESS_METRICS",
    "PROCESS_STATS",
    "TIMED",
    "UNACCOUNTED",
    "VERSION_KEYS",
    "Analysis",
    "AttributionEntry",
    "AttributionPoint",
    "AttributionTotal",
    "Calibration",
    "CallPercentiles",
    "CallSummary",
    "Caution",
    "Comparison",
    "Condition",
    "ExperimentInfo",
    "FlameProfile",
    "FunctionCalls",
    "FunctionWeight",
    "Hooks",
    "Metric",
    "MetricSpec",
    "PhaseStat",
    "PhaseWeight",
    "ProbeResult",
    "ProbeSpec",
    "ProfileTotal",
    "Run",
    "RunData",
    "RunStatus",
    "Spec",
    "StackWeight",
    "Summary",
    "TimeSeries",
    "Variant",
    "Verdict",
    "VersionSource",
    "frozen_mapping",
    "parse_phase_key",
    "phase_key",
]
