"""The mailqueue example (seed 002 on Linux) on the real kernel and sendmail: queue directories
on a file system of their own in an image file on a loop device, a system-wide profile of the
senders narrowed to the stacks under fsync, openat and rename. Its control script undoes a
setup that failed and leaves nothing mounted; its short form (examples/mailqueue/quick) names
the kernel functions under fsync with their intervals, and leaves no mount or loop device, also
when interrupted."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemons import daemon_directory

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mailqueue"
CONTROL = EXAMPLE / "mailqueue-ctl"
PROGRAMS = ("sendmail", "perf", "mkfs.ext4", "losetup", "findmnt", "unshare")
# The kernel entries of the three system calls (the experiment's `under`).
ENTRIES = ("do_fsync_[k]", "do_sys_openat2_[k]", "do_renameat2_[k]")

pytestmark = pytest.mark.skipif(
    any(shutil.which(p) is None for p in PROGRAMS) or os.geteuid() != 0,
    reason="needs sendmail (sendmail-bin), perf (linux-perf), e2fsprogs, util-linux and root",
)


@pytest.fixture
def tmpdir() -> Iterator[Path]:
    with daemon_directory("cutaway-mailqueue-test-") as path:
        yield path


def mounts_and_loops(under: str) -> tuple[list[str], list[str]]:
    """The mounts below ``under`` and the loop devices whose backing file is below it."""
    mounts = subprocess.check_output(["findmnt", "-rn", "-o", "TARGET"], text=True).split()
    loops = subprocess.check_output(["losetup", "-n", "-O", "BACK-FILE"], text=True).split()
    return [m for m in mounts if m.startswith(under)], [b for b in loops if b.startswith(under)]


def control(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CONTROL), *arguments], capture_output=True, text=True, timeout=120)


def test_the_queue_is_made_on_its_own_file_system_and_undone(tmpdir: Path) -> None:
    root = tmpdir / "root"
    made = control("setup", str(root), "2", "ext4-linear", "10")
    assert made.returncode == 0, made.stderr
    spool = root / "spool"
    assert mounts_and_loops(str(root)) == ([str(spool)], [str(root / "fs.img")])
    features = subprocess.check_output(["dumpe2fs", "-h", str(root / "fs.img")], text=True)
    assert "dir_index" not in features  # directories searched as lists
    assert sorted(p.name for p in (spool / "q2").iterdir()) == [
        f"zz{i:08d}cutaway" for i in range(1, 6)
    ]
    (spool / "q1" / "qfABC").write_text("queued by a run")
    assert control("clear", str(root)).returncode == 0
    assert len(list((spool / "q1").iterdir())) == 5  # the backlog stays, the run's file goes
    assert control("cleanup", str(root)).returncode == 0
    assert mounts_and_loops(str(tmpdir)) == ([], []) and not root.exists()
    assert control("cleanup", str(root)).returncode == 0  # twice is harmless


def test_a_setup_that_fails_undoes_what_it_made(tmpdir: Path) -> None:
    root = tmpdir / "root"
    unknown = control("setup", str(root), "1", "nofs")
    assert unknown.returncode == 2 and "unknown file system 'nofs'" in unknown.stderr
    assert mounts_and_loops(str(tmpdir)) == ([], []) and not root.exists()
    # A 512 MiB ext4 has 32,768 inodes: it is made and mounted, and the backlog fails.
    full = control("setup", str(root), "10", "ext4", "40000")
    assert full.returncode != 0 and "No space left" in full.stderr
    assert mounts_and_loops(str(tmpdir)) == ([], []) and not root.exists()


def _quick(tmpdir: Path, **popen: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(EXAMPLE / "quick"), str(tmpdir / "r.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "CUTAWAY": f"{sys.executable} -m cutaway", "NO_COLOR": "1",
             "CUTAWAY_DB": str(tmpdir / "q.db")},
        **popen,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.mark.slow
def test_the_short_form_names_the_kernel_functions_under_fsync(tmpdir: Path) -> None:
    before = mounts_and_loops("/tmp/cutaway-mailqueue-quick.")
    process = _quick(tmpdir)
    _, stderr = process.communicate(timeout=400)
    assert process.returncode == 0, stderr[-3000:]
    document = json.loads((tmpdir / "r.json").read_text())
    assert document["experiments"][0]["variants"] == ["q1-s10", "q10-s10"]
    # Every stack analysed passes through one of the three system calls' kernel entries.
    stacks = [e["frames"] for s in document["top_stacks"] for e in s["entries"]]
    assert stacks and all(set(ENTRIES) & set(frames) for frames in stacks)
    under_fsync = {
        a["function"]: a
        for a in document["attribution"]
        if a["profile"] == "off-cpu" and a["kind"] == "self"
    }
    # fsync on ext4 waits for the journal's commit: a kernel function, with its interval.
    commit = under_fsync.get("jbd2_log_wait_commit_[k]")
    assert commit is not None, sorted(under_fsync)
    assert commit["ci_low"] is not None and commit["ci_low"] <= commit["delta"] <= commit["ci_high"]
    inclusive = {a["function"] for a in document["attribution"] if a["kind"] == "inclusive"}
    assert "do_fsync_[k]" in inclusive
    totals = [t for t in document["attribution_totals"] if t["profile"] == "on-cpu"]
    assert totals and all(t["measured_metric"] is None for t in totals)
    assert mounts_and_loops("/tmp/cutaway-mailqueue-quick.") == before


@pytest.mark.slow
def test_an_interrupted_short_form_leaves_nothing_mounted(tmpdir: Path) -> None:
    before = mounts_and_loops("/tmp/cutaway-mailqueue-quick.")
    process = _quick(tmpdir, start_new_session=True)
    deadline = time.monotonic() + 240
    while mounts_and_loops("/tmp/cutaway-mailqueue-quick.")[0] == before[0]:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.2)
    time.sleep(2)  # inside the setup hooks or the first runs
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole group
    process.communicate(timeout=180)
    assert process.returncode != 0
    assert mounts_and_loops("/tmp/cutaway-mailqueue-quick.") == before
