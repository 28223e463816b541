"""What `cutaway publish DIR` shows: for every experiment name in a store, its history (each
metric over versions, per variant, with the change points), the verdicts of its newest
experiment and the steps still to triage. The pages themselves are drawn by
cutaway.report.html.site; this module only reads the store.

A page is per name, since a name is what a series of experiments shares (a nightly run of one
experiment file); its file name is made from the name by :func:`page_file`, safe whatever the
name holds."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cutaway.history import History, HistoryError, load_histories

if TYPE_CHECKING:
    from cutaway.model import Comparison
    from cutaway.store import ExperimentRow, Store, StoredExperiment

# Resamples of the newest experiment's verdicts on the index: fewer than a report's (its
# intervals are a summary, the report has the full ones), so that a thousand names index fast.
INDEX_RESAMPLES = 2000
_UNSAFE_IN_FILE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class OpenStep:
    """A change point not yet triaged that made the metric worse."""

    metric: str
    variant: str
    change_id: str
    before_version: str
    after_version: str
    relative: float  # the step's size over the level before it


@dataclass(frozen=True)
class SitePage:
    name: str
    file: str  # the page's file name in the site's directory
    experiments: int
    newest_id: int
    newest_created_at: float
    newest_version: str
    histories: tuple[History, ...]
    verdicts: tuple[Comparison, ...]  # the newest experiment's, on its primary metric
    open_steps: tuple[OpenStep, ...]


def page_file(name: str) -> str:
    """A file name for a name's page: its safe characters (at most 60), then 8 hex digits of
    its SHA-256, so that two names never share a page and no name reaches outside the site's
    directory or means anything to a shell."""
    readable = _UNSAFE_IN_FILE_NAME.sub("-", name)[:60].strip("-.") or "experiment"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{readable}-{digest}.html"


def site_pages(
    store: Store, metrics: Sequence[str] | None = None, *, resamples: int = INDEX_RESAMPLES
) -> list[SitePage]:
    """A page for every name in the store with a usable run, the most recently run first."""
    listing = store.list_experiments()
    by_name: dict[str, list[ExperimentRow]] = {}
    for row in listing:
        by_name.setdefault(row.name, []).append(row)
    newest = {name: max(r.created_at for r in rows) for name, rows in by_name.items()}
    pages = []
    for name in sorted(by_name, key=lambda name: (-newest[name], name)):
        page = site_page(store, name, by_name[name], metrics, resamples=resamples)
        if page is not None:
            pages.append(page)
    return pages


def site_page(
    store: Store,
    name: str,
    rows: Sequence[ExperimentRow],
    metrics: Sequence[str] | None = None,
    *,
    resamples: int,
) -> SitePage | None:
    """One name's page from its experiments' rows; None when none has a usable run to draw."""
    try:
        histories = load_histories(store, name, metrics, listing=rows)
    except HistoryError:
        return None
    newest = store.experiment(max(rows, key=lambda row: (row.created_at, row.id)).id)
    return SitePage(
        name=name,
        file=page_file(name),
        experiments=len(rows),
        newest_id=newest.id,
        newest_created_at=newest.created_at,
        newest_version=_newest_version(newest, histories),
        histories=histories,
        verdicts=newest_verdicts(store, newest, resamples=resamples),
        open_steps=tuple(open_steps(histories)),
    )


def newest_verdicts(
    store: Store, stored: StoredExperiment, *, resamples: int
) -> tuple[Comparison, ...]:
    """The experiment's verdicts on its primary metric, each compared pair as its report
    judges them (round by round, at full alpha); none without usable rounds."""
    from cutaway.families import compared_pairs, paired_family
    from cutaway.probes.core import primary_metric, spec_metrics

    spec = stored.spec
    if not store.has_usable_rounds(stored.id):
        return ()
    primary = next((m for m in spec_metrics(spec) if m.name == primary_metric(spec)), None)
    if primary is None:
        return ()
    tables = {primary.name: store.metric_table(stored.id, primary.name, primary.purpose)}
    verdicts = []
    for reference, other in compared_pairs(spec):
        verdicts += paired_family(tables, (primary,), reference, other, spec, resamples)
    return tuple(verdicts)


def open_steps(histories: Sequence[History]) -> list[OpenStep]:
    """Every change point that made a metric worse and has no triage yet, per series."""
    steps = []
    for history in histories:
        for point in history.segmentation.change_points:
            change_id = history.change_id(point.index)
            worse = (point.size > 0) == (history.metric.better == "lower")
            if worse and change_id not in history.triage:
                steps.append(
                    OpenStep(
                        metric=history.metric.name,
                        variant=history.variant,
                        change_id=change_id,
                        before_version=history.points[point.index - 1].version,
                        after_version=history.points[point.index].version,
                        relative=point.relative,
                    )
                )
    return steps


def _newest_version(newest: StoredExperiment, histories: Sequence[History]) -> str:
    """The newest experiment's version as its points show it (its followed variant's own
    version, else its label), else its label, else its id."""
    for history in histories:
        for point in history.points:
            if point.experiment_id == newest.id:
                return point.version
    return newest.label or f"#{newest.id}"
