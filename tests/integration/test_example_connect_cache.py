"""The connect-cache example (seed 004 on Linux) on the real kernel and daemons: Varnish and
nginx from Debian, new connections to Varnish with and without 2,000 TIME_WAIT sockets toward
it, perf system-wide, all in a private network namespace. Its short form (examples/connect-cache/
quick) judges the connect time regressed when the sockets are there, names a kernel function
among the profile's top attributed changes, and measures the structure's size; afterwards no
namespace, daemon or sysctl change of it is left."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cutaway.probes.load.generator import generator_path
from tests.daemons import daemon_directory

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "connect-cache"
CONTROL = EXAMPLE / "connect-ctl"
PROGRAMS = ("varnishd", "nginx", "perf", "ss", "ip")
# The functions of connect()'s search for a free port (net/ipv4/inet_hashtables.c) and its
# check of each port's TIME_WAIT socket (net/ipv4/tcp_ipv4.c).
CONNECT_PATH = ("__inet_hash_connect", "__inet_check_established", "tcp_twsk_unique")
SYSCTLS = ("net.ipv4.tcp_tw_reuse", "net.ipv4.ip_local_port_range")

pytestmark = pytest.mark.skipif(
    any(shutil.which(p) is None for p in PROGRAMS) or generator_path() is None or os.geteuid() != 0,
    reason="needs varnish, nginx (nginx-light), perf (linux-perf), iproute2, cw_load and root",
)


@pytest.fixture
def tmpdir() -> Iterator[Path]:
    with daemon_directory("cutaway-connect-test-") as path:
        yield path


def sysctls() -> list[str]:
    return [subprocess.check_output(["sysctl", "-n", name], text=True) for name in SYSCTLS]


def namespaces() -> set[str]:
    listed = subprocess.check_output(["ip", "netns", "list"], text=True).split("\n")
    return {line.split()[0] for line in listed if line.startswith("cutaway-connect-")}


def test_the_control_script_refuses_the_machines_own_network_namespace(tmpdir: Path) -> None:
    """Its narrow port range would be every program's there: nothing is started or changed."""
    before = sysctls()
    result = subprocess.run(
        [str(CONTROL), "start", str(tmpdir / "root"), "47480", "47490"],
        capture_output=True, text=True, timeout=30,
        env={k: v for k, v in os.environ.items() if k != "CONNECT_CTL_ANY_NAMESPACE"},
    )  # fmt: skip
    assert result.returncode == 1
    assert "private one" in result.stderr
    assert sysctls() == before and not (tmpdir / "root").exists()


@pytest.mark.slow
def test_the_short_form_judges_the_grown_structure_and_names_the_kernel(tmpdir: Path) -> None:
    before, namespaces_before = sysctls(), namespaces()
    result = subprocess.run(
        [str(EXAMPLE / "quick"), str(tmpdir / "r.json")],
        capture_output=True, text=True, timeout=400,
        env={**os.environ, "CUTAWAY": f"{sys.executable} -m cutaway", "NO_COLOR": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    document = json.loads((tmpdir / "r.json").read_text())
    grown = [c for c in document["comparisons"] if c["variant"] == "varnish/grown"]
    verdicts = {c["metric"]: c["verdict"] for c in grown}
    assert {c["baseline"] for c in grown} == {"varnish/purged"}
    connect = {verdicts.get(name) for name in ("connect_p50", "connect_p90", "connect_p99")}
    assert "regressed" in connect, verdicts
    # The system-wide profile holds the whole machine's noise: the connect path's kernel
    # functions are among the ten largest changes of on-CPU time by function, not all ahead.
    self_changes = sorted(
        (a for a in document["attribution"] if a["profile"] == "on-cpu" and a["kind"] == "self"),
        key=lambda a: -abs(a["delta"]),
    )
    top = {a["function"]: a["delta"] for a in self_changes[:10]}
    connect_path = {f"{name}_[k]" for name in CONNECT_PATH} & set(top)
    assert connect_path and all(top[name] > 0 for name in connect_path), top
    size = {
        s["variant"]: s["mean"] for s in document["summaries"] if s["metric"] == "time_wait_sockets"
    }
    assert size["varnish/grown"] >= 1500 > size["varnish/purged"]
    assert sysctls() == before and namespaces() == namespaces_before
