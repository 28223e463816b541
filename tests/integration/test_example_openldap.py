"""The openldap example on the real daemon: slapd from Debian with a
private configuration on 127.0.0.1, dissected by uprobes. A short run completes with the phases
of a search in both conditions; afterwards, and after an interruption, no slapd it started still
runs, none of its ports listens and its directories are gone. Bounded in time."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cutaway.probes.base import ProbeError
from cutaway.probes.uprobes.targets import check_system
from tests.cutaway_command import CUTAWAY
from tests.daemons import daemons_mentioning, listening_ports

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openldap"
CONTROL = EXAMPLE / "slapd-ctl"
PORTS = {13891, 13892}


def _why_not() -> str | None:
    if shutil.which("slapd") is None and not Path("/usr/sbin/slapd").exists():
        return "needs slapd and ldap-utils (Debian)"
    if shutil.which("ldapsearch") is None:
        return "needs ldap-utils (Debian)"
    try:
        check_system()
    except ProbeError as error:
        return f"uprobes impossible here: {error}"
    return None


REASON = _why_not()
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))


@pytest.fixture
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cutaway-openldap-test-", dir="/tmp"))
    yield path
    for variant in path.glob("cutaway-openldap-*"):  # never leave a slapd behind
        subprocess.run([str(CONTROL), "stop", str(variant)], check=False, timeout=30)
    shutil.rmtree(path, ignore_errors=True)


def slapds_mentioning(text: str) -> list[str]:
    return daemons_mentioning(text, ("slapd",))


def assert_nothing_left(root: Path) -> None:
    deadline = time.monotonic() + 10
    while slapds_mentioning(str(root)) and time.monotonic() < deadline:
        time.sleep(0.1)  # a SIGKILLed slapd may take a moment to go
    assert slapds_mentioning(str(root)) == []
    assert PORTS & listening_ports() == set()
    assert list(root.glob("cutaway-openldap-*")) == []


def cutaway(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CUTAWAY, "run", str(EXAMPLE / "experiment.toml"), "--db", str(root / "db"), *args],
        cwd=root,
        env={**os.environ, "NO_COLOR": "1", "TMPDIR": str(root)},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.skipif(bool(PORTS & listening_ports()), reason="the example's ports are taken")
def test_a_short_run_dissects_the_search_and_leaves_nothing_running(root: Path) -> None:
    process = cutaway(root, "--rounds", "2", "--warmup", "0")
    try:
        stdout, stderr = process.communicate(timeout=240)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    assert_nothing_left(root)
    assert "condition warm" in stdout and "condition cold" in stdout
    assert "phases from spans: uprobes" in stdout
    for phase in ("do_search", "mdb_search", "mdb_filter_candidates", "unaccounted"):
        assert phase in stdout
    assert "uprobes, first after start" in stdout  # the cold runs' restarted servers
    assert "no-index/cold vs no-index/warm" in stdout


@pytest.mark.skipif(bool(PORTS & listening_ports()), reason="the example's ports are taken")
def test_every_phase_by_its_place_gets_a_verdict_and_calls_are_counted(root: Path) -> None:
    """Seed 001's main finding is mdb_search's unaccounted rest (the loop over candidates):
    it, and every other row, has a verdict of its own; --uprobes adds test_filter to the
    file's probes, and its calls per search are counted (one per candidate)."""
    report = root / "report.json"
    process = cutaway(
        root, "--rounds", "2", "--warmup", "0", "--export-json", str(report),
        "--uprobes", "/usr/sbin/slapd:test_filter",
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=400)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    assert_nothing_left(root)
    document = json.loads(report.read_text())
    rows = [row for row in document["phases"] if row["source"] == "uprobes"]
    compared = {(c["variant"], c["metric"]) for c in document["phase_comparisons"]}
    loop = "phase:do_search/mdb_search/unaccounted"
    assert ("no-index/cold", loop) in compared and ("cn-index/warm", loop) in compared
    for row in rows:  # every row of the dissection, unaccounted rests included
        if row["variant"] != "no-index/warm":
            assert (row["variant"], row["metric"]) in compared, row["key"]
    metrics = [c["metric"] for c in document["phase_comparisons"]]
    pairs = {(c["baseline"], c["variant"]) for c in document["phase_comparisons"]}
    assert metrics.count(loop) == len(pairs)  # one row, one metric: named once per pair
    assert "phase:unaccounted" not in metrics
    by_place = {(row["variant"], row["key"]): row for row in rows}
    test_filter = by_place[("no-index/warm", "do_search/mdb_search/test_filter")]
    assert test_filter["calls_per_operation"] >= 10_000  # one per candidate, 10,011
    assert test_filter["calls_per_run"] >= 10_000
    assert by_place[("no-index/warm", "do_search")]["calls_per_operation"] == 1
    counted = {
        (item["variant"], item["operation"], item["binary"], item["function"]): item
        for item in document["function_calls"]
    }
    per_function = counted[("no-index/warm", "do_search", "/usr/sbin/slapd", "test_filter")]
    assert per_function["calls_per_operation"] >= 10_000  # recursion included: at least
    assert per_function["seconds_per_call"] > 0
    assert (
        counted[("cn-index/warm", "do_search", "/usr/sbin/slapd", "do_search")][
            "calls_per_operation"
        ]
        == 1
    )
    assert "test_filter" in stdout and "calls per probed function" in stdout
    print(stdout)  # read with -s: how the dissection looks on the real server


@pytest.mark.skipif(bool(PORTS & listening_ports()), reason="the example's ports are taken")
def test_an_interrupted_run_stops_every_slapd_it_started(root: Path) -> None:
    process = cutaway(root, "--rounds", "50", "--warmup", "0")
    try:
        deadline = time.monotonic() + 120
        while len(slapds_mentioning(str(root))) < 2:  # both variants set up
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the setup hooks never started both slapds"
            time.sleep(0.1)
        time.sleep(2.0)  # into the rounds
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert_nothing_left(root)


def test_stop_is_safe_for_a_directory_never_made_and_twice(root: Path) -> None:
    never = root / "cutaway-openldap-never"
    for _ in range(2):
        subprocess.run([str(CONTROL), "stop", str(never)], check=True, timeout=30)
    assert not never.exists()


def test_the_generated_directory_has_the_seeds_size_and_entry() -> None:
    ldif = subprocess.run(
        [str(CONTROL), "ldif", "10000"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert ldif.count("\ndn: ") + ldif.startswith("dn: ") == 10_011
    assert ldif.count("cn: Audy Flansburg\n") == 1
