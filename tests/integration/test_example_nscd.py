"""The nscd example (seed 000 on Linux) with the real glibc, getent and nscd from Debian: its
control scripts leave the persistent caches and the system files as they found them, and its
short form (examples/nscd/quick) judges every call position over the seed's 10 users and 100
services and writes the throughput experiment beside it, leaving /etc as it was, also after
Ctrl-C."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nscd"
NAME_SET = str(EXAMPLE / "name-set")
NSCD_CACHE = Path("/var/cache/nscd")
# Every system file a lookup of the example reads; the example may change the first two while
# it runs and must put every one back.
SYSTEM_FILES = ("/etc/passwd", "/etc/services", "/etc/group", "/etc/nsswitch.conf")
USERS = (EXAMPLE / "passwd.add").read_text().splitlines()
SERVICES = (EXAMPLE / "services.add").read_text().splitlines()
CUTAWAY = f"{sys.executable} -m cutaway"

needs_nscd = pytest.mark.skipif(
    shutil.which("nscd") is None or os.geteuid() != 0, reason="needs nscd (Debian) and root"
)


def fingerprint(directory: Path) -> dict[str, tuple[int, bytes]]:
    """Every file's modification time (ns) and contents, and the directory's own time."""
    if not directory.exists():
        return {}
    found = {".": (directory.stat().st_mtime_ns, b"")}
    for path in sorted(directory.iterdir()):
        found[path.name] = (path.stat().st_mtime_ns, path.read_bytes())
    return found


def system_files() -> dict[str, tuple[bytes, int, int]]:
    """Each system file's bytes, permissions and modification time (ns)."""
    found = {}
    for name in SYSTEM_FILES:
        status = os.stat(name)
        found[name] = (Path(name).read_bytes(), status.st_mode, status.st_mtime_ns)
    return found


def nscd_running() -> bool:
    return subprocess.run(["nscd", "-g"], capture_output=True).returncode == 0


@pytest.fixture
def machine_without_nscd() -> None:
    if nscd_running():
        pytest.skip("an nscd of the machine's own is running: the example would leave it alone")


@needs_nscd
def test_nscd_ctl_leaves_the_persistent_caches_as_it_found_them(
    tmp_path: Path, machine_without_nscd: None
) -> None:
    control = str(EXAMPLE / "nscd-ctl")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    before = fingerprint(NSCD_CACHE)
    subprocess.run([control, "start"], check=True, env=env)
    try:
        assert nscd_running()
        # Lookups through the daemon write its caches.
        subprocess.run(["getent", "passwd", "root", "nobody"], check=True, capture_output=True)
        subprocess.run(["getent", "services", "ssh"], check=True, capture_output=True)
    finally:
        subprocess.run([control, "stop"], check=True, env=env)
    assert not nscd_running()
    assert fingerprint(NSCD_CACHE) == before


