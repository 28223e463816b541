"""Value objects shared by every layer of cutaway, one module per subject.

Everything here is immutable and does no I/O. ``model`` imports nothing else of cutaway but
the leaf cutaway.lazy_names, so every other module may import it (see docs/how-it-works.md for
the dependency direction). Every public name of the submodules is importable from
``cutaway.model`` itself; its submodule is imported when one of its names is first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cutaway.lazy_names import lazy_names

if TYPE_CHECKING:  # what mypy and readers see; at run time each name comes with its module
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

_SUBMODULE_OF: dict[str, str] = {
    "CALL_POSITIONS": "calls",
    "PERCENTILE_GRID": "calls",
    "CallPercentiles": "calls",
    "CallSummary": "calls",
    "FunctionCalls": "calls",
    "DEFAULT_HOOK_TIMEOUT_SECONDS": "experiment",
    "DEFAULT_SAMPLE_INTERVAL": "experiment",
    "ESTIMATORS": "experiment",
    "METRIC_SOURCES": "experiment",
    "OUTPUT_MODES": "experiment",
    "OUTPUT_STREAMS": "experiment",
    "PROCESS_STATS": "experiment",
    "VERSION_KEYS": "experiment",
    "Condition": "experiment",
    "Hooks": "experiment",
    "MetricSpec": "experiment",
    "Spec": "experiment",
    "Variant": "experiment",
    "VersionSource": "experiment",
    "frozen_mapping": "frozen",
    "DEFAULT_MARGIN": "metrics",
    "DIRECTIONS": "metrics",
    "HIGHER_IS_BETTER": "metrics",
    "LOWER_IS_BETTER": "metrics",
    "PRIMARY_METRIC": "metrics",
    "PROCESS_METRICS": "metrics",
    "Metric": "metrics",
    "PHASE_METRIC_PREFIX": "phases",
    "PHASE_SEPARATOR": "phases",
    "UNACCOUNTED": "phases",
    "PhaseStat": "phases",
    "parse_phase_key": "phases",
    "phase_key": "phases",
    "ProbeSpec": "probe_spec",
    "ATTRIBUTION_KINDS": "profile",
    "AttributionEntry": "profile",
    "AttributionPoint": "profile",
    "AttributionTotal": "profile",
    "FlameProfile": "profile",
    "FunctionWeight": "profile",
    "PhaseWeight": "profile",
    "ProfileTotal": "profile",
    "StackWeight": "profile",
    "Analysis": "results",
    "Calibration": "results",
    "Caution": "results",
    "Comparison": "results",
    "ExperimentInfo": "results",
    "ProbeResult": "results",
    "Summary": "results",
    "TimeSeries": "results",
    "Verdict": "results",
    "TIMED": "runs",
    "Run": "runs",
    "RunData": "runs",
    "RunStatus": "runs",
}

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


# A public name of a submodule is imported with that submodule when first asked for (PEP 562):
# a command that needs the experiment's spec and runs does not pay for the ~40 dataclasses of
# the probes' results (profiles, calls, phases), each built as its module is imported.
__getattr__, __dir__ = lazy_names(__name__, _SUBMODULE_OF, globals(), __all__)
