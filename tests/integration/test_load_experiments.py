"""Server experiments end to end, through the `cutaway` command, against real Debian servers on
127.0.0.1 started by setup hooks and stopped by cleanup hooks: nginx over HTTP, memcached over
its text protocol. A throughput drop (nginx rate-limited by limit_req) is `regressed`; a server
that refuses connections, one that never answers, and one that dies mid-experiment each give a
clear error, never a hang or a fast-looking result; every daemon is stopped afterwards."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cutaway.metrics.process import alive
from cutaway.probes.load.generator import generator_path, read_summary
from cutaway.store import Store
from tests.cutaway_command import CUTAWAY, cutaway

pytestmark = pytest.mark.skipif(generator_path() is None, reason="cw_load not built")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
MEMCACHED = shutil.which("memcached") or "/usr/bin/memcached"
# Each test's whole run is bounded: a hang fails it instead of stalling the suite.
RUN_LIMIT_SECONDS = 120

NGINX_CONFIG = """\
{user}
worker_processes 1;
pid {root}/nginx-{port}.pid;
error_log {root}/error-{port}.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {root}/tmp; proxy_temp_path {root}/tmp; fastcgi_temp_path {root}/tmp;
  uwsgi_temp_path {root}/tmp; scgi_temp_path {root}/tmp;
  {limit_zone}
  server {{
    listen 127.0.0.1:{port};
    root {root}/html;
    location / {{ {limit} }}
  }}
}}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def nginx_variant(root: Path, name: str, *, limited: bool = False, extra: str = "") -> str:
    """A [[variants]] table whose setup starts its own nginx (a daemon, with a pid file)."""
    if not Path(NGINX).exists():
        pytest.skip("nginx not installed")
    port = free_port()
    # As root, nginx's workers would run as nobody, who cannot read the test's files.
    user = "user root;" if os.geteuid() == 0 else ""
    config = root / f"nginx-{port}.conf"
    config.write_text(
        NGINX_CONFIG.format(
            root=root,
            port=port,
            user=user,
            limit_zone="limit_req_zone $binary_remote_addr zone=slow:1m rate=300r/s;"
            if limited
            else "",
            limit="limit_req zone=slow burst=200;" if limited else "",
        )
    )
    pid = root / f"nginx-{port}.pid"
    return (
        textwrap.dedent(
            f"""\
        [[variants]]
        name = "{name}"
        target = "http://127.0.0.1:{port}/index.html"
        setup = "{NGINX} -c {config} -p {root}"
        cleanup = "kill $(cat {pid})"
        pid_file = "{pid}"
        """
        )
        + extra
    )


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "html").mkdir()
    (tmp_path / "tmp").mkdir()
    (tmp_path / "html" / "index.html").write_text("<html>hello</html>\n")
    yield tmp_path
    for pid in pids(tmp_path):  # whatever a failed test left: stop it
        if alive(pid):
            os.kill(pid, 15)


def pids(root: Path) -> list[int]:
    """The pids in root's pid files. A daemon that is stopping removes its file: one listed
    by the glob may be gone when read."""
    found = []
    for pid_file in root.glob("*.pid"):
        try:
            text = pid_file.read_text().strip()
        except FileNotFoundError:
            continue
        if text.isdigit():
            found.append(int(text))
    return found


