"""Load experiments in the runner, driven by a fake generator (the executor seam): each run
is a load phase whose summary becomes the run's metrics; a throughput drop is `regressed` and
a latency rise too, through the ordinary paired analysis; a server that never accepts stops
the experiment before the first round, naming the variant and the port; a load phase
without a summary, or that answered nothing, is a failed run, never a fast one."""

from __future__ import annotations

import json
import random
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from cutaway.compare import analyze, compare_experiments
from cutaway.model import RunStatus, Spec, Variant, Verdict
from cutaway.probes.base import Attachment
from cutaway.probes.load import capture
from cutaway.probes.load.experiment_file import with_generator
from cutaway.probes.load.result import load_summaries_of
from cutaway.probes.load.settings import LoadSpec, with_load
from cutaway.report import FORMATS, render_terminal
from cutaway.report.html import render_html
from cutaway.runner.executor import Measurement, RunInterrupted
from cutaway.runner.runner import RunnerError, run_experiment
from cutaway.store import Store

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "load" / "summary-v1.json"


def _summary(throughput: float, p99: float, requests: int = 1000) -> str:
    """A real summary (recorded from cw_load, so that its histograms decode) with the figures
    the test needs: throughput, requests and the corrected total latency's percentiles."""
    summary = json.loads(RECORDED.read_text())
    percentiles = {"50": p99 / 3, "90": p99 / 2, "99": p99, "99.9": p99 * 2, "100": p99 * 4}
    summary["latency"]["corrected"]["total"]["percentiles"] = percentiles
    summary.update(mode="closed", rate=None, requests=requests, throughput=throughput)
    return json.dumps(summary)


class FakeGenerator:
    """Answers each load phase with a summary: variant "slow" serves half the throughput of
    "fast" at twice its latency, each with a little noise; "silent" writes no summary,
    "idle" answers no request."""

    def __init__(self) -> None:
        self.random = random.Random(1)
        self.timeouts: list[float | None] = []

    def measure(
        self, variant: Variant, timeout_seconds: float | None, attachment: Attachment | None = None
    ) -> Measurement:
        if variant.name == "(calibration)":
            return Measurement(RunStatus.OK, 0, None, {"wall": 0.0005})
        assert attachment is not None and "stdout" in attachment.capture
        self.timeouts.append(timeout_seconds)
        noise = 1 + self.random.uniform(-0.02, 0.02)
        if variant.name == "interrupted" and len(self.timeouts) == 3:
            # Ctrl-C during its second phase: the generator wrote what it measured.
            assert attachment.interrupt_grace_seconds is not None
            text = _summary(4_000.0, 0.003, requests=400)
            stopped = Measurement(RunStatus.INTERRUPTED, 130, None, {"wall": 0.1},
                                  "interrupted (exit status 130)", {"stdout": text})  # fmt: skip
            raise RunInterrupted(stopped, KeyboardInterrupt())
        text = {
            "fast": _summary(10_000 * noise, 0.001 * noise),
            "slow": _summary(5_000 * noise, 0.002 * noise),
            "interrupted": _summary(5_000 * noise, 0.002 * noise),
            "silent": "",
            "idle": _summary(0.0, 0.0, requests=0),
        }[variant.name]
        return Measurement(RunStatus.OK, 0, None, {"wall": 1.5}, output={"stdout": text})

    def check(self, variant: Variant) -> str | None:
        return None

    def close(self) -> None:
        pass


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield server.getsockname()[1]


@pytest.fixture(autouse=True)
def no_generator_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capture, "generator_variant", lambda variant: variant)


def _spec(port: int, *names: str, ready: float = 5.0) -> Spec:
    load = LoadSpec(
        targets={name: f"http://127.0.0.1:{port}/" for name in names},
        duration_seconds=1.0,
        warmup_seconds=0.0,
        ready_timeout_seconds=ready,
        server_metrics=False,
    )
    variants = tuple(with_generator(load, Variant(name, ("cw_load",))) for name in names)
    return with_load(Spec(name="load", variants=variants, baseline=names[0], rounds=10), load)


