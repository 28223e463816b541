"""The varnish example on the real daemons: Varnish and nginx from Debian
started by its setup hooks, every run a load phase by cw_load. A short run completes with a
throughput verdict and the servers' threads; afterwards no daemon it started still runs and
none of its ports still listens, and its directories are gone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cutaway.probes.load.generator import generator_path
from tests.cutaway_command import CUTAWAY
from tests.daemons import any_listening, daemon_directory

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "varnish"
PORTS = (47380, 47381, 47390, 47391)

pytestmark = pytest.mark.skipif(
    any(shutil.which(p) is None for p in ("varnishd", "nginx")) or generator_path() is None,
    reason="needs varnish, nginx (nginx-light) and cw_load",
)


@pytest.fixture
def tmpdir() -> Iterator[Path]:
    with daemon_directory("cutaway-varnish-test-") as path:
        yield path


def test_a_short_run_compares_the_pools_and_stops_every_daemon(tmpdir: Path) -> None:
    if any_listening(PORTS):
        pytest.skip("a port of the example is taken (another run of it?)")
    result = subprocess.run(
        [*CUTAWAY, "run", str(EXAMPLE / "experiment.toml"), "--rounds", "2", "--warmup", "0",
         "--db", str(tmpdir / "c.db"), "--export-json", str(tmpdir / "r.json")],
        capture_output=True, text=True, timeout=240,
        env={**os.environ, "TMPDIR": str(tmpdir), "NO_COLOR": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads((tmpdir / "r.json").read_text())
    verdicts = {c["metric"]: c["verdict"] for c in document["comparisons"]}
    assert {"throughput", "latency_p99", "server_threads", "server_rss_peak"} <= set(verdicts)
    threads = {
        s["variant"]: s["mean"] for s in document["summaries"] if s["metric"] == "server_threads"
    }
    assert threads["default"] > 100 > threads["small"]  # 2 pools of 100 against 1 pool of 5
    assert {entry["variant"] for entry in document["load"]} == {"default", "small"}
    assert not any_listening(PORTS)
    assert not list(tmpdir.glob("cutaway-varnish-*"))
