"""Sample readings at an interval in a background thread, from just before a run to just
after it: the one sampling mechanism of cutaway (process metrics, file sizes, time series;
a load test's server-side metrics use it too).

A reading is a function returning the value now, or None when there is nothing to read at
this moment (a file not yet created). A reading that raises is not read again in this run; its
first error is kept (:attr:`Series.error`). The first sample is taken in ``start``, before the
run, and the last in ``stop``, after it, so that every series spans the whole run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

Reading = Callable[[], float | None]


@dataclass
class Series:
    """One reading's samples: seconds since ``start`` and the value then."""

    times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    error: str | None = None

    def pairs(self) -> list[tuple[float, float]]:
        return list(zip(self.times, self.values, strict=True))


class Sampler:
    """Reads every reading every ``interval`` seconds between start() and stop()."""

    def __init__(
        self,
        readings: Mapping[str, Reading],
        interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not interval > 0:
            raise ValueError(f"the sampling interval must be positive, not {interval}")
        self.readings = dict(readings)
        self.interval = interval
        self.clock = clock
        self.series: dict[str, Series] = {name: Series() for name in self.readings}
        self._started = 0.0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self._started = self.clock()
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="cutaway-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, Series]:
        """Stop the thread, take the last sample and return every series. Idempotent."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            thread.join()
            self._sample()
        return self.series

    def _loop(self) -> None:
        while not self._stopping.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        with self._lock:
            for name, reading in self.readings.items():
                series = self.series[name]
                if series.error is not None:
                    continue
                try:
                    value = reading()
                except Exception as error:  # kept, and reported with the metric
                    series.error = str(error) or type(error).__name__
                    continue
                if value is not None:
                    series.times.append(self.clock() - self._started)
                    series.values.append(value)