def test_throughput_drop_and_latency_rise_are_regressed(tmp_path: Path, listening: int) -> None:
    generator = FakeGenerator()
    with Store(tmp_path / "s.db") as store:
        outcome = run_experiment(
            _spec(listening, "fast", "slow"), store, environment={}, executor=generator
        )
        assert outcome.status == "complete"
        analysis = analyze(store, outcome.experiment_id, resamples=200)
    verdicts = {c.metric: c for c in analysis.comparisons}
    assert verdicts["throughput"].verdict is Verdict.REGRESSED
    assert verdicts["throughput"].ratio == pytest.approx(0.5, rel=0.05)
    assert verdicts["latency_p99"].verdict is Verdict.REGRESSED
    assert verdicts["latency_p50"].verdict is Verdict.REGRESSED
    # Each load phase is bounded even though the generator ends on its own.
    assert all(t is not None and t < 60 for t in generator.timeouts)


def test_throughput_rise_is_improved(tmp_path: Path, listening: int) -> None:
    with Store(tmp_path / "s.db") as store:
        outcome = run_experiment(
            _spec(listening, "slow", "fast"), store, environment={}, executor=FakeGenerator()
        )
        analysis = analyze(store, outcome.experiment_id, resamples=200)
    verdicts = {c.metric: c.verdict for c in analysis.comparisons}
    assert verdicts["throughput"] is Verdict.IMPROVED
    assert verdicts["latency_p99"] is Verdict.IMPROVED


def test_a_server_that_never_accepts_stops_before_the_first_round(tmp_path: Path) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # bound, never listening: connections are refused
        generator = FakeGenerator()
        with Store(tmp_path / "s.db") as store, pytest.raises(RunnerError) as error:
            run_experiment(
                _spec(port, "fast", "slow", ready=0.3), store, environment={}, executor=generator
            )
    message = str(error.value)
    assert "'fast'" in message and f"127.0.0.1:{port}" in message and "0.3 s" in message
    assert generator.timeouts == []  # not one load phase ran


@pytest.mark.parametrize(
    ("variant", "reason"),
    [("silent", "wrote no summary"), ("idle", "no request was answered")],
)
def test_a_load_phase_without_figures_is_a_failed_run(
    tmp_path: Path, listening: int, variant: str, reason: str
) -> None:
    with Store(tmp_path / "s.db") as store, pytest.raises(RunnerError) as error:
        run_experiment(
            _spec(listening, "fast", variant), store, environment={}, executor=FakeGenerator()
        )
    assert variant in str(error.value) and reason in str(error.value)


def test_an_interrupted_load_phase_is_kept_as_an_interrupted_run(
    tmp_path: Path, listening: int
) -> None:
    with Store(tmp_path / "s.db") as store:
        outcome = run_experiment(
            _spec(listening, "fast", "interrupted"), store, environment={}, executor=FakeGenerator()
        )
        assert (outcome.status, outcome.reason) == ("incomplete", "interrupted")
        runs = store.runs(outcome.experiment_id)
        interrupted = [run for run in runs if run.status is RunStatus.INTERRUPTED]
        assert [(run.variant, run.exit_code) for run in interrupted] == [("interrupted", 130)]
        assert interrupted[0].metrics["throughput"] == 4_000.0  # its summary, read
        # Stored with its summary, but never counted, and run again by a resumed experiment.
        assert (interrupted[0].round_index, "interrupted", "timed") not in store.completed_slots(
            outcome.experiment_id
        )
        assert all(item.variant == "fast" for item in store.run_data(outcome.experiment_id, "load"))


def test_compare_of_two_load_experiments_lists_each_ones_load_phases(
    tmp_path: Path, listening: int
) -> None:
    with Store(tmp_path / "s.db") as store:
        ids = [
            run_experiment(
                _spec(listening, "fast", "slow"), store, environment={}, executor=FakeGenerator()
            ).experiment_id
            for _ in range(2)
        ]
        analysis = compare_experiments(store, *ids, resamples=200)
    names = [f"{v} (#{i})" for v in ("fast", "slow") for i in ids]
    assert sorted(s.variant for s in load_summaries_of(analysis)) == sorted(names)
    for summary in load_summaries_of(analysis):
        assert summary.phases == 10 and summary.requests == 10 * 1000
        assert {latency.variant for latency in summary.latencies} == {summary.variant}
    document = json.loads(FORMATS["json"].render(analysis))
    assert sorted(entry["variant"] for entry in document["load"]) == sorted(names)
    text = render_terminal(analysis, color=False, width=120, all_metrics=True)
    markdown = FORMATS["markdown"].render(analysis)
    page = render_html(analysis)
    for rendered in (text, markdown, page):
        assert "Load phases" in rendered
        assert "Connection Times (µs) of " in rendered
        assert all(name in rendered for name in names)
