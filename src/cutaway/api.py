"""cutaway as a library: run experiments and load stored ones as arrays, without the CLI.

>>> from cutaway import api
>>> data = api.load()                     # the newest experiment in $CUTAWAY_DB
...                                       # (else .cutaway/cutaway.db), as the CLI
>>> data.values("wall")["fast"]           # that variant's counted wall times, in seconds
>>> rounds, names, table = data.paired("wall")   # one row per round, NaN where a run failed
>>> api.analyze().comparisons             # the same Analysis every report renders
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # The store, numpy, the analysis and the runner are imported by the functions that
    # use them, so that importing this module, and the CLI that takes DEFAULT_DB from it, is
    # cheap.
    import numpy as np
    from numpy.typing import NDArray

    from cutaway import events
    from cutaway.model import Analysis, Run, Spec
    from cutaway.probes.plugin import ProbePlugin
    from cutaway.runner.runner import Outcome
    from cutaway.store import Store, StoredExperiment

DEFAULT_DB = Path(".cutaway") / "cutaway.db"
DB_VARIABLE = "CUTAWAY_DB"  # as for every command of the CLI (cutaway.cli.listing)


def use_registered_probes() -> None:
    """Hand the core (the runner, cutaway.compare, cutaway.history) the probes that
    cutaway.probes.registry lists: they join report sections, so the core, below the reports,
    cannot import them itself (cutaway.probes.core). Done when this module is imported; the
    registry itself is imported only when the core first asks."""
    from cutaway.probes import core

    core.provide(_registered_plugins)


def _registered_plugins() -> tuple[ProbePlugin, ...]:
    from cutaway.probes.registry import plugins

    return plugins()


use_registered_probes()


def open_store(db: str | os.PathLike[str] | None = None) -> Store:
    """The store at ``db``; by default the one every command of the CLI uses: $CUTAWAY_DB,
    else ``.cutaway/cutaway.db`` under the current directory."""
    from cutaway.store import Store

    return Store(db if db is not None else os.environ.get(DB_VARIABLE) or DEFAULT_DB)


@dataclass(frozen=True)
class ExperimentData:
    """One stored experiment, loaded: its spec, runs and per-metric arrays."""

    experiment: StoredExperiment
    runs: tuple[Run, ...]
    store: Store

    @property
    def spec(self) -> Spec:
        return self.experiment.spec

    def paired(self, metric: str) -> tuple[NDArray[np.int64], tuple[str, ...], NDArray[np.float64]]:
        """(round indices, variant names, values[round, variant]); NaN where not measured ok.
        A probe's own metric (``instructions``) is read from that probe's runs. A metric the
        experiment does not have raises KeyError naming the ones it has: an empty array would
        read as "measured, nothing there"."""
        from cutaway.probes.core import spec_metrics

        purpose = next((m.purpose for m in spec_metrics(self.spec) if m.name == metric), None)
        if purpose is None:
            if metric not in (known := self.metric_names()):
                raise KeyError(
                    f"experiment {self.experiment.id} has no metric {metric!r};"
                    f" its metrics: {', '.join(known)}"
                )
            purpose = "timed"
        table = self.store.metric_table(self.experiment.id, metric, purpose)
        return table.rounds, table.variants, table.values

    def metric_names(self) -> tuple[str, ...]:
        """Every metric of the experiment: the spec's (probes' included) and those stored."""
        from cutaway.probes.core import spec_metrics

        declared = [m.name for m in spec_metrics(self.spec)]
        stored = self.store.metric_names(self.experiment.id)
        return tuple(dict.fromkeys([*declared, *stored]))

    def values(self, metric: str) -> dict[str, NDArray[np.float64]]:
        """Each variant's successful counted values of ``metric``, in round order."""
        from cutaway.numeric import np

        _, names, table = self.paired(metric)
        return {name: table[:, i][np.isfinite(table[:, i])] for i, name in enumerate(names)}


