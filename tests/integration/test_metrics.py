"""Declared metrics with real programs: ab against a local HTTP server, commands, file sizes, a
server process found by pid file, name or port and sampled from /proc, time series, and the
failures that name their metric. Every server binds 127.0.0.1 and every load is bounded."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cutaway.compare import analyze
from cutaway.metrics.process import ProcessNotFound, find_process, pid_from_file
from cutaway.metrics.series import render_series_csv
from cutaway.model import RunStatus, Spec
from cutaway.report.json_format import report_document
from cutaway.runner.runner import RunnerError, run_experiment
from cutaway.spec import parse_spec
from cutaway.store import Store
from tests.cutaway_command import CUTAWAY, cutaway


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    """(port, pid) of `python3 -m http.server` on 127.0.0.1, serving a small index.html."""
    root = tmp_path_factory.mktemp("www")
    (root / "index.html").write_text("hello\n")
    port = free_port()
    command = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    server = subprocess.Popen(
        command, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield port, server.pid
    finally:
        server.terminate()
        server.wait(timeout=10)


def run(spec: Spec, tmp_path: Path) -> tuple[Store, int]:
    store = Store(tmp_path / "cutaway.db")
    outcome = run_experiment(spec, store, environment={})
    return store, outcome.experiment_id


def spec(body: str) -> Spec:
    return parse_spec('name = "m"\nrounds = 3\nwarmup_rounds = 0\n' + textwrap.dedent(body))


@pytest.mark.skipif(shutil.which("ab") is None, reason="needs ab (apt-get install apache2-utils)")
def test_cutaway_run_compares_ab_requests_per_second_higher_is_better(
    http_server: tuple[int, int], tmp_path: Path
) -> None:
    port, _ = http_server
    url = f"http://127.0.0.1:{port}/index.html"
    (tmp_path / "ab.toml").write_text(
        textwrap.dedent(
            f"""
            name = "ab"
            rounds = 3
            warmup_rounds = 0
            [[variants]]
            name = "c4"
            command = "ab -n 200 -c 4 {url}"
            [[variants]]
            name = "c2"
            command = "ab -n 200 -c 2 {url}"
            [[metrics]]
            name = "rps"
            source = "output"
            parser = "ab"
            field = "requests_per_second"
            [[metrics]]
            name = "rps_regex"
            source = "output"
            pattern = 'Requests per second: +(?P<value>[0-9.]+)'
            better = "higher"
            unit = "requests/s"
            """
        )
    )
    result = subprocess.run(
        [*CUTAWAY, "run", "ab.toml", "--db", "c.db"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert "rps" in result.stdout
    store = Store(tmp_path / "c.db")
    analysis = analyze(store, store.resolve("latest"), resamples=200)
    metric = analysis.metric("rps")
    assert metric is not None and (metric.better, metric.unit) == ("higher", "requests/s")
    rps = {s.variant: s for s in analysis.summaries if s.metric == "rps"}
    assert rps["c4"].n == 3 and rps["c4"].min > 0
    regex = {s.variant: s.mean for s in analysis.summaries if s.metric == "rps_regex"}
    assert regex == {name: summary.mean for name, summary in rps.items()}
    assert [c.variant for c in analysis.comparisons if c.metric == "rps"] == ["c2"]
    assert all(run.ok for run in store.runs(store.resolve("latest")))


def test_output_that_does_not_match_fails_the_run_naming_the_metric(tmp_path: Path) -> None:
    store = Store(tmp_path / "cutaway.db")
    unmatched = spec(
        """
        command = ["echo", "hello"]
        [[metrics]]
        name = "rps"
        source = "output"
        pattern = 'rps=(?P<value>[0-9.]+)'
        """
    )
    # The first run fails, so the experiment stops there, saying why.
    with pytest.raises(RunnerError, match="metric 'rps': the output does not match") as raised:
        run_experiment(unmatched, store, environment={})
    assert "it ended: hello" in str(raised.value)
    (stored,) = store.runs(store.resolve("latest"))
    assert stored.status is RunStatus.FAILED
    assert "rps" not in stored.metrics  # never a zero


def test_a_command_after_each_run(tmp_path: Path) -> None:
    store, experiment = run(
        spec(
            """
            command = "true"
            [[metrics]]
            name = "answer"
            source = "command"
            command = "echo $((40 + 2))"
            """
        ),
        tmp_path,
    )
    runs = store.runs(experiment)
    assert [r.metrics["answer"] for r in runs] == [42.0] * 3
    assert all(r.status is RunStatus.OK for r in runs)


def test_a_command_that_prints_no_number_fails_the_run_naming_the_metric(tmp_path: Path) -> None:
    words = spec(
        """
        command = "true"
        [[metrics]]
        name = "words"
        source = "command"
        command = "echo no number"
        """
    )
    store = Store(tmp_path / "cutaway.db")
    expected = "metric 'words': `echo no number` printed 'no number', not a number"
    with pytest.raises(RunnerError, match=expected):
        run_experiment(words, store, environment={})
    (stored,) = store.runs(store.resolve("latest"))
    assert stored.status is RunStatus.FAILED and "words" not in stored.metrics


def test_a_command_that_prints_more_than_a_mib_fails_clearly(tmp_path: Path) -> None:
    """A number is short: what a command prints past 1 MiB is neither kept nor parsed, and the
    run fails saying so (its output went to a temporary file, read whole into memory)."""
    noisy = spec(
        """
        command = "true"
        [[metrics]]
        name = "noisy"
        source = "command"
        command = "yes x | head -c 2097152; echo 42"
        """
    )
    store = Store(tmp_path / "cutaway.db")
    with pytest.raises(RunnerError) as raised:
        run_experiment(noisy, store, environment={})
    message = str(raised.value)
    assert "metric 'noisy': `yes x | head -c 2097152; echo 42` printed more than 1 MiB" in message
    assert "(2097155 bytes), not one number; it ended: ...x x x" in message
    assert message.endswith("x x 42")
    (stored,) = store.runs(store.resolve("latest"))
    assert stored.status is RunStatus.FAILED and "noisy" not in stored.metrics


@pytest.mark.parametrize("printed", ["nan", "inf"])
def test_a_command_that_prints_no_finite_number_fails_the_run(printed: str, tmp_path: Path) -> None:
    """Found by tests/fuzz: "nan" was taken as a value, which the store cannot hold (a NaN is
    NULL to SQLite), and the experiment ended in a store error."""
    words = spec(
        f"""
        command = "true"
        [[metrics]]
        name = "words"
        source = "command"
        command = "echo {printed}"
        """
    )
    store = Store(tmp_path / "cutaway.db")
    expected = f"metric 'words': `echo {printed}` printed '{printed}', not a finite number"
    with pytest.raises(RunnerError, match=expected):
        run_experiment(words, store, environment={})
    (stored,) = store.runs(store.resolve("latest"))
    assert stored.status is RunStatus.FAILED and "words" not in stored.metrics


@pytest.mark.parametrize("text", ["²", "١٢"])
def test_a_pid_file_of_other_digits_names_no_process(text: str, tmp_path: Path) -> None:
    """Found by tests/fuzz: str.isdigit() accepts "²", which int() refuses (ValueError)."""
    path = tmp_path / "server.pid"
    path.write_text(text)
    with pytest.raises(ProcessNotFound, match="not a process id"):
        pid_from_file(str(path))


def test_a_directory_size_after_each_run_and_its_series(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    store, experiment = run(
        spec(
            f"""
            command = "head -c 1000 /dev/zero >> {data}/f; sleep 0.1"
            shell = true
            [[metrics]]
            name = "db"
            source = "file"
            path = "{data}"
            series = true
            interval = "10ms"
            """
        ),
        tmp_path,
    )
    runs = store.runs(experiment)
    assert [r.metrics["db"] for r in runs] == [1000.0, 2000.0, 3000.0]
    analysis = analyze(store, experiment, resamples=100)
    assert analysis.metric("db") is not None and analysis.metric("db").unit == "bytes"  # type: ignore[union-attr]
    series = report_document(analysis)["series"]  # the JSON report's series section
    assert isinstance(series, list)
    assert [s["round"] for s in series] == [0, 1, 2]  # type: ignore[index]
    assert series[1]["values"][0] == 1000.0 and series[1]["values"][-1] == 2000.0  # type: ignore[index]
    csv_lines = render_series_csv(store, experiment).splitlines()
    assert csv_lines[0] == "experiment,variant,round,metric,unit,t_seconds,value"
    assert len(csv_lines) > 1 + 3 * 2 and csv_lines[1].startswith(f"{experiment},m,0,db,bytes,")


DAEMON = (
    "import os, sys, time\n"
    "ballast = bytearray(b'x') * (40 * 2**20)\n"  # written: resident
    "end = time.process_time() + 0.3\n"
    "while time.process_time() < end: pass\n"  # CPU used before any run: not counted
    "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
    "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "time.sleep(60)\n"
)


def test_a_server_found_by_pid_file_is_sampled_during_each_run(tmp_path: Path) -> None:
    (tmp_path / "daemon.py").write_text(DAEMON)
    pid_file = tmp_path / "server.pid"
    setup = (
        f"{sys.executable} {tmp_path}/daemon.py {pid_file} >/dev/null 2>&1 &"
        f" for i in $(seq 100); do [ -s {pid_file} ] && break; sleep 0.1; done"
    )
    store, experiment = run(
        spec(
            f"""
            [[variants]]
            name = "v"
            command = "sleep 0.2"
            setup = "{setup}"
            cleanup = "kill $(cat {pid_file})"
            [[metrics]]
            name = "server_rss"
            source = "process"
            pid_file = "{pid_file}"
            stat = "rss"
            series = true
            interval = "20ms"
            [[metrics]]
            name = "server_cpu"
            source = "process"
            pid_file = "{pid_file}"
            stat = "cpu"
            [[metrics]]
            name = "server_threads"
            source = "process"
            pid_file = "{pid_file}"
            stat = "threads"
            [[metrics]]
            name = "server_fds"
            source = "process"
            pid_file = "{pid_file}"
            stat = "fds"
            """
        ),
        tmp_path,
    )
    runs = store.runs(experiment)
    assert all(r.ok for r in runs), [r.message for r in runs]
    for r in runs:
        assert r.metrics["server_rss"] > 40 * 2**20
        assert 0 <= r.metrics["server_cpu"] < 0.25  # the delta, not the 0.3 s spent before
        assert r.metrics["server_threads"] == 1
        assert r.metrics["server_fds"] >= 3
    series = report_document(analyze(store, experiment, resamples=100))["series"]
    assert isinstance(series, list)
    assert {s["metric"] for s in series} == {"server_rss"}  # type: ignore[index]
    assert all(len(s["values"]) >= 3 for s in series)  # type: ignore[arg-type]
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # the cleanup hook killed it (the zombie is init's to reap)
    assert not Path(f"/proc/{pid}/stat").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_a_missing_pid_file_stops_before_the_first_run(tmp_path: Path) -> None:
    experiment_file = tmp_path / "e.toml"
    experiment_file.write_text(
        textwrap.dedent(
            f"""
            name = "m"
            command = "true"
            [[metrics]]
            name = "srv"
            source = "process"
            pid_file = "{tmp_path}/none.pid"
            stat = "rss"
            """
        )
    )
    with pytest.raises(
        RunnerError, match=r"metric 'srv' of variant 'm': pid file .* does not exist"
    ):
        run(parse_spec(experiment_file.read_text()), tmp_path)
    result = subprocess.run(
        [*CUTAWAY, "run", str(experiment_file), "--db", str(tmp_path / "c.db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "metric 'srv'" in result.stderr and "none.pid does not exist" in result.stderr


def test_a_server_found_by_port_and_by_name(http_server: tuple[int, int], tmp_path: Path) -> None:
    port, pid = http_server
    assert find_process(port=port) == pid
    with pytest.raises(ProcessNotFound, match="nothing listens on TCP port"):
        find_process(port=free_port())
    store, experiment = run(
        spec(
            f"""
            command = "true"
            [[metrics]]
            name = "server_rss"
            source = "process"
            port = {port}
            stat = "rss"
            """
        ),
        tmp_path,
    )
    assert all(r.ok and r.metrics["server_rss"] > 2**20 for r in store.runs(experiment))
    (tmp_path / "cwsleeper").symlink_to(shutil.which("sleep") or "/bin/sleep")
    sleeper = subprocess.Popen([str(tmp_path / "cwsleeper"), "30"])
    try:
        # On a loaded machine the new process may not show its name in /proc at once.
        deadline = time.monotonic() + 5
        while True:
            try:
                found = find_process(name="cwsleeper")
                break
            except ProcessNotFound:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        assert found == sleeper.pid
    finally:
        sleeper.kill()
        sleeper.wait()
    with pytest.raises(ProcessNotFound, match="no process named 'cwsleeper'"):
        find_process(name="cwsleeper")


def test_series_reach_the_csv_export_and_the_json_report(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "e.toml").write_text(
        textwrap.dedent(f"""\
        name = "grows"
        rounds = 2
        warmup_rounds = 0
        command = "sh -c 'head -c 500 /dev/zero >> {data}/f; sleep 0.1'"
        [[metrics]]
        name = "db"
        source = "file"
        path = "{data}"
        series = true
        interval = "10ms"
        """)
    )
    cutaway("run", "e.toml", "-q", cwd=tmp_path, check=True)
    exported = cutaway(
        "export", "--format", "series-csv", cwd=tmp_path, check=True
    ).stdout.splitlines()
    assert exported[0] == "experiment,variant,round,metric,unit,t_seconds,value"
    assert {line.split(",")[2] for line in exported[1:]} == {"0", "1"}
    report = cutaway("export", "--format", "json", cwd=tmp_path, check=True).stdout
    assert [s["round"] for s in json.loads(report)["series"]] == [0, 1]
