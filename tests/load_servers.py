"""Servers on 127.0.0.1 for the load generator's tests and benchmarks, each a context manager
that yields its "127.0.0.1:PORT" and stops it on the way out, also on failure: a private nginx
(Debian's), a memcached, and a small Python server that misbehaves on purpose."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
    location ~ \\.shtml$ {{ ssi on; ssi_types *; }}
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


def stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 10 s; a stopped (SIGSTOP) server is continued first."""
    if server.poll() is not None:
        return
    server.send_signal(signal.SIGCONT)
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def nginx_executable() -> str | None:
    found = shutil.which("nginx")
    return found or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


@contextmanager
def nginx_server(root: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """nginx with one worker serving root/html: index.html (19 bytes), big.html (200 kB) and
    chunked.shtml (answered with chunked transfer encoding by the SSI module)."""
    executable = nginx_executable()
    if executable is None:
        raise FileNotFoundError("nginx is not installed")
    (root / "html").mkdir(parents=True, exist_ok=True)
    (root / "tmp").mkdir(exist_ok=True)
    (root / "html" / "index.html").write_text("<html>hello</html>\n")
    (root / "html" / "big.html").write_text("x" * 200_000)
    (root / "html" / "chunked.shtml").write_text('a<!--# echo var="date_local" -->' + "b" * 9000)
    port = free_port()
    config = root / "nginx.conf"
    # As root, nginx's workers would run as nobody, who cannot read private files.
    user = "user root;" if os.geteuid() == 0 else ""
    config.write_text(NGINX_CONFIG.format(root=root, port=port, user=user))
    server = subprocess.Popen(
        [executable, "-c", str(config), "-p", str(root), "-e", str(root / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        yield f"127.0.0.1:{port}", server
    finally:
        stop(server)


@contextmanager
def memcached_server(values: dict[str, bytes]) -> Iterator[str]:
    """memcached (one thread, 16 MB, TCP only) holding these values."""
    executable = shutil.which("memcached") or "/usr/bin/memcached"
    if not Path(executable).exists():
        raise FileNotFoundError("memcached is not installed")
    port = free_port()
    args = [executable, "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "16", "-t", "1"]
    if os.geteuid() == 0:
        args += ["-u", "root"]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            for key, value in values.items():
                client.sendall(f"set {key} 0 0 {len(value)}\r\n".encode() + value + b"\r\n")
                if client.recv(100) != b"STORED\r\n":
                    raise RuntimeError(f"memcached did not store {key!r}")
        yield f"127.0.0.1:{port}"
    finally:
        stop(server)


# One selector loop, one thread: a stall stalls every connection, as a stopped server would.
SERVER = r"""
import selectors, socket, struct, sys, time
mode = sys.argv[1]
stall_at, stall_for = float(sys.argv[2]), float(sys.argv[3])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(512)
listener.setblocking(False)
print(listener.getsockname()[1], flush=True)
selector = selectors.DefaultSelector()
selector.register(listener, selectors.EVENT_READ)
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
first_request = None
stalled = False
buffers = {}
while True:
    for key, _ in selector.select(timeout=0.5):
        if key.fileobj is listener:
            try:
                client, _ = listener.accept()
            except BlockingIOError:
                continue
            if mode == "reset":
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()
                continue
            client.setblocking(False)
            buffers[client] = b""
            selector.register(client, selectors.EVENT_READ)
            continue
        client = key.fileobj
        try:
            data = client.recv(65536)
        except ConnectionError:
            data = b""
        if not data:
            selector.unregister(client)
            buffers.pop(client, None)
            client.close()
            continue
        buffers[client] += data
        while b"\r\n\r\n" in buffers[client]:
            _, _, buffers[client] = buffers[client].partition(b"\r\n\r\n")
            now = time.monotonic()
            if first_request is None:
                first_request = now
            if mode == "silent":
                continue
            if mode == "slow":
                time.sleep(stall_for)
            if mode == "stall" and not stalled and now - first_request >= stall_at:
                stalled = True
                time.sleep(stall_for)
            if mode == "garbage":
                client.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
            elif mode == "truncated":
                client.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
                client.close()
            elif mode == "to-eof":
                client.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close")
                client.close()
            elif mode == "close-idle":
                client.sendall(OK)  # no Connection: close, and closes anyway, as an idle timeout
                client.shutdown(socket.SHUT_RDWR)
            else:
                client.sendall(OK)
        if client.fileno() < 0 or mode in ("truncated", "close-idle", "to-eof"):
            try:
                selector.unregister(client)
            except (KeyError, ValueError):
                pass
            buffers.pop(client, None)
            client.close()
"""


MODES = ("ok", "reset", "garbage", "truncated", "silent", "close-idle", "to-eof", "stall", "slow")


@contextmanager
def misbehaving_server(
    mode: str, stall_at: float = 0.0, stall_for: float = 0.0
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A one-thread HTTP server: "ok" answers 5 bytes; "reset" resets every connection;
    "garbage" answers something else than HTTP; "truncated" closes mid-body; "silent" never
    answers; "to-eof" answers HTTP/1.0 without a length and closes; "close-idle" closes after
    each answer without saying so; "stall" stops answering for stall_for seconds stall_at
    seconds after its first request; "slow" takes stall_for seconds over each request, one at
    a time."""
    if mode not in MODES:
        raise ValueError(f"mode: one of {MODES}")
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, mode, str(stall_at), str(stall_for)],
        stdout=subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        yield f"127.0.0.1:{port}", server
    finally:
        stop(server)
