"""One load phase, as the runner runs it: the generator spawned by the fork server like any
measured command (so Ctrl-C, time limits and leftovers work as for any run), its JSON summary
read from its standard output into the run's metrics and kept whole with the run (its HDR
histograms merge exactly across rounds), and the server's process tree sampled from /proc
meanwhile by the same sampler as the ``process`` metrics.

Before the first round the runner waits until each server accepts connections
(:func:`wait_until_accepting`), bounded by ``ready_timeout``. The runner knows the load phase
as the plugin's measured phase (:class:`LoadPhase`, cutaway.probes.base.MeasuredPhase)."""

from __future__ import annotations

import dataclasses
import json
import math
import socket
import time
from collections.abc import Callable, Mapping

from cutaway.metrics.process import ProcessNotFound, find_process, read_stat
from cutaway.metrics.sampler import Sampler, Series
from cutaway.model import DEFAULT_SAMPLE_INTERVAL, RunData, RunStatus, Variant
from cutaway.probes.base import Attachment, Measurement, PhaseError
from cutaway.probes.load.settings import GENERATOR_PROGRAM, LoadSpec
from cutaway.variant_environment import variant_path

LOAD_KIND = "load"  # RunData.kind of a load phase's summary
SUMMARY_KEY = "summary"
# Beyond its planned length, how long a load phase may run before it is stopped as hung: the
# generator ends on its own (each request has a timeout), this only bounds a defect.
RUN_GRACE_SECONDS = 30.0
REQUESTS_RUN_LIMIT_SECONDS = 600.0
# Ctrl-C during a load phase: the generator gets SIGINT and this long to let its requests in
# flight finish (it waits at most 1 s for them) and write its summary before it is killed.
INTERRUPT_GRACE_SECONDS = 5.0
LATENCY_PERCENTILES = {
    "latency_p50": "50",
    "latency_p90": "90",
    "latency_p99": "99",
    "latency_p999": "99.9",
    "latency_max": "100",
}
# ab's Connect row, judged only when every request opens its own connection.
CONNECT_PERCENTILES = {"connect_p50": "50", "connect_p90": "90", "connect_p99": "99"}
SERVER_STATS = ("cpu", "rss", "threads", "fds")


class LoadError(PhaseError):
    """A load experiment cannot go on (a server that never accepts, one that cannot be found)."""


def generator_variant(variant: Variant) -> Variant:
    """The variant as the executor runs it: ``cw_load`` resolved to the installed generator."""
    command = variant.command
    if isinstance(command, tuple) and command and command[0] == GENERATOR_PROGRAM:
        from cutaway.probes.load.generator import generator_path

        path = generator_path()  # None when not built: the preflight says the program is missing
        if path is not None:
            return dataclasses.replace(variant, command=(path, *command[1:]))
    return variant


def run_timeout(load: LoadSpec, timeout_seconds: float | None) -> float:
    """The time limit of one load phase: the experiment's ``timeout`` if set, else its planned
    length with a generous grace (a request-count phase: REQUESTS_RUN_LIMIT_SECONDS)."""
    if timeout_seconds is not None:
        return timeout_seconds
    if load.duration_seconds is None:
        return REQUESTS_RUN_LIMIT_SECONDS
    planned = load.warmup_seconds + load.duration_seconds + load.request_timeout_seconds
    return planned + RUN_GRACE_SECONDS