def running_in(root: Path) -> list[int]:
    """Processes whose working directory is the test's (the daemons and their workers)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd") == str(root) and alive(int(entry)):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def assert_all_stopped(root: Path, before: list[int]) -> None:
    deadline = time.monotonic() + 5
    while (any(alive(pid) for pid in before) or running_in(root)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in before if alive(pid)], "a daemon outlived its experiment"
    assert not running_in(root), "a daemon's process outlived its experiment"


def experiment(root: Path, variants: str, load: str, rounds: int = 5) -> Path:
    path = root / "experiment.toml"
    path.write_text(
        f'name = "servers"\nrounds = {rounds}\nwarmup_rounds = 1\n\n[load]\n{load}\n\n{variants}'
    )
    return path


def test_a_rate_limited_nginx_is_a_throughput_regression(root: Path) -> None:
    variants = nginx_variant(root, "plain") + nginx_variant(root, "limited", limited=True)
    path = experiment(root, variants, 'connections = 4\nduration = "600ms"\nwarmup = "100ms"')
    started = [p for p in pids(root)]
    result = cutaway("run", str(path), "--db", "c.db", "--export-json", "r.json", cwd=root)
    assert result.returncode == 0, result.stderr
    document = json.loads((root / "r.json").read_text())
    verdicts = {c["metric"]: c for c in document["comparisons"]}
    assert verdicts["throughput"]["verdict"] == "regressed"
    assert verdicts["throughput"]["ratio"] < 0.5  # ~300 requests/s against thousands
    assert verdicts["latency_p50"]["ratio"] > 5  # requests queue behind the limit
    load = {entry["variant"]: entry for entry in document["load"]}
    assert set(load) == {"plain", "limited"}
    for entry in load.values():
        assert entry["requests"] > 100 and entry["errors"] == 0
        total = entry["latency"]["corrected"]["total"]
        assert 0 < total["p50"] <= total["p99"] <= total["max"]
    assert load["limited"]["throughput"] < 500 < load["plain"]["throughput"]
    # The server's process tree was sampled during each load phase.
    summaries = {(s["variant"], s["metric"]): s for s in document["summaries"]}
    assert summaries[("plain", "server_rss_peak")]["mean"] > 1_000_000
    assert summaries[("plain", "server_threads")]["mean"] >= 2  # master and worker
    assert "Connection Times" in result.stdout or "throughput" in result.stdout
    report = cutaway("report", "--db", "c.db", "--all-metrics", cwd=root)
    assert "Connection Times (µs) of plain" in report.stdout
    assert "Percentage of the requests of limited served within a certain time" in report.stdout
    assert_all_stopped(root, started + pids(root))


def test_memcached_over_its_text_protocol(root: Path) -> None:
    if not Path(MEMCACHED).exists():
        pytest.skip("memcached not installed")
    tables = ""
    for name in ("small", "large"):
        port = free_port()
        pid = root / f"memcached-{port}.pid"
        memory = 8 if name == "small" else 64
        user = "-u root" if os.geteuid() == 0 else ""
        tables += textwrap.dedent(
            f"""\
            [[variants]]
            name = "{name}"
            target = "127.0.0.1:{port}"
            setup = "{MEMCACHED} -d -l 127.0.0.1 -p {port} -U 0 -m {memory} -P {pid} {user}"
            cleanup = "kill $(cat {pid})"
            pid_file = "{pid}"
            """
        )
    path = experiment(
        root, tables, 'protocol = "memcached"\nconnections = 2\nrequests = 2000\nwarmup = 0', 3
    )
    result = cutaway("run", str(path), "--db", "c.db", "--export-json", "r.json", cwd=root)
    assert result.returncode == 0, result.stderr
    document = json.loads((root / "r.json").read_text())
    for entry in document["load"]:
        assert entry["protocol"] == "memcached" and entry["errors"] == 0
        assert entry["requests"] == 3 * 2000
    assert_all_stopped(root, pids(root))


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda s: s.pop("requests"), "load summary.requests: missing"),
        (lambda s: s.update(duration="long"), "load summary.duration: expected a number"),
        (lambda s: s["errors"].update(reset=None), "load summary.errors.reset"),
        (
            lambda s: s["generator"].update(saturated="no"),
            "load summary.generator.saturated: expected true or false",
        ),
    ],
)
def test_a_damaged_stored_summary_is_named_never_read_as_zero(
    root: Path, damage: Callable[[dict[str, Any]], object], named: str
) -> None:
    variants = nginx_variant(root, "a") + nginx_variant(root, "b")
    path = experiment(root, variants, 'connections = 2\nduration = "200ms"\nwarmup = 0', 2)
    started = pids(root)
    assert cutaway("run", str(path), "--db", "c.db", "-q", cwd=root).returncode == 0
    assert_all_stopped(root, started + pids(root))
    with sqlite3.connect(root / "c.db") as connection:  # a hand edit of one stored summary
        run_id, data = connection.execute(
            "SELECT d.run_id, d.data FROM run_data d JOIN runs r ON r.id = d.run_id"
            " WHERE d.kind = 'load' AND r.variant = 'b' AND r.round_index = 1"
        ).fetchone()
        summary = json.loads(data)
        damage(summary)
        connection.execute(
            "UPDATE run_data SET data = ? WHERE run_id = ? AND kind = 'load'",
            (json.dumps(summary).encode(), run_id),
        )
    connection.close()
    result = cutaway("report", "--db", "c.db", cwd=root)
    assert result.returncode == 2, result.stdout
    assert "experiment #1 in" in result.stderr and "is damaged: run_data.data:" in result.stderr
    assert f"'b' round 1: {named}" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_server_that_refuses_connections_is_named_before_the_first_round(root: Path) -> None:
    port = free_port()  # nothing listens there
    variants = f'[[variants]]\nname = "gone"\ntarget = "http://127.0.0.1:{port}/"\n'
    path = experiment(root, variants, 'duration = "1s"\nready_timeout = "1s"')
    started = time.monotonic()
    result = cutaway("run", str(path), "--db", "c.db", cwd=root)
    assert result.returncode != 0
    assert f"variant 'gone': nothing accepts connections on 127.0.0.1:{port}" in result.stderr
    assert time.monotonic() - started < RUN_LIMIT_SECONDS / 2


def test_a_server_that_never_answers_is_a_clear_failure_not_a_fast_result(root: Path) -> None:
    with socket.socket() as silent:  # accepts (in the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(128)
        port = silent.getsockname()[1]
        variants = f'[[variants]]\nname = "mute"\ntarget = "http://127.0.0.1:{port}/"\n'
        load = 'duration = "1s"\nwarmup = 0\ntimeout = "300ms"\nserver_metrics = false'
        path = experiment(root, variants, load)
        result = cutaway("run", str(path), "--db", "c.db", cwd=root)
    assert result.returncode != 0
    assert "variant 'mute' failed on its warmup run" in result.stderr
    assert "timeout" in result.stderr or "no request" in result.stderr


def test_a_server_that_dies_mid_experiment_stops_it_clearly(root: Path) -> None:
    # The variant's conclude hook kills its own nginx after its second load phase: the master
    # stopped first, so that it cannot start a new worker when its worker dies.
    killer = (
        'conclude = "if [ -f {marker} ]; then m=$(cat {pid}); kill -STOP $m; pkill -9 -P $m; '
        'kill -9 $m; else touch {marker}; fi"\n'
    )
    plain = nginx_variant(root, "plain")
    dying = nginx_variant(root, "dying")
    pid = next(line.split('"')[1] for line in dying.splitlines() if line.startswith("pid_file"))
    dying += killer.format(marker=root / "marker", pid=pid)
    path = experiment(root, plain + dying, 'connections = 2\nduration = "300ms"\nwarmup = 0')
    started = pids(root)
    result = cutaway("run", str(path), "--db", "c.db", cwd=root)
    assert result.returncode != 0
    assert "variant 'dying'" in result.stderr
    assert "server" in result.stderr and "is incomplete" in result.stderr
    assert_all_stopped(root, started + pids(root))


def test_quick_mode_against_a_running_nginx(root: Path) -> None:
    table = nginx_variant(root, "x")
    setup = next(line.split('"', 1)[1][:-1] for line in table.splitlines() if "setup" in line)
    url = next(line.split('"')[1] for line in table.splitlines() if "target" in line)
    subprocess.run(setup.split(), check=True, timeout=30)
    try:
        result = cutaway(
            "run", "-n", "old", "--url", url, "-n", "new", "--url", url, "--connections", "4",
            "--duration", "300ms", "--load-warmup", "0", "--rounds", "2", "--warmup", "0",
            "--db", "c.db", "--export-json", "r.json", cwd=root,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        document = json.loads((root / "r.json").read_text())
        assert [entry["variant"] for entry in document["load"]] == ["old", "new"]
    finally:
        for pid in pids(root):
            os.kill(pid, 15)


def test_ctrl_c_during_a_load_phase_stops_the_generator_and_every_server(root: Path) -> None:
    variants = nginx_variant(root, "a") + nginx_variant(root, "b")
    path = experiment(root, variants, 'connections = 2\nduration = "5s"\nwarmup = 0', rounds=3)
    process = subprocess.Popen(
        [*CUTAWAY, "run", str(path), "--db", "c.db"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not generators_against(root):
            time.sleep(0.05)
        assert generators_against(root), "no load phase started"
        started = pids(root)
        time.sleep(1.0)  # a second of the phase's five is measured
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130
    assert "incomplete" in stderr
    assert not generators_against(root)
    assert_all_stopped(root, started)
    # The generator wrote the summary of what it measured: kept with the run, as interrupted,
    # which no figure counts and a resumed experiment runs again.
    assert "is stored with what it measured, as interrupted" in stderr
    with sqlite3.connect(root / "c.db") as connection:
        rows = connection.execute(
            "SELECT r.status, r.exit_code, d.data FROM runs r"
            " JOIN run_data d ON d.run_id = r.id AND d.kind = 'load'"
        ).fetchall()
    connection.close()
    assert [(status, code) for status, code, _ in rows] == [("interrupted", 130)]
    summary = read_summary(rows[0][2].decode())
    assert summary.interrupted and summary.requests > 0 and summary.errors.total == 0
    assert 0.5 < summary.duration < 4.5  # interrupted after about one second of five
    with Store(root / "c.db", create=False) as store:
        assert store.completed_slots(1) == set()
        assert store.run_data(1, "load") == []


def generators_against(root: Path) -> list[int]:
    """cw_load processes whose target is one of the test's nginx ports."""
    ports = {p.stem.split("-")[1] for p in root.glob("nginx-*.conf")}
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                words = file.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if (
            words
            and words[0].endswith("cw_load")
            and any(f":{p}" in " ".join(words) for p in ports)
            and alive(int(entry))
        ):
            found.append(int(entry))
    return found
