"""What the store hands out: stored experiments, listings, per-metric tables, probe data; and
the JSON helper for the columns that hold mappings. Value objects only, no database access."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from cutaway.model import Calibration, Spec
from cutaway.store.schema import StoreError
from cutaway.value_class import value_class

if TYPE_CHECKING:  # numpy only for annotations: `cutaway list` must not import it
    import numpy as np
    import numpy.typing as npt


# How a change flagged in a history was judged (`cutaway history --triage`).
TRIAGE_STATES = ("confirmed", "false alarm", "accepted")


@value_class
class Triage:
    """How a change flagged in a history was judged, with a note, and when."""

    change_id: str
    state: str
    note: str
    at: float


@value_class
class ProbeInfo:
    """A probe of a stored experiment: what measured, and what it cost per recorded event and
    per process it entered."""

    name: str
    description: str
    overhead_seconds: float | None
    process_overhead_seconds: float | None = None


@value_class
class StoredRunData:
    """One stored RunData, with the run it belongs to."""

    variant: str
    round_index: int
    key: str
    count: int
    data: bytes


@value_class
class StoredExperiment:
    """One experiment as stored, with the spec it was run from."""

    id: int
    name: str
    status: str  # "running", "complete" or "incomplete"
    created_at: float  # Unix time
    finished_at: float | None
    label: str | None
    spec: Spec
    environment: dict[str, Any]  # fingerprint at start
    environment_end: dict[str, Any] | None
    cutaway_version: str
    calibration: Calibration | None
    # The variants' own versions, by name; the label is the version of a variant without one.
    versions: Mapping[str, str] = field(default_factory=dict)

    def version_of(self, variant: str) -> str | None:
        """The version of a variant: its own, else the experiment's label (None: neither)."""
        return self.versions.get(variant, self.label)


@value_class
class ExperimentRow:
    """One line of `cutaway list`. ``n_runs`` counts every stored run, warmup and failed ones
    included."""

    id: int
    name: str
    status: str
    created_at: float
    label: str | None
    n_variants: int
    n_runs: int


@dataclass(frozen=True, eq=False)  # eq would compare arrays element-wise, which is ambiguous
class MetricTable:
    """One metric of one experiment as a rounds x variants matrix, for paired analysis.

    ``rounds`` are the counted rounds (``round_index >= 0``) in which at least one variant has
    a run, ascending. ``values[i, j]`` is the metric of variant ``variants[j]`` in ``rounds[i]``,
    NaN when that run is missing, did not end "ok", or has no such metric. A round is a complete
    pair of two variants when both their columns are finite."""

    rounds: npt.NDArray[np.int64]
    variants: tuple[str, ...]  # in spec order
    values: npt.NDArray[np.float64]  # shape (len(rounds), len(variants))

    @cached_property
    def column_of(self) -> Mapping[str, int]:
        """Each variant's column: looked up once per variant and pair, a tuple's index() made
        the analysis of thousands of variants quadratic."""
        return {name: index for index, name in enumerate(self.variants)}


def dumps(value: object, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=plain_mapping)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"cannot store {what}: it is not JSON-serialisable ({exc})") from exc


def plain_mapping(value: object) -> dict[str, object]:
    """Let json write read-only mappings (MappingProxyType), as the value objects hold."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")
