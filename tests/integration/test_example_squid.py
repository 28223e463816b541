"""The squid example on the real daemons: Squid and nginx from Debian, ab,
perf system-wide. A short run completes with a verdict and a profile; afterwards, and after an
interruption or a setup that fails half-way, none of the daemons it started still runs and none
of its ports still listens."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cutaway_command import CUTAWAY
from tests.daemons import alive, daemons_mentioning, listening_ports, read

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "squid"
CONTROL = EXAMPLE / "squid-ctl"
# The conclusion: "blocklist is 12.3 % [...] slower than few: regressed", or, when the interval
# spans no change, "blocklist vs few: no difference shown, -16.3 % †: inconclusive".
VERDICT = re.compile(
    r"^(blocklist is .* than few: (regressed|improved|equivalent|inconclusive)"
    r"|blocklist vs few: no difference shown, .*: inconclusive)$"
)

pytestmark = pytest.mark.skipif(
    any(shutil.which(p) is None for p in ("squid", "nginx", "ab", "perf")) or os.geteuid() != 0,
    reason="needs squid, nginx (nginx-light), ab (apache2-utils), perf (linux-perf) and root",
)


@pytest.fixture
def root() -> Iterator[Path]:
    """The example's TMPDIR: under /tmp, not pytest's tmp_path, whose parent (mode 700) squid's
    `proxy` user and nginx's `nobody` workers cannot enter."""
    path = Path(tempfile.mkdtemp(prefix="cutaway-squid-test-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Watcher:
    """Notes, while an experiment runs, every port and pid that squid-ctl records under the
    TMPDIR, so that the test can check afterwards that none of them is left."""

    def __init__(self, tmpdir: Path) -> None:
        self.tmpdir = tmpdir
        self.ports: set[int] = set()
        self.pids: set[tuple[int, str]] = set()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def watch(self) -> None:
        while not self.done.is_set():
            for path in self.tmpdir.glob("cutaway-squid-*/ports"):
                self.ports.update(int(port) for port in read(path).split())
            for path in self.tmpdir.glob("cutaway-squid-*/*.started"):
                pid, program = [*read(path).split(), "", ""][:2]
                if pid.isdigit():
                    self.pids.add((int(pid), program))
            time.sleep(0.05)

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


def assert_nothing_left(
    root: Path, watcher: Watcher, programs: frozenset[str] = frozenset({"squid", "nginx"})
) -> None:
    watcher.stop()
    assert watcher.ports, "squid-ctl never recorded its ports"
    assert {program for _, program in watcher.pids} == programs
    assert [pid for pid, program in watcher.pids if alive(pid) == program] == []
    assert watcher.ports & listening_ports() == set()
    assert daemons_mentioning(str(root), ("squid", "nginx")) == []
    assert list(root.glob("cutaway-squid-*")) == []  # stop removed each variant's directory


def cutaway(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(root), "SQUID_REQUESTS": "200"}
    return subprocess.Popen(
        [*CUTAWAY, "run", str(EXAMPLE / "experiment.toml"), "--db", str(root / "db"), *args],
        cwd=root,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_a_short_run_gives_a_verdict_and_a_profile_and_leaves_nothing_running(
    root: Path,
) -> None:
    watcher = Watcher(root)
    process = cutaway(root, "--rounds", "2", "--warmup", "0")
    stdout, stderr = process.communicate(timeout=240)
    assert process.returncode == 0, stderr
    assert_nothing_left(root, watcher)
    lines = stdout.splitlines()
    assert any(VERDICT.match(line) for line in lines), stdout
    assert re.search(r"^median +few +blocklist$", stdout, re.MULTILINE), stdout
    assert "the whole system (-a)" in stdout
    assert "profile: on-CPU, time per run by function, self" in stdout
    assert "profile: off-CPU" in stdout
    assert "squid_cpu" in stdout  # squid's own CPU time, compared like wall
    # The system-wide profile saw the daemons, not only ab: by-process finds them in the export.
    folded = subprocess.run(
        [*CUTAWAY, "export", "--db", str(root / "db"), "--format", "folded"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    by_process = subprocess.run(
        [str(EXAMPLE / "by-process"), "--runs", "2", "--baseline", "few"],
        input=folded,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = {line.split()[0] for line in by_process.splitlines() if line.strip()}
    assert {"squid", "nginx", "ab"} <= rows, by_process
    assert re.search(r"^ +few +blocklist +change$", by_process, re.MULTILINE), by_process


def test_an_interrupted_run_stops_every_daemon_it_started(root: Path) -> None:
    watcher = Watcher(root)
    process = cutaway(root, "--rounds", "50", "--warmup", "0")
    deadline = time.monotonic() + 60
    while len(list(root.glob("cutaway-squid-*/squid.started"))) < 2:  # both variants set up
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "the setup hooks never started both squids"
        time.sleep(0.05)
    time.sleep(2.0)  # into the rounds
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert_nothing_left(root, watcher)


def test_stop_after_a_start_that_failed_half_way_stops_the_origin(root: Path) -> None:
    # A squid that cannot start (a stand-in on PATH that fails its configuration check): the
    # real nginx is already running then, and `stop`, which cutaway runs as the cleanup of any
    # setup that started, must stop it.
    fake = root / "bin"
    fake.mkdir()
    (fake / "squid").write_text("#!/bin/sh\necho 'FATAL: cutaway test squid' >&2\nexit 1\n")
    (fake / "squid").chmod(0o755)
    variant = root / "cutaway-squid-few"
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    watcher = Watcher(root)
    started = subprocess.run(
        [str(CONTROL), "start", str(variant), "few"], env=env, capture_output=True, text=True
    )
    assert started.returncode == 1
    assert "squid did not start" in started.stderr
    assert "FATAL: cutaway test squid" in started.stderr
    time.sleep(0.2)  # let the watcher see the recorded pid and ports
    assert [program for pid, program in watcher.pids if alive(pid) == program] == ["nginx"]
    subprocess.run([str(CONTROL), "stop", str(variant)], check=True, timeout=60)
    subprocess.run([str(CONTROL), "stop", str(variant)], check=True, timeout=60)  # twice: fine
    (fake / "squid").unlink()
    fake.rmdir()
    assert_nothing_left(root, watcher, programs=frozenset({"nginx"}))  # no squid ever ran


def test_stop_finds_daemons_whose_pid_was_never_recorded(root: Path) -> None:
    # A setup interrupted between starting a daemon and writing its pid down: `stop` finds it
    # by the directory its command line names.
    variant = root / "cutaway-squid-blocklist"
    watcher = Watcher(root)
    subprocess.run([str(CONTROL), "start", str(variant), "blocklist"], check=True, timeout=60)
    time.sleep(0.2)  # let the watcher see the recorded pids and ports
    for record in variant.glob("*.started"):
        record.unlink()
    subprocess.run([str(CONTROL), "stop", str(variant)], check=True, timeout=60)
    assert_nothing_left(root, watcher)
