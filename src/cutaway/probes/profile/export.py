"""The profile probe's exports, so other tools open our profiles:

- ``folded``: FlameGraph's folded text (flamegraph.pl, inferno-flamegraph, speedscope all read
  it). Every profiled run of the experiment summed, one tower per variant and kind:
  ``VARIANT;on-cpu;process;frame;...;leaf weight``. Weights are the stored ones (nanoseconds
  for time), so on-CPU and off-CPU towers share one scale: a wall-time flame graph.
- ``speedscope``: speedscope's JSON file format
  (https://www.speedscope.app/file-format-schema.json), one "sampled" profile per variant and
  kind, weights in the stored unit.

and its keys in the JSON report (the plugin's ``json_parts``): the tables of the profiles and
their differential attribution.

The folded format has no escaping: ``;`` separates frames and the last space the weight, so a
variant name is written with ``;`` as ``:`` and line breaks as spaces (frames were already
tidied that way by the folding); JSON escapes everything itself."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from cutaway import __version__
from cutaway.model import (
    AttributionEntry,
    AttributionPoint,
    AttributionTotal,
    FunctionWeight,
    PhaseWeight,
    ProfileTotal,
    StackWeight,
)
from cutaway.probes.profile import records
from cutaway.probes.profile.analysis import load_profiles, merge_profiles
from cutaway.probes.profile.result import ProfileResult
from cutaway.report.export_values import json_number
from cutaway.report.sections import JsonValue
from cutaway.store import Store

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def folded_frame(text: str) -> str:
    """User text as one folded frame: no separator, no line break."""
    return " ".join(text.replace(";", ":").splitlines()) if text else "(none)"


def render_folded(profiles: Iterable[tuple[str, records.Profile]]) -> str:
    merged = merge_profiles(profiles)
    lines = []
    for (variant, what), entry in merged.items():
        assert entry.stacks is not None
        prefix = f"{folded_frame(variant)};{what}"
        for stack, weight in sorted(entry.stacks.items()):
            lines.append(f"{prefix};{stack} {weight}\n")
    return "".join(lines)


def render_speedscope(profiles: Iterable[tuple[str, records.Profile]], name: str) -> str:
    merged = merge_profiles(profiles)
    frames: list[dict[str, str]] = []
    index: dict[str, int] = {}
    documents = []
    for (variant, what), entry in merged.items():
        assert entry.stacks is not None
        samples, weights = [], []
        for stack, weight in sorted(entry.stacks.items()):
            sample = []
            for frame in stack.split(";"):
                if frame not in index:
                    index[frame] = len(frames)
                    frames.append({"name": frame})
                sample.append(index[frame])
            samples.append(sample)
            weights.append(weight)
        documents.append(
            {
                "type": "sampled",
                "name": f"{variant} {what} ({entry.runs} profiled runs summed)",
                "unit": entry.unit if entry.unit == records.NANOSECONDS else "none",
                "startValue": 0,
                "endValue": sum(weights),
                "samples": samples,
                "weights": weights,
            }
        )
    document = {
        "$schema": SPEEDSCOPE_SCHEMA,
        "shared": {"frames": frames},
        "profiles": documents,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": f"cutaway {__version__}",
    }
    return json.dumps(document, ensure_ascii=False) + "\n"


def export_profiles(store: Store, experiment_id: int, format_name: str) -> str:
    """The experiment's profiles in ``format_name`` ("folded" or "speedscope"); ValueError
    when it has none."""
    profiles = load_profiles(store, experiment_id)
    if not profiles:
        raise ValueError(
            f"experiment {experiment_id} has no profiles: run it with --profile "
            "(or [probes] profile = true)"
        )
    if format_name == "folded":
        return render_folded(profiles)
    name = store.experiment(experiment_id).name
    return render_speedscope(profiles, name)


# --- the JSON report's keys (the plugin's json_parts) ------------------------------------------


def profile_json(found: ProfileResult) -> dict[str, JsonValue]:
    """``profile_totals``, ``top_functions``, ``top_stacks`` and ``profile_phases``."""
    return {
        "profile_totals": [_profile_total(total) for total in found.profile_totals],
        "top_functions": _per_variant(found.profile_functions, _function_weight),
        "top_stacks": _per_variant(found.profile_stacks, _stack_weight),
        "profile_phases": [_phase_weight(phase) for phase in found.profile_phases],
    }


def attribution_json(found: ProfileResult) -> dict[str, JsonValue]:
    """``attribution``, ``attribution_totals`` and ``attribution_curve``."""
    return {
        "attribution": [_attribution(entry) for entry in found.attribution],
        "attribution_totals": [_attribution_total(t) for t in found.attribution_totals],
        "attribution_curve": [_attribution_point(p) for p in found.attribution_curve],
    }


def _optional_number(value: float | None) -> float | None:
    return None if value is None else json_number(value)


def _attribution(entry: AttributionEntry) -> dict[str, JsonValue]:
    return {
        "variant": entry.variant,
        "baseline": entry.baseline,
        "profile": entry.what,
        "function": entry.function,
        "kind": entry.kind,
        "unit": entry.unit,
        "baseline_value": json_number(entry.baseline_value),
        "variant_value": json_number(entry.variant_value),
        "delta": json_number(entry.delta),
        "ci_low": json_number(entry.ci_low),
        "ci_high": json_number(entry.ci_high),
        "rounds": int(entry.rounds),
        "share": _optional_number(entry.share),
        "beyond_noise": entry.beyond_noise,
    }


def _attribution_total(total: AttributionTotal) -> dict[str, JsonValue]:
    return {
        "variant": total.variant,
        "baseline": total.baseline,
        "profile": total.what,
        "unit": total.unit,
        "rounds": int(total.rounds),
        "profile_delta": json_number(total.profile_delta),
        "profile_ci_low": json_number(total.profile_ci_low),
        "profile_ci_high": json_number(total.profile_ci_high),
        "baseline_total": json_number(total.baseline_total),
        "measured_metric": total.measured_metric,
        "measured_delta": _optional_number(total.measured_delta),
        "measured_ci_low": _optional_number(total.measured_ci_low),
        "measured_ci_high": _optional_number(total.measured_ci_high),
        "functions": int(total.functions),
        "listed": int(total.listed),
        "listed_delta": json_number(total.listed_delta),
        "beyond_noise": int(total.beyond_noise),
        "within_noise": int(total.within_noise),
        "baseline_only": int(total.baseline_only),
        "variant_only": int(total.variant_only),
    }


def _attribution_point(point: AttributionPoint) -> dict[str, JsonValue]:
    return {
        "variant": point.variant,
        "profile": point.what,
        "unit": point.unit,
        "functions": int(point.functions),
        "cumulative_delta": json_number(point.cumulative_delta),
        "share": _optional_number(point.share),
    }


def _profile_total(total: ProfileTotal) -> dict[str, JsonValue]:
    return {
        "variant": total.variant,
        "kind": total.what,
        "unit": total.unit,
        "runs": int(total.runs),
        "per_run": json_number(total.per_run),
        "events_per_run": json_number(total.events_per_run),
        "profiled_wall_median": None
        if total.profiled_wall is None
        else json_number(total.profiled_wall),
        "timed_wall_median": None if total.timed_wall is None else json_number(total.timed_wall),
    }


def _function_weight(weight: FunctionWeight) -> dict[str, JsonValue]:
    return {
        "kind": weight.what,
        "function": weight.function,
        "unit": weight.unit,
        "self": json_number(weight.self_value),
        "inclusive": json_number(weight.inclusive_value),
        "self_share": json_number(weight.self_share),
        "inclusive_share": json_number(weight.inclusive_share),
    }


def _phase_weight(weight: PhaseWeight) -> dict[str, JsonValue]:
    return {
        "variant": weight.variant,
        "kind": weight.what,
        "phase": weight.phase,
        "unit": weight.unit,
        "per_run": json_number(weight.per_run),
        "share": json_number(weight.share),
    }


def _stack_weight(weight: StackWeight) -> dict[str, JsonValue]:
    return {
        "kind": weight.what,
        "frames": list[JsonValue](weight.stack.split(";")),
        "unit": weight.unit,
        "value": json_number(weight.value),
        "share": json_number(weight.share),
    }


def _per_variant(
    items: Sequence[FunctionWeight] | Sequence[StackWeight],
    convert: Callable[[Any], dict[str, JsonValue]],
) -> list[JsonValue]:
    """[{"variant": name, "entries": [...]}, ...] in the variants' order of appearance."""
    grouped: dict[str, list[JsonValue]] = {}
    for item in items:
        grouped.setdefault(item.variant, []).append(convert(item))
    return [{"variant": variant, "entries": entries} for variant, entries in grouped.items()]