def load(ref: str | int | None = None, db: str | os.PathLike[str] | None = None) -> ExperimentData:
    """Load a stored experiment by id (an int or its text), name or "latest" (the default)."""
    store = open_store(db)
    experiment_id = store.resolve(_reference(ref))
    return ExperimentData(
        store.experiment(experiment_id),
        tuple(store.runs(experiment_id, include_warmup=False)),
        store,
    )


def analyze(ref: str | int | None = None, db: str | os.PathLike[str] | None = None) -> Analysis:
    """The analysis of a stored experiment, as every report shows it."""
    from cutaway.compare import analyze as analyze_experiment

    store = open_store(db)
    return analyze_experiment(store, store.resolve(_reference(ref)))


def _reference(ref: str | int | None) -> str | None:
    """An experiment id given as an int is the same reference as its text ("2")."""
    if isinstance(ref, bool):  # bool is an int: True is no experiment id
        raise TypeError(f"an experiment reference is an id, a name or None, not {ref!r}")
    return str(ref) if isinstance(ref, int) else ref


def run(
    spec: Spec,
    db: str | os.PathLike[str] | None = None,
    *,
    label: str | None = None,
    listeners: Iterable[events.Listener] = (),
) -> Outcome:
    """Run an experiment and store it; capture the environment fingerprint first."""
    from cutaway.environment import capture_environment
    from cutaway.runner.runner import run_experiment

    _check_spec(spec, label)
    store = open_store(db)
    return run_experiment(
        spec, store, environment=capture_environment(), listeners=listeners, label=label
    )


class SpecValueError(ValueError):
    """A Spec made in Python that cutaway cannot run or store, found before anything is stored
    (an experiment file or a command line is checked as it is read; a Spec built in code is
    checked here)."""


def _check_plugin_settings(spec: Spec) -> None:
    """Refuse a plugin's settings (a probe's, a phase table's) that it would read back from
    the store as damaged: each plugin reads its own to say whether it is selected."""
    from cutaway.probes.core import plugins
    from cutaway.settings_reading import StoredSettingError

    try:
        for plugin in plugins():
            plugin.selected(spec)
    except StoredSettingError as error:
        raise SpecValueError(f"spec: {error.problem}") from None


def _check_spec(spec: Spec, label: str | None) -> None:
    """Refuse what the spec reader refuses, before anything runs: values the store would read
    back as damaged (rounds=-1, timeout_seconds=nan), numbers past the limits of
    cutaway.spec.limits (timeout_seconds=1e300 overflowed), and text that is not UTF-8 (a lone
    surrogate, which the store cannot write)."""
    import json

    from cutaway.spec import limits
    from cutaway.store.stored_spec import SpecJsonError, spec_from_json

    try:
        text = json.dumps(spec.to_dict(), sort_keys=True, ensure_ascii=False)
        (text + (label or "")).encode("utf-8")
        spec_from_json(json.loads(text), None)
    except SpecJsonError as error:
        raise SpecValueError(f"spec: {error}") from None
    except (TypeError, ValueError) as error:  # UnicodeEncodeError is a ValueError
        raise SpecValueError(f"spec: cannot be stored: {error}") from None
    _check_plugin_settings(spec)
    bounds = (
        ("rounds", spec.rounds, limits.MAX_ROUNDS),
        ("warmup_rounds", spec.warmup_rounds, limits.MAX_WARMUP_ROUNDS),
        ("seed", spec.seed, limits.MAX_SEED),
        ("timeout_seconds", spec.timeout_seconds, limits.MAX_RUN_SECONDS),
        ("hook_timeout_seconds", spec.hook_timeout_seconds, limits.MAX_RUN_SECONDS),
        ("max_time_seconds", spec.max_time_seconds, limits.MAX_EXPERIMENT_SECONDS),
    )
    for key, value, largest in bounds:
        if value is not None and value > largest:
            shown = f"{largest:g}" if isinstance(largest, float) else str(largest)
            raise SpecValueError(f"spec: {key}: expected at most {shown}, found {value!r}")
    if spec.rounds < 1:
        raise SpecValueError(f"spec: rounds: expected at least 1, found {spec.rounds!r}")
