"""cw_load against a real nginx on 127.0.0.1: closed loop with keep-alive, the JSON summary
read back through read_summary, and the flags checked."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cutaway.probes.load.generator import (
    PHASES,
    GeneratorError,
    LoadSettings,
    generator_path,
    read_summary,
    run_generator,
)
from cutaway.probes.load.hdr import Histogram, merge_intervals, read_interval_log
from tests.load_servers import free_port, memcached_server, nginx_executable, nginx_server

pytestmark = pytest.mark.skipif(generator_path() is None, reason="cw_load not built")


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[str]:
    if nginx_executable() is None:
        pytest.skip("nginx not installed")
    with nginx_server(tmp_path / "nginx") as (target, _):
        yield target


def test_closed_loop_keep_alive_against_nginx(nginx: str) -> None:
    result = run_generator(
        LoadSettings(target=nginx, connections=4, duration=1.0, warmup=0.2), timeout=30
    )
    assert result.mode == "closed" and result.protocol == "http" and result.target == nginx
    assert result.requests > 100
    assert result.errors.total == 0
    assert result.throughput == pytest.approx(result.requests / result.duration)
    total = result.latency.uncorrected.total
    assert total.count == result.requests
    assert 0 < total.percentile(50) <= total.percentile(99) <= total.max < 1e9
    # keep-alive: only the first request of each connection connects
    assert result.latency.uncorrected.connect.percentile(50) == 0
    # closed loop: intended = actual send time
    assert result.latency.corrected.total == total
    assert result.generator.cpu_seconds > 0 and result.generator.threads == 1


def test_a_fixed_request_count_over_threads(nginx: str) -> None:
    result = run_generator(
        LoadSettings(target=nginx, connections=4, threads=2, requests=1000, path="/big.html"),
        timeout=60,
    )
    assert result.requests == 1000
    assert result.errors.total == 0
    assert result.generator.threads == 2


def test_status_errors_are_counted_and_nothing_measured_is_an_error(nginx: str) -> None:
    settings = LoadSettings(target=nginx, connections=2, requests=50, path="/missing")
    with pytest.raises(GeneratorError, match="status 50") as raised:
        run_generator(settings, timeout=30)
    assert raised.value.result is not None
    assert raised.value.result.errors.status == 50


def test_summary_on_stdout_is_the_contract(nginx: str) -> None:
    path = generator_path()
    assert path is not None
    done = subprocess.run(
        [path, "--target", nginx, "--connections", "2", "--requests", "20"],
        capture_output=True,
        timeout=30,
        check=True,
    )
    result = read_summary(done.stdout.decode())
    assert result.requests == 20


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--connections", "0", "--duration", "1"], "--connections"),
        (["--rate", "abc", "--duration", "1"], "--rate"),
        (["--duration", "1", "--requests", "5"], "--duration / --requests"),
        ([], "--duration / --requests"),
        (["--duration", "1", "--protocol", "gopher"], "--protocol"),
        (["--duration", "1", "--path", "no-slash"], "--path"),
        (["--duration", "1", "--bogus"], "--bogus"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(flags: list[str], named: str) -> None:
    path = generator_path()
    assert path is not None
    done = subprocess.run(
        [path, "--target", "127.0.0.1:9", *flags], capture_output=True, timeout=30
    )
    assert done.returncode == 2
    assert named in done.stderr.decode()


def test_bad_settings_are_refused_before_running() -> None:
    with pytest.raises(ValueError, match="duration / requests"):
        LoadSettings(target="127.0.0.1:1")
    with pytest.raises(ValueError, match="connections"):
        LoadSettings(target="127.0.0.1:1", duration=1, connections=0)


def test_a_refused_target_is_a_clear_error_with_the_summary() -> None:
    port = free_port()
    with pytest.raises(GeneratorError, match="Connection refused") as raised:
        run_generator(LoadSettings(target=f"127.0.0.1:{port}", duration=0.3), timeout=30)
    assert raised.value.result is not None
    assert raised.value.result.errors.connect > 0
    assert raised.value.result.requests == 0


def test_a_new_connection_per_request(nginx: str) -> None:
    result = run_generator(
        LoadSettings(target=nginx, connections=4, requests=300, new_connection=True), timeout=60
    )
    assert result.new_connection
    assert result.requests == 300 and result.errors.total == 0
    connect = result.latency.uncorrected.connect
    assert connect.count == 300 and connect.min > 0  # every request connected
    first_byte = result.latency.uncorrected.first_byte
    assert first_byte.percentile(50) > connect.percentile(50)


def test_open_loop_at_a_fixed_rate(nginx: str) -> None:
    result = run_generator(
        LoadSettings(target=nginx, connections=4, rate=500, duration=1.0, warmup=0.2),
        timeout=30,
    )
    assert result.mode == "open" and result.rate == 500
    assert result.requests == pytest.approx(500, abs=5)
    assert result.throughput == pytest.approx(500, rel=0.02)
    assert result.generator.sends == pytest.approx(500, abs=5)
    corrected, uncorrected = result.latency.corrected.total, result.latency.uncorrected.total
    # From the intended send time, never shorter than from the actual one.
    assert corrected.percentile(50) >= uncorrected.percentile(50)
    assert corrected.max >= uncorrected.max


def answer_to(target: str, request: bytes) -> bytes:
    """The server's whole answer to one request on a connection of its own, closed after it
    (HTTP: the request asks for the close; memcached: the answer ends at END)."""
    host, port = target.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        while not answer.endswith(b"END\r\n"):
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


def test_chunked_answers_are_read_to_their_end(nginx: str) -> None:
    # nginx's SSI module answers /chunked.shtml with chunked transfer encoding: the chunk
    # lines and the chunks' data (9 kB) both go through the generator's parser.
    head = answer_to(nginx, b"GET /chunked.shtml HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert b"\r\nTransfer-Encoding: chunked\r\n" in head.partition(b"\r\n\r\n")[0]
    result = run_generator(
        LoadSettings(target=nginx, connections=2, requests=50, path="/chunked.shtml"),
        timeout=30,
    )
    assert result.requests == 50 and result.errors.total == 0


def test_intervals_of_several_processes_merge_exactly(nginx: str, tmp_path: Path) -> None:
    path = generator_path()
    assert path is not None
    processes, logs = [], []
    for k in range(2):
        log = tmp_path / f"generator-{k}.hlog"
        settings = LoadSettings(
            target=nginx, connections=2, rate=300, duration=2.2, interval_log=log
        )
        processes.append(subprocess.Popen([path, *settings.argv()], stdout=subprocess.PIPE))
        logs.append(log)
    summaries = [read_summary(process.communicate(timeout=60)[0].decode()) for process in processes]
    intervals = [i for log in logs for i in read_interval_log(log.read_text(), source=str(log))]
    merged = merge_intervals(intervals)
    assert set(merged) == {
        f"{view}.{phase}" for view in ("corrected", "uncorrected") for phase in PHASES
    }
    for view in ("corrected", "uncorrected"):
        for phase in PHASES:
            expected = Histogram.merged(getattr(getattr(s.latency, view), phase) for s in summaries)
            assert merged[f"{view}.{phase}"] == expected
    # three intervals per process (two whole seconds and the rest), each started in order
    starts = sorted({round(i.start_seconds - intervals[0].start_seconds) for i in intervals})
    assert len([i for i in intervals if i.tag == "corrected.total"]) >= 6
    assert starts[:3] == [0, 1, 2]


def test_the_generators_encoding_is_hdrhistograms_byte_for_byte(nginx: str) -> None:
    path = generator_path()
    assert path is not None
    done = subprocess.run(
        [path, "--target", nginx, "--requests", "500", "--connections", "3"],
        capture_output=True,
        timeout=30,
        check=True,
    )
    summary = json.loads(done.stdout)
    for view in ("corrected", "uncorrected"):
        for phase in PHASES:
            entry = summary["latency"][view][phase]
            histogram = Histogram.decode(entry["hdr"])
            assert histogram.encode() == entry["hdr"]
            assert histogram.count == entry["count"]
            assert histogram.min / 1e9 == pytest.approx(entry["min"])
            assert histogram.max / 1e9 == pytest.approx(entry["max"])
            assert histogram.mean / 1e9 == pytest.approx(entry["mean"])
            assert histogram.stdev / 1e9 == pytest.approx(entry["stdev"])
            for key, value in entry["percentiles"].items():
                assert histogram.percentile_seconds(float(key)) == pytest.approx(value)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_generator_stopped_by_a_signal_writes_what_it_measured(
    nginx: str, tmp_path: Path, stop: signal.Signals
) -> None:
    path = generator_path()
    assert path is not None
    log = tmp_path / "intervals.hlog"
    settings = LoadSettings(target=nginx, connections=2, duration=60, interval_log=log)
    process = subprocess.Popen(
        [path, *settings.argv()], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        time.sleep(1.5)  # measured: a whole interval and half of the next one
        process.send_signal(stop)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 128 + stop
    assert f"interrupted by {stop.name}" in err.decode()
    result = read_summary(out.decode())
    assert result.interrupted
    assert 1.0 < result.duration < 30  # not the 60 s asked for
    assert result.requests > 0 and result.errors.total == 0
    assert result.throughput == pytest.approx(result.requests / result.duration)
    assert result.latency.corrected.total.count == result.requests
    # The interval log has its last, partial interval: every request measured is in it.
    intervals = read_interval_log(log.read_text(), source=str(log))
    assert merge_intervals(intervals)["corrected.total"] == result.latency.corrected.total
    assert len([i for i in intervals if i.tag == "corrected.total"]) >= 2


def test_an_uninterrupted_summary_says_so(nginx: str) -> None:
    result = run_generator(LoadSettings(target=nginx, connections=2, requests=20), timeout=30)
    assert result.interrupted is False


@pytest.fixture
def memcached() -> Iterator[str]:
    if shutil.which("memcached") is None:
        pytest.skip("memcached not installed")
    with memcached_server({"cutaway-key": b"v" * 1000}) as target:
        yield target


@pytest.mark.parametrize("new_connection", [False, True])
def test_memcached_gets(memcached: str, new_connection: bool) -> None:
    settings = LoadSettings(
        target=memcached,
        protocol="memcached",
        path="cutaway-key",
        connections=3,
        requests=400,
        new_connection=new_connection,
    )
    # A hit: each answer is a VALUE line, the value's 1,000 bytes and END.
    assert answer_to(memcached, b"get cutaway-key\r\n").startswith(b"VALUE cutaway-key 0 1000\r\n")
    result = run_generator(settings, timeout=60)
    assert result.protocol == "memcached"
    assert result.requests == 400 and result.errors.total == 0


def test_memcached_misses_are_answers_too(memcached: str) -> None:
    settings = LoadSettings(
        target=memcached, protocol="memcached", path="absent", connections=2, duration=0.5
    )
    result = run_generator(settings, timeout=30)
    assert result.requests > 10 and result.errors.total == 0
