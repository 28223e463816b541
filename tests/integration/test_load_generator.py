"""cw_load against a real nginx on 127.0.0.1: closed loop with keep-alive, the JSON summary
read back through read_summary, and the flags checked."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cutaway.probes.load.generator import (
    GeneratorError,
    LoadSettings,
    generator_path,
    read_summary,
    run_generator,
)

pytestmark = pytest.mark.skipif(generator_path() is None, reason="cw_load not built")

NGINX_CONFIG = """
{user}
worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {root}/tmp; proxy_temp_path {root}/tmp; fastcgi_temp_path {root}/tmp;
  uwsgi_temp_path {root}/tmp; scgi_temp_path {root}/tmp;
  server {{
    listen 127.0.0.1:{port};
    root {root}/html;
    location /chunked {{ gzip on; gzip_min_length 1; gzip_types text/plain; }}
  }}
}}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[str]:
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx not installed")
    root = tmp_path / "nginx"
    (root / "html").mkdir(parents=True)
    (root / "tmp").mkdir()
    (root / "html" / "index.html").write_text("<html>hello</html>\n")
    (root / "html" / "big.html").write_text("x" * 200_000)
    port = free_port()
    config = root / "nginx.conf"
    # As root, nginx's workers would run as nobody, who cannot read the test's private files.
    user = "user root;" if os.geteuid() == 0 else ""
    config.write_text(NGINX_CONFIG.format(root=root, port=port, user=user))
    executable = shutil.which("nginx") or "/usr/sbin/nginx"
    server = subprocess.Popen(
        [executable, "-c", str(config), "-p", str(root), "-e", str(root / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


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
