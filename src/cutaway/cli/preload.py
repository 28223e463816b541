"""Import the analysis and the reports while an experiment does only discarded work.

numpy, the statistics and rich take about as long to import as a short experiment's warmup
and calibration take to run (issue #8: 20 runs each of two 10 ms commands). During that work
the main thread mostly waits for the fork server, so a thread imports them then. It must never
compete with a counted run on a 2-core machine: :class:`AnalysisPreload` is a runner listener
that waits for the thread when the first counted run is about to start (before its prepare
hook), so every counted run finds the imports finished.

It is started only for an experiment without probes: a probe measures its own overhead before
the first run, and that figure is reported."""

from __future__ import annotations

import importlib
import sys
import threading

from cutaway import events
from cutaway.model import Spec
from cutaway.probes.plugin import CALL_RECORDS
from cutaway.probes.registry import records_kept

# What `cutaway run` imports after the runs: cutaway.compare brings numpy and the statistics,
# cutaway.report rich and the report views.
ANALYSIS_MODULES = ("cutaway.compare", "cutaway.report", "numpy.random")
# While the thread imports, the main thread gets the GIL back within this many seconds (the
# default, 5 ms, would delay it by several ms after each run it waits for).
_SWITCH_INTERVAL_SECONDS = 0.0005


class AnalysisPreload:
    """A runner listener; :meth:`start` before running, :meth:`wait` (also called at the
    first counted run) before anything else uses the modules."""

    def __init__(self, modules: tuple[str, ...] = ANALYSIS_MODULES) -> None:
        self.modules = modules
        self._thread: threading.Thread | None = None
        self._switch_interval = sys.getswitchinterval()

    @staticmethod
    def applies_to(spec: Spec) -> bool:
        return not records_kept(spec.probes, CALL_RECORDS)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._import, name="cutaway-preload", daemon=True)
        sys.setswitchinterval(_SWITCH_INTERVAL_SECONDS)
        self._thread.start()

    def _import(self) -> None:
        for name in self.modules:
            try:
                importlib.import_module(name)
            except BaseException:  # the main thread's own import raises it again
                return

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            sys.setswitchinterval(self._switch_interval)

    def __call__(self, event: events.Event) -> None:
        counted = isinstance(event, events.RunStarted) and event.round_index >= 0
        if counted or isinstance(event, events.ExperimentFinished):
            self.wait()
