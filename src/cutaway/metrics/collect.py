"""The per-run collector the runner calls around every measured run.

    collecting = collector.start(variant)        # find processes, start sampling
    measured = executor.measure(variant, timeout, collecting.attach(attachment))
    measured = collecting.after_run(measured)    # stop sampling, read the other sources
    data = collecting.stop()                     # time series, as RunData (also after errors)

``after_run`` merges every value into the run's metrics. When a metric cannot be read, a
successful run becomes a failed one whose message names the metric; a run that failed already
keeps its own message. A process that cannot be found at a variant's first run of this
invocation raises :class:`MetricError` (the experiment cannot go on); at a later run it fails
that run only."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cutaway.model import DEFAULT_SAMPLE_INTERVAL, MetricSpec, RunData, RunStatus, Variant
from cutaway.probes.base import Attachment, Measurement

# The sources (their parsers' regular expressions), the sampler (threads) and the series'
# encoding are imported by an experiment that declares metrics, not by every `cutaway run`.
if TYPE_CHECKING:
    from cutaway.metrics.sampler import Reading, Sampler, Series


class MetricError(Exception):
    """A declared metric cannot be read in this experiment (its process is not running)."""


def sampled(spec: MetricSpec) -> bool:
    """Whether the metric is read by the sampler during the run."""
    return spec.source == "process" or (spec.source == "file" and spec.series)


class MetricCollector:
    """The declared metrics of one experiment; ``start`` begins one run's collection."""

    def __init__(self, metrics: Sequence[MetricSpec]) -> None:
        self.metrics = tuple(metrics)
        self._started: set[str] = set()  # variants that had a run in this invocation
        # Without declared metrics a run's collection does nothing and keeps nothing: one
        # serves every run (it is made between two runs).
        self._nothing: RunMetrics | None = None

    def start(self, variant: Variant) -> RunMetrics:
        if not self.metrics:
            if self._nothing is None:
                self._nothing = RunMetrics((), variant, strict=False)
            return self._nothing
        first = variant.name not in self._started
        self._started.add(variant.name)
        return RunMetrics(self.metrics, variant, strict=first)


class RunMetrics:
    """The collection of one run's metrics (see the module's docstring)."""

    def __init__(self, metrics: Sequence[MetricSpec], variant: Variant, *, strict: bool) -> None:
        self.metrics = tuple(metrics)
        self.variant = variant
        self.failures: dict[str, str] = {}
        self.capture = frozenset(m.stream for m in self.metrics if m.source == "output")
        self._samplers: list[Sampler] = []
        self._series: dict[str, Series] = {}
        self._stopped = False
        if self.metrics:
            self._start_sampling(strict)

    def _start_sampling(self, strict: bool) -> None:
        from cutaway.metrics import sources
        from cutaway.metrics.sampler import Sampler

        variant = self.variant
        readings: dict[float, dict[str, Reading]] = {}
        for spec in self.metrics:
            if not sampled(spec):
                continue
            interval = spec.interval_seconds or DEFAULT_SAMPLE_INTERVAL
            if spec.source == "file":
                readings.setdefault(interval, {})[spec.name] = sources.file_reading(spec, variant)
                continue
            try:
                pid = sources.locate_process(spec, variant)
            except sources.ProcessNotFound as error:
                if strict:
                    raise MetricError(
                        f"metric {spec.name!r} of variant {variant.name!r}: {error}"
                    ) from None
                self.failures[spec.name] = str(error)
                continue
            readings.setdefault(interval, {})[spec.name] = sources.process_reading(spec, pid)
        self._samplers = [Sampler(r, interval) for interval, r in readings.items()]
        for sampler in self._samplers:
            sampler.start()

    def attach(self, attachment: Attachment) -> Attachment:
        """The attachment, also asking the executor for the streams output metrics read."""
        if not self.capture:
            return attachment
        return dataclasses.replace(attachment, capture=attachment.capture | self.capture)

    def after_run(self, measured: Measurement) -> Measurement:
        if not self.metrics:
            return measured
        from cutaway.metrics import sources

        self._stop_sampling()
        values: dict[str, float] = {}
        for spec in self.metrics:
            if spec.name in self.failures:
                continue
            try:
                values[spec.name] = self._value(spec, measured)
            except sources.MetricFailure as error:
                self.failures[spec.name] = str(error)
            except sources.MetricStopped as stopped:
                # An interrupt stopped a metric's command: the run is kept for what it
                # measured and never counted, as a run the interrupt stopped itself.
                message = f"metric {spec.name!r}: {stopped}"
                return dataclasses.replace(
                    measured,
                    status=RunStatus.INTERRUPTED,
                    metrics={**measured.metrics, **values},
                    message=measured.message or message,
                )
        metrics = {**measured.metrics, **values}
        if measured.status is not RunStatus.OK or not self.failures:
            return dataclasses.replace(measured, metrics=metrics)
        message = "; ".join(f"metric {name!r}: {text}" for name, text in self.failures.items())
        return dataclasses.replace(
            measured, status=RunStatus.FAILED, metrics=metrics, message=message
        )

    def stop(self) -> list[RunData]:
        """Stop sampling (idempotent) and return the time series kept with the run."""
        self._stop_sampling()
        if not self.metrics:
            return []
        from cutaway.metrics.series import SERIES_KIND, encode_series

        data = []
        for spec in self.metrics:
            series = self._series.get(spec.name)
            if spec.series and series is not None and series.values:
                data.append(
                    RunData(SERIES_KIND, spec.name, len(series.values), encode_series(series))
                )
        return data

    def _stop_sampling(self) -> None:
        if not self._stopped:
            self._stopped = True
            for sampler in self._samplers:
                self._series.update(sampler.stop())

    def _value(self, spec: MetricSpec, measured: Measurement) -> float:
        from cutaway.metrics import sources

        if spec.source == "output":
            return sources.read_output(spec, measured.output)
        if spec.source == "command":
            return sources.read_command(spec, self.variant)
        if spec.source == "process":
            return sources.process_value(spec, self._series[spec.name])
        if spec.series:  # a sampled file: its last sample was taken after the run
            series = self._series[spec.name]
            if series.error is not None:
                raise sources.MetricFailure(series.error)
        return sources.read_file(spec, self.variant)