def _copy_of_etc(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A directory holding copies of the machine's passwd and services (without the example's
    lines, should an experiment run), and the environment that points name-set at it."""
    etc = tmp_path / "etc"
    etc.mkdir()
    for name, ours in (("passwd", USERS), ("services", SERVICES)):
        lines = Path(f"/etc/{name}").read_text().splitlines(keepends=True)
        (etc / name).write_text("".join(line for line in lines if line.rstrip("\n") not in ours))
        os.utime(etc / name, ns=(1_000_000_000, 2_000_000_000))  # a time add must not keep
    state = tmp_path / "state"
    state.mkdir()
    return etc, {**os.environ, "NAME_SET_ETC": str(etc), "TMPDIR": str(state)}


def _name_set(action: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([NAME_SET, action], capture_output=True, text=True, env=env, timeout=30)


def _stamp(path: Path) -> tuple[bytes, int, int]:
    status = path.stat()
    return path.read_bytes(), status.st_mode, status.st_mtime_ns


def test_name_set_takes_out_what_it_added_byte_for_byte(tmp_path: Path) -> None:
    etc, env = _copy_of_etc(tmp_path)
    before = {name: _stamp(etc / name) for name in ("passwd", "services")}
    assert _name_set("add", env).returncode == 0
    assert _name_set("add", env).returncode == 0  # a second variant's setup: nothing more
    passwd = (etc / "passwd").read_text().splitlines()
    services = (etc / "services").read_text().splitlines()
    assert passwd[-len(USERS) :] == USERS and passwd.count(USERS[0]) == 1
    assert services[-len(SERVICES) :] == SERVICES and services.count(SERVICES[0]) == 1
    assert _name_set("check", env).returncode == 0
    assert _name_set("remove", env).returncode == 0
    assert _name_set("remove", env).returncode == 0  # a second variant's cleanup: nothing left
    assert {name: _stamp(etc / name) for name in ("passwd", "services")} == before
    assert _name_set("check", env).returncode == 1


def test_name_set_keeps_what_else_changed_meanwhile(tmp_path: Path) -> None:
    """A package installed while an experiment runs adds its own user: it stays."""
    etc, env = _copy_of_etc(tmp_path)
    original = (etc / "passwd").read_text()
    assert _name_set("add", env).returncode == 0
    installed = "smmta:x:108:114:Mail Transfer Agent:/var/lib/sendmail:/usr/sbin/nologin\n"
    with (etc / "passwd").open("a") as passwd:
        passwd.write(installed)
    assert _name_set("remove", env).returncode == 0
    assert (etc / "passwd").read_text() == original + installed


def test_name_set_refuses_names_or_uids_the_machine_already_has(tmp_path: Path) -> None:
    etc, env = _copy_of_etc(tmp_path)
    uid = USERS[4].split(":")[2]
    own_user = f"someone:x:{uid}:100::/home/someone:/bin/sh\n"
    own_service = f"myservice\t5999/tcp\t{SERVICES[7].split()[0]}\n"  # an alias of ours
    for name, line in (("passwd", own_user), ("services", own_service)):
        with (etc / name).open("a") as file:
            file.write(line)
    before = {name: _stamp(etc / name) for name in ("passwd", "services")}
    refused = _name_set("add", env)
    assert refused.returncode == 1
    assert own_user.strip() in refused.stderr and own_service.strip() in refused.stderr
    assert {name: _stamp(etc / name) for name in ("passwd", "services")} == before


@needs_nscd
@pytest.mark.slow
def test_the_short_form_judges_each_position_over_the_seeds_names(
    tmp_path: Path, machine_without_nscd: None
) -> None:
    before, cache_before = system_files(), fingerprint(NSCD_CACHE)
    result = subprocess.run(
        [str(EXAMPLE / "quick"), str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=400,
        env={**os.environ, "CUTAWAY": CUTAWAY, "NO_COLOR": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    document = json.loads((tmp_path / "r.json").read_text())
    rounds = document["experiments"][0]["rounds_completed"]
    # Two lookups per getent process: 5 processes for the 10 users, 50 for the 100 services.
    calls = {(c["variant"], c["function"], c["position"]): c["n"] for c in document["calls"]}
    for variant in ("files", "nscd", "nscd-invalidated"):
        for position in ("1", "2"):
            assert calls[variant, "getpwnam", position] == 5 * rounds
            assert calls[variant, "getservbyname", position] == 50 * rounds
    verdicts = {
        (c["variant"], c["function"], c["position"]): c["verdict"]
        for c in document["call_comparisons"]
    }
    # A warm nscd answers a process's second lookup from the shared cache it mapped at the
    # first: far below reading the files, at any load.
    assert verdicts["nscd", "getpwnam", "2"] == "improved"
    assert verdicts["nscd", "getservbyname", "2"] == "improved"
    assert len(verdicts) == 8
    throughput = json.loads((tmp_path / "r-throughput.json").read_text())
    assert throughput["experiments"][0]["name"] == "nscd: lookup throughput, one lookup per process"
    judged = {(c["variant"], c["metric"]) for c in throughput["comparisons"]}
    assert {("nscd", "wall"), ("nscd", "cpu")} <= judged
    # One lookup per process, a few passes over the names a run: each database judged alone.
    rounds = throughput["experiments"][0]["rounds_completed"]
    calls = {(c["variant"], c["function"], c["position"]): c["n"] for c in throughput["calls"]}
    for variant in ("files", "nscd"):
        by_name = calls[variant, "getpwnam", "1"]
        assert by_name == calls[variant, "getpwuid", "1"] and by_name % (10 * rounds) == 0
        assert calls[variant, "getservbyname", "1"] == 10 * by_name
        assert (variant, "getpwnam", "2") not in calls
    judged_calls = {(c["function"], c["position"]) for c in throughput["call_comparisons"]}
    assert judged_calls == {("getpwnam", "1"), ("getpwuid", "1"), ("getservbyname", "1")}
    assert system_files() == before and fingerprint(NSCD_CACHE) == cache_before
    assert not nscd_running()


@needs_nscd
@pytest.mark.slow
def test_ctrl_c_puts_the_system_files_and_nscd_back(
    tmp_path: Path, machine_without_nscd: None
) -> None:
    before, cache_before = system_files(), fingerprint(NSCD_CACHE)
    process = subprocess.Popen(
        [*CUTAWAY.split(), "run", str(EXAMPLE / "experiment.toml"), "--db", "c.db"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        # Interrupted mid-experiment: once the names are in and nscd serves them.
        while not (nscd_running() and USERS[-1] in Path("/etc/passwd").read_text()):
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(2)
        os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C does
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stderr[-3000:]
    assert system_files() == before and fingerprint(NSCD_CACHE) == cache_before
    assert not nscd_running()
