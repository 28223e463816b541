"""The analysis is imported in a thread while only discarded runs go, and never while a counted
run does (cutaway.cli.preload, issue #8)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cutaway import events
from cutaway.cli.preload import AnalysisPreload
from cutaway.model import ProbeSpec, Spec, Variant

# A module that takes a while to import and says when it is done.
SLOW_MODULE = """
import time
time.sleep(0.3)
DONE = True
"""


@pytest.fixture
def slow_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"cutaway_slow_{tmp_path.name}"
    (tmp_path / f"{name}.py").write_text(SLOW_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_waits_before_the_first_counted_run_only(slow_module: str) -> None:
    switch_interval = sys.getswitchinterval()
    preload = AnalysisPreload((slow_module,))
    preload.start()
    preload(events.RunStarted("a", -1, 0))  # a warmup run: no waiting
    assert not getattr(sys.modules.get(slow_module), "DONE", False)
    preload(events.RunStarted("a", 0, 0))  # the first counted run: the import is finished
    assert sys.modules[slow_module].DONE is True
    assert sys.getswitchinterval() == switch_interval


def test_waits_when_the_experiment_ends_before_any_counted_run(slow_module: str) -> None:
    preload = AnalysisPreload((slow_module,))
    preload.start()
    preload(events.ExperimentFinished(1, "incomplete", "error"))
    assert sys.modules[slow_module].DONE is True


def test_a_failed_import_is_left_to_the_main_thread(tmp_path: Path) -> None:
    preload = AnalysisPreload(("cutaway_no_such_module",))
    preload.start()
    preload.wait()  # no exception: the command's own import reports it
    with pytest.raises(ImportError):
        __import__("cutaway_no_such_module")


def test_not_for_experiments_with_probes() -> None:
    """A probe measures its own overhead before the first run: nothing may compete with it."""
    variants = (Variant(name="a", command=("true",)), Variant(name="b", command=("true",)))
    plain = Spec(name="x", variants=variants, baseline="a")
    assert AnalysisPreload.applies_to(plain)
    for probes in (ProbeSpec(calls=("getpwnam",)), ProbeSpec(syscalls=("fsync",))):
        spec = Spec(name="x", variants=variants, baseline="a", probes=probes)
        assert not AnalysisPreload.applies_to(spec)
