"""The per-run collector and the sampler, with a real process that comes and goes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cutaway.metrics.collect import MetricCollector, MetricError
from cutaway.metrics.sampler import Sampler
from cutaway.model import MetricSpec, RunStatus, Variant
from cutaway.probes.base import Attachment
from cutaway.runner.executor import Measurement

VARIANT = Variant(name="v", command=("true",))


def ok() -> Measurement:
    return Measurement(RunStatus.OK, 0, None, {"wall": 0.1})


def test_a_process_gone_at_a_later_run_fails_that_run(tmp_path: Path) -> None:
    pid_file = tmp_path / "p.pid"
    sleeper = subprocess.Popen(["sleep", "30"])
    pid_file.write_text(f"{sleeper.pid}\n")
    metric = MetricSpec("srv", "process", unit="bytes", pid_file=str(pid_file), stat="rss")
    collector = MetricCollector([metric])
    try:
        first = collector.start(VARIANT)
        measured = first.after_run(ok())
        assert measured.status is RunStatus.OK and measured.metrics["srv"] > 0
        assert first.stop() == []  # no series asked for
        during = collector.start(VARIANT)
        sleeper.kill()
        sleeper.wait()
        measured = during.after_run(ok())
        assert measured.status is RunStatus.FAILED
        assert measured.message == f"metric 'srv': process {sleeper.pid} exited during the run"
        later = collector.start(VARIANT).after_run(ok())
        assert later.status is RunStatus.FAILED and "no process" in later.message
    finally:
        sleeper.kill()
        sleeper.wait()
    with pytest.raises(MetricError, match="metric 'srv' of variant 'w'"):
        collector.start(Variant(name="w", command=("true",)))  # its first run: an error


def test_a_failed_run_keeps_its_own_message() -> None:
    metric = MetricSpec("rps", "output", pattern=r"rps=(?P<value>\d+)")
    collecting = MetricCollector([metric]).start(VARIANT)
    assert collecting.attach(Attachment()).capture == frozenset({"stdout"})
    failed = Measurement(RunStatus.FAILED, 1, None, {}, "exit status 1", {"stdout": "rps=3"})
    measured = collecting.after_run(failed)
    assert (measured.status, measured.message, measured.metrics["rps"]) == (
        RunStatus.FAILED,
        "exit status 1",
        3.0,
    )


def test_the_sampler_skips_nothing_to_read_and_keeps_the_first_error() -> None:
    values = iter([None, 1.0, 2.0])

    def flaky() -> float:
        raise OSError("gone")

    sampler = Sampler({"a": lambda: next(values, 3.0), "b": flaky}, interval=0.01)
    sampler.start()
    series = sampler.stop()
    assert series["a"].values[0] == 1.0 and series["a"].times[0] >= 0  # the None: no sample
    assert series["b"].values == [] and series["b"].error == "gone"
    assert sampler.stop() is series  # idempotent
