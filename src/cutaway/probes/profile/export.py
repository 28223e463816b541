"""The profile probe's exports, so other tools open our profiles:

- ``folded``: FlameGraph's folded text (flamegraph.pl, inferno-flamegraph, speedscope all read
  it). Every profiled run of the experiment summed, one tower per variant and kind:
  ``VARIANT;on-cpu;process;frame;...;leaf weight``. Weights are the stored ones (nanoseconds
  for time), so on-CPU and off-CPU towers share one scale: a wall-time flame graph.
- ``speedscope``: speedscope's JSON file format
  (https://www.speedscope.app/file-format-schema.json), one "sampled" profile per variant and
  kind, weights in the stored unit.

The folded format has no escaping: ``;`` separates frames and the last space the weight, so a
variant name is written with ``;`` as ``:`` and line breaks as spaces (frames were already
tidied that way by the folding); JSON escapes everything itself."""

from __future__ import annotations

import json
from collections.abc import Iterable

from cutaway import __version__
from cutaway.probes.profile import records
from cutaway.probes.profile.analysis import load_profiles, merge_profiles
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