def wait_until_accepting(
    variant: str,
    host: str,
    port: int,
    timeout_seconds: float,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Return once ``host:port`` accepts a TCP connection; LoadError naming the variant and
    the address after ``timeout_seconds`` of refusals."""
    deadline = clock() + timeout_seconds
    last = "no answer"
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError as error:
            last = error.strerror or str(error)
        if clock() >= deadline:
            raise LoadError(
                f"variant {variant!r}: nothing accepts connections on {host}:{port} after "
                f"{timeout_seconds:g} s ({last}); its setup hook must start the server there "
                "(ready_timeout in [load] waits longer)"
            )
        time.sleep(0.05)


class ServerSampling:
    """The server's process tree sampled during one load phase: CPU seconds used, peak and
    final resident memory, peak threads and open files."""

    def __init__(self, load: LoadSpec, variant: Variant) -> None:
        self.pid = locate_server(load, variant)
        pid = self.pid
        readings = {stat: _reading(pid, stat) for stat in SERVER_STATS}
        self.sampler = Sampler(readings, DEFAULT_SAMPLE_INTERVAL)
        self.sampler.start()
        self._series: dict[str, Series] | None = None

    def stop(self) -> dict[str, Series]:
        if self._series is None:
            self._series = self.sampler.stop()
        return self._series

    def metrics(self) -> tuple[dict[str, float], str | None]:
        """The server metrics, and why they could not be read (the server exited) or None."""
        series = self.stop()
        for stat in SERVER_STATS:
            if series[stat].error is not None:
                return {}, f"the server (pid {self.pid}): {series[stat].error} during the load"
            if not series[stat].values:
                return {}, f"no sample of the server (pid {self.pid}) was taken"
        rss = series["rss"].values
        return {
            "server_cpu": series["cpu"].values[-1] - series["cpu"].values[0],
            "server_rss_peak": max(rss),
            "server_rss_final": rss[-1],
            "server_threads": max(series["threads"].values),
            "server_fds": max(series["fds"].values),
        }, None


def _reading(pid: int, stat: str) -> Callable[[], float]:
    return lambda: read_stat(pid, stat)


def locate_server(load: LoadSpec, variant: Variant) -> int:
    """The server's pid: from the variant's pid file, else the process listening on its port."""
    pid_file = load.pid_files.get(variant.name)
    try:
        if pid_file is not None:
            return find_process(pid_file=variant_path(pid_file, variant))
        return find_process(port=load.target(variant.name).port)
    except ProcessNotFound as error:
        raise LoadError(
            f"variant {variant.name!r}: cannot find its server to sample: {error} (give "
            "pid_file, or server_metrics = false / --no-server-metrics)"
        ) from None


def read_load_summary(text: str) -> dict[str, object]:
    """The generator's JSON summary, checked for what the metrics need; ValueError naming the
    field that is missing or wrong."""
    try:
        summary = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"the generator's summary is not JSON: {error}") from None
    if not isinstance(summary, dict) or summary.get("format") != "cutaway-load":
        raise ValueError("the generator's output is not a cutaway-load summary")
    for key in ("requests", "throughput", "duration"):
        _finite(summary.get(key), key)
    errors = summary.get("errors")
    if not isinstance(errors, dict):
        raise ValueError("the summary's errors is not an object")
    for kind, count in errors.items():
        _finite(count, f"errors.{kind}")
    _percentiles(summary, "corrected", "total")
    return summary


def _finite(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"the summary's {key} is not a number")
    return float(value)


def _percentiles(summary: Mapping[str, object], kind: str, phase: str) -> Mapping[str, object]:
    latency = summary.get("latency")
    histogram = None
    if isinstance(latency, dict) and isinstance(latency.get(kind), dict):
        histogram = latency[kind].get(phase)
    if not isinstance(histogram, dict) or not isinstance(histogram.get("percentiles"), dict):
        raise ValueError(f"the summary has no latency.{kind}.{phase}.percentiles")
    percentiles: Mapping[str, object] = histogram["percentiles"]
    return percentiles


def summary_metrics(summary: Mapping[str, object]) -> dict[str, float]:
    """A load phase's metrics from its summary: throughput, errors, the corrected total
    latency's percentiles (seconds), with a new connection per request the connect time's
    (ab's Connect row), and the generator's own figures (never compared)."""
    errors = summary["errors"]
    assert isinstance(errors, dict)
    values = {
        "throughput": _finite(summary["throughput"], "throughput"),
        "errors": float(sum(_finite(count, "errors") for count in errors.values())),
    }
    percentiles = _percentiles(summary, "corrected", "total")
    requests = _finite(summary["requests"], "requests")
    for name, key in LATENCY_PERCENTILES.items():
        if requests > 0:
            values[name] = _finite(percentiles.get(key), f"latency.corrected.total.{key}")
    if summary.get("new_connection") is True and requests > 0:
        # From the actual send: the TCP connect itself, as ab times it. The corrected view adds
        # the wait for a free connection in open loop, which latency_* already count.
        connect = _percentiles(summary, "uncorrected", "connect")
        for name, key in CONNECT_PERCENTILES.items():
            values[name] = _finite(connect.get(key), f"latency.uncorrected.connect.{key}")
    generator = summary.get("generator")
    if isinstance(generator, dict):
        for key in ("cpu_seconds", "cpu_share", "missed_sends"):
            value = generator.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                name = "generator_cpu" if key == "cpu_seconds" else f"generator_{key}"
                values[name] = float(value)
        values["generator_saturated"] = 1.0 if generator.get("saturated") else 0.0
    return values


def after_load(
    measured: Measurement, server: ServerSampling | None
) -> tuple[Measurement, list[RunData]]:
    """The run's measurement with the load phase's metrics, and the summary to keep with it.
    A summary that cannot be read fails the run (a load phase without figures is not a fast
    one); a phase that answered no request fails it too, with the generator's own words."""
    server_metrics, server_problem = server.metrics() if server is not None else ({}, None)
    output = measured.output.get("stdout", "")
    metrics = {
        f"generator_{name}" if name != "wall" else name: value
        for name, value in measured.metrics.items()
        if name in ("wall", "max_rss")
    }
    problem: str | None = None
    try:
        summary = read_load_summary(output) if output.strip() else None
    except ValueError as error:
        summary = None
        problem = str(error)
    else:
        problem = "the generator wrote no summary" if summary is None else None
    data: list[RunData] = []
    status, message = measured.status, measured.message
    if summary is not None:
        metrics.update(summary_metrics(summary))
        data.append(RunData(LOAD_KIND, SUMMARY_KEY, 1, output.encode()))
        if status is RunStatus.OK and not summary.get("requests"):
            status, message = RunStatus.FAILED, "no request was answered"
    if status is RunStatus.OK and problem is not None:
        status, message = RunStatus.FAILED, problem
    if status is RunStatus.OK and server_problem is not None:
        status, message = RunStatus.FAILED, server_problem
    metrics.update(server_metrics)
    done = dataclasses.replace(measured, status=status, message=message, metrics=metrics)
    return done, data


class LoadPhase:
    """The load phase as the runner runs it (cutaway.probes.base.MeasuredPhase): the generator
    in place of each variant's command, against the variant's server."""

    def __init__(self, load: LoadSpec) -> None:
        self.load = load

    def wait_until_ready(self, variant: Variant) -> None:
        target = self.load.target(variant.name)
        wait_until_accepting(
            variant.name, target.host, target.port, self.load.ready_timeout_seconds
        )

    def measured_variant(self, variant: Variant) -> Variant:
        return generator_variant(variant)

    def start_run(
        self, variant: Variant, attachment: Attachment, timeout_seconds: float | None
    ) -> LoadPhaseRun:
        server = ServerSampling(self.load, variant) if self.load.server_metrics else None
        # Interrupted, the generator writes what it measured: kept as an interrupted run.
        widened = dataclasses.replace(
            attachment,
            capture=attachment.capture | {"stdout"},
            interrupt_grace_seconds=INTERRUPT_GRACE_SECONDS,
        )
        return LoadPhaseRun(widened, run_timeout(self.load, timeout_seconds), server)


@dataclasses.dataclass
class LoadPhaseRun:
    """One load phase (cutaway.probes.base.PhaseRun): the server sampled while it runs."""

    attachment: Attachment
    timeout_seconds: float | None
    server: ServerSampling | None

    def finish(self, measured: Measurement) -> tuple[Measurement, list[RunData]]:
        return after_load(measured, self.server)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
