"""ab's Connect row as judged metrics: with a new connection per request every load phase has
connect_p50, connect_p90 and connect_p99 (seconds, lower is better), read from the generator's
summary; over keep-alive connections (Connect 0 for nearly every request) it has none."""

from __future__ import annotations

import pytest

from cutaway.probes.core import spec_metrics
from cutaway.probes.load.capture import summary_metrics
from cutaway.spec import SpecError, parse_spec

CONNECT = ["connect_p50", "connect_p90", "connect_p99"]


def _file(new_connection: bool, extra: str = "") -> str:
    return (
        'name = "connect"\n[load]\nconnections = 2\nduration = "1s"\n'
        f"new_connection = {'true' if new_connection else 'false'}\n"
        '[[variants]]\nname = "a"\ntarget = "127.0.0.1:8080"\n' + extra
    )


def _histogram(scale: float) -> dict[str, object]:
    percentiles = {key: float(key) * scale for key in ("50", "90", "99", "99.9", "100")}
    return {"count": 10, "percentiles": percentiles}


def _summary(new_connection: bool) -> dict[str, object]:
    corrected = {"connect": _histogram(2e-6), "total": _histogram(1e-5)}
    uncorrected = {"connect": _histogram(1e-6), "total": _histogram(1e-5)}
    return {
        "format": "cutaway-load",
        "new_connection": new_connection,
        "requests": 10,
        "throughput": 5.0,
        "duration": 2.0,
        "errors": {"connect": 0},
        "latency": {"corrected": corrected, "uncorrected": uncorrected},
    }


def test_a_new_connection_per_request_judges_the_connect_percentiles() -> None:
    spec = parse_spec(_file(True), "connect.toml")
    metrics = {m.name: m for m in spec_metrics(spec)}
    assert all(name in metrics for name in CONNECT)
    assert {metrics[name].unit for name in CONNECT} == {"seconds"}
    assert {metrics[name].better for name in CONNECT} == {"lower"}


def test_keep_alive_connections_have_no_connect_metrics() -> None:
    spec = parse_spec(_file(False), "connect.toml")
    names = {m.name for m in spec_metrics(spec)}
    assert "throughput" in names and not names & set(CONNECT)


def test_the_connect_percentiles_are_the_tcp_connect_times_from_the_actual_send() -> None:
    """The uncorrected histogram: the connect itself, not the open loop's wait for a free
    connection (which the corrected latency_* metrics already count)."""
    values = summary_metrics(_summary(True))
    assert values["connect_p50"] == pytest.approx(50e-6)
    assert values["connect_p90"] == pytest.approx(90e-6)
    assert values["connect_p99"] == pytest.approx(99e-6)
    assert values["latency_p50"] == pytest.approx(500e-6)
    assert not set(summary_metrics(_summary(False))) & set(CONNECT)


def test_a_declared_metric_may_not_take_a_connect_metrics_name() -> None:
    declared = '[[metrics]]\nname = "connect_p90"\nsource = "command"\ncommand = "echo 1"\n'
    with pytest.raises(SpecError, match=r"connect_p90.*every load phase measures"):
        parse_spec(_file(True, declared), "connect.toml")
