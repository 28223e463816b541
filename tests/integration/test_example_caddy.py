"""The caddy example: two released Caddy builds as reverse proxies in front of
nginx, every run a load phase by cw_load, profiled system-wide. Its short form
(examples/caddy/quick) exports a JSON report with two variants of different versions of the same
server and an attribution over Caddy's functions with intervals and shares; afterwards no
daemon it started still runs and none of its ports still listens."""

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
from tests.daemons import any_listening, daemon_directory

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "caddy"
PORTS = (47480, 47481, 47490, 47491)
RELEASES = ("v2.7.6", "v2.10.2")


def cached(version: str) -> bool:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return (cache / "cutaway-examples" / "caddy" / version / "caddy").is_file()


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        any(shutil.which(p) is None for p in ("nginx", "perf"))
        or generator_path() is None
        or os.geteuid() != 0,
        reason="needs nginx (nginx-light), perf (linux-perf), cw_load and root",
    ),
    pytest.mark.skipif(
        shutil.which("go") is None and not all(cached(v) for v in RELEASES),
        reason="needs Go to build Caddy's releases (or them built: examples/caddy/caddy-ctl build)",
    ),
]


@pytest.fixture
def tmpdir() -> Iterator[Path]:
    with daemon_directory("cutaway-caddy-test-") as path:
        yield path


def test_the_quick_form_attributes_the_difference_between_two_releases(tmpdir: Path) -> None:
    if any_listening(PORTS):
        pytest.skip("a port of the example is taken (another run of it?)")
    out = tmpdir / "caddy.json"
    result = subprocess.run(
        [str(EXAMPLE / "quick"), str(out)],
        capture_output=True, text=True, timeout=1800,  # the first call builds both releases
        env={**os.environ, "TMPDIR": str(tmpdir), "NO_COLOR": "1",
             "CUTAWAY": f"{sys.executable} -m cutaway"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    document = json.loads(out.read_text())

    [experiment] = document["experiments"]
    assert experiment["variants"] == ["old", "new"]
    assert experiment["versions"] == {"old": RELEASES[0], "new": RELEASES[1]}
    verdicts = {c["metric"]: c["verdict"] for c in document["comparisons"]}
    assert {"throughput", "latency_p50", "latency_p99", "cpu_per_request"} <= set(verdicts)

    on_cpu_self = [
        entry
        for entry in document["attribution"]
        if entry["profile"] == "on-cpu" and entry["kind"] == "self" and entry["variant"] == "new"
    ]
    assert len(on_cpu_self) >= 20
    for entry in on_cpu_self:
        assert entry["ci_low"] is not None and entry["ci_high"] is not None
        assert entry["ci_low"] <= entry["delta"] <= entry["ci_high"]
        assert entry["share"] is not None
    # Narrowed to Caddy's process: Go's runtime is there, the Python interpreter running
    # cutaway beside it on the same machine is not.
    functions = {entry["function"] for entry in document["attribution"]}
    assert any(name.startswith("runtime.") for name in functions)
    assert not any(name.startswith("_PyEval") for name in functions)
    [total] = [
        t
        for t in document["attribution_totals"]
        if t["profile"] == "on-cpu" and t["variant"] == "new"
    ]
    assert total["functions"] >= 20 and total["profile_delta"] is not None
    # The shares are of the judged change of Caddy's CPU (server_cpu in the timed runs), the
    # denominator named beside them, not of the profiles' own total.
    assert total["measured_metric"] == "server_cpu" and total["measured_delta"] is not None
    curve = [p for p in document["attribution_curve"] if p["profile"] == "on-cpu"]
    assert [p["functions"] for p in curve][:3] == [1, 2, 3]
    explained = {p["functions"]: p["share"] for p in curve}
    for largest in (1, 5, 20, total["functions"]):
        assert explained[largest] is not None
    assert curve[-1]["cumulative_delta"] == pytest.approx(total["profile_delta"])

    assert not any_listening(PORTS)
    assert not list(tmpdir.glob("cutaway-caddy-old")) and not list(tmpdir.glob("cutaway-caddy-new"))
