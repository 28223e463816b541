"""The calls probe end to end: real getent processes, real interposer, the store, the analysis."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from cutaway import api
from cutaway.model import ProbeSpec
from cutaway.probes.base import ProbeError
from cutaway.probes.calls.capture import CallsProbe, decode_calls
from cutaway.probes.calls.result import calls_result
from cutaway.probes.calls.settings import call_functions, with_calls
from cutaway.probes.interposer import records_directory
from cutaway.runner.runner import RunnerError, run_experiment
from cutaway.spec import quick_spec
from cutaway.store import Store
from tests.cutaway_command import cutaway


def test_two_lookups_per_process_give_first_and_second_calls(tmp_path: Path) -> None:
    result = cutaway(
        "run",
        "-c",
        "getent -s files passwd root nobody",
        "-n",
        "files",
        "-c",
        "getent -s files passwd root",
        "-n",
        "one",
        "--calls",
        "getpwnam",
        "--rounds",
        "4",
        "--warmup",
        "1",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "probe calls" in result.stderr
    data = api.load(db=tmp_path / ".cutaway" / "cutaway.db")
    stored = data.store.run_data(data.experiment.id, "calls")
    assert {(s.variant, s.round_index) for s in stored} == {
        (v, r) for v in ("files", "one") for r in range(4)
    }  # warmup runs are not returned
    for item in stored:
        calls = decode_calls(item.data)
        assert item.key == "getpwnam"
        expected = [1, 2] if item.variant == "files" else [1]
        assert list(calls["call_index"]) == expected
        assert (calls["duration_ns"] > 0).all() and (calls["error"] == 0).all()

    analysis = api.analyze(db=tmp_path / ".cutaway" / "cutaway.db")
    by_key = {(c.variant, c.position): c for c in calls_result(analysis).calls}
    assert by_key[("files", "1")].n == 4 and by_key[("files", "2")].n == 4
    assert ("one", "2") not in by_key
    assert by_key[("files", "all")].n == 8
    assert [c.metric for c in calls_result(analysis).call_comparisons] == ["calls.getpwnam.1"]
    assert analysis.probes and "getpwnam" in analysis.probes[0]
    assert " per recorded call and " in analysis.probes[0]  # the probe measured itself
    assert analysis.probes[0].endswith(" µs per process")


def test_unknown_function_is_refused_with_the_catalog(tmp_path: Path) -> None:
    result = cutaway("run", "-c", "true", "--calls", "getpwnam,getpwnom", cwd=tmp_path)
    assert result.returncode == 2
    assert "getpwnom" in result.stderr and "getservbyname" in result.stderr
    assert not (tmp_path / ".cutaway").exists()


def test_probes_table_in_an_experiment_file(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(
        textwrap.dedent("""\
        name = "probe file"
        rounds = 2
        warmup_rounds = 0
        command = "getent -s files services http ssh"
        [probes]
        calls = ["getservbyname"]
        """)
    )
    assert cutaway("run", str(path), cwd=tmp_path).returncode == 0
    data = api.load(db=tmp_path / ".cutaway" / "cutaway.db")
    assert call_functions(data.spec.probes) == ("getservbyname",)
    stored = data.store.run_data(data.experiment.id, "calls")
    assert [list(decode_calls(s.data)["call_index"]) for s in stored] == [[1, 2], [1, 2]]

    path.write_text(path.read_text().replace("getservbyname", "getservbynam"))
    result = cutaway("run", str(path), cwd=tmp_path)
    assert result.returncode == 2 and "e.toml:6: probes.calls[0]" in result.stderr


def test_the_probe_measures_its_own_overhead() -> None:
    probe = CallsProbe(["getpwnam"])
    try:
        overhead = probe.overhead()
    finally:
        probe.close()
    # A timed call costs two clock reads and a record: more than nothing, far less than 100 µs.
    assert overhead.per_event is not None and 0 < overhead.per_event < 100e-6
    # Each process loads the library and creates a file: less than a second. (On a loaded
    # machine the median of the paired differences can come out at 0, where it is clamped.)
    assert overhead.per_process is not None and 0 <= overhead.per_process < 1.0


def test_a_process_killed_before_its_file_started_is_a_loss_and_a_foreign_file_an_error() -> None:
    probe = CallsProbe(["getpwnam"])
    try:
        probe.check()
        attachment = probe.before_run(dict(os.environ))
        subprocess.run(["getent", "-s", "files", "passwd", "root"], env=attachment.env, check=True)
        # What Ctrl-C leaves when it kills a process between creating its file and storing the
        # header's magic (stored last): the reserved size, all zeros.
        (probe.directory / "calls.999999.0.bin").write_bytes(bytes(4096 + 32 * 1024))
        data = {item.kind: item for item in probe.after_run()}
        losses = json.loads(data["calls-losses"].data)
        assert losses["processes"] == 1 and losses["unstarted"] == 1
        assert list(decode_calls(data["calls"].data)["call_index"]) == [1]

        probe.before_run(dict(os.environ))
        (probe.directory / "calls.999999.0.bin").write_bytes(b"\x7fELF" + bytes(4092))
        with pytest.raises(ProbeError, match=r"damaged: .*calls\.999999\.0\.bin: .*bad magic"):
            probe.after_run()
        assert not list(probe.directory.iterdir())  # cleared all the same
    finally:
        probe.close()


def test_syscalls_probe_reports_each_system_call_by_position(tmp_path: Path) -> None:
    result = cutaway(
        "run",
        "-c",
        "cat /etc/hostname /etc/hostname",
        "--syscalls",
        "openat,fsync",
        "--rounds",
        "2",
        "--warmup",
        "0",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    analysis = api.analyze(db=tmp_path / ".cutaway" / "cutaway.db")
    functions = {c.function for c in calls_result(analysis).calls}
    assert functions == {"openat (syscall)"}  # cat never calls fsync: no empty rows
    later = [c for c in calls_result(analysis).calls if c.position == "later"]
    assert later and later[0].n >= 2 * 2  # both files, every round, after the loader's opens
    assert "strace" in analysis.probes[0] and " per recorded call and " in analysis.probes[0]


def test_a_probe_that_cannot_work_stops_the_experiment_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing() -> str:
        raise FileNotFoundError("cutaway's call interposer is missing at /nowhere")

    monkeypatch.setattr("cutaway.probes.calls.capture.library_path", missing)
    marker = tmp_path / "ran"
    spec = quick_spec([f"touch {marker}"], rounds=1)
    spec = dataclasses.replace(spec, probes=with_calls(ProbeSpec(), ("getpwnam",)))
    store = Store(tmp_path / "db")
    with pytest.raises(RunnerError, match=r"probe cannot run here: .*missing"):
        run_experiment(spec, store, environment={})
    assert not marker.exists()
    assert store.list_experiments() == []


def test_records_go_to_memory_when_it_is_there_else_to_the_temporary_directory(
    tmp_path: Path,
) -> None:
    memory = tmp_path / "shm"
    memory.mkdir()
    inside = records_directory(str(memory))
    assert inside.parent == memory and inside.name.startswith("cutaway-calls-")
    elsewhere = records_directory(str(tmp_path / "missing"))
    try:
        assert elsewhere.parent == Path(tempfile.gettempdir())
    finally:
        elsewhere.rmdir()


def test_record_directories_left_by_a_killed_cutaway_are_removed_by_the_next(
    tmp_path: Path,
) -> None:
    # A cutaway killed with SIGKILL runs no cleanup: its record directory stays on tmpfs.
    child = subprocess.run(
        [sys.executable, "-c", f"from cutaway.probes.interposer import records_directory;"
         f" print(records_directory({str(tmp_path)!r}))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    orphan = Path(child.stdout.strip())
    (orphan / "calls.1.0.bin").write_bytes(b"x" * 100)
    legacy = tmp_path / "cutaway-calls-f1_xt8zt"  # an older version's name: not ours to judge
    legacy.mkdir()
    mine = records_directory(str(tmp_path))
    assert mine.is_dir() and not orphan.exists() and legacy.is_dir()
    # A live owner's directory is never taken: a second probe in this process keeps the first.
    again = records_directory(str(tmp_path))
    assert mine.is_dir() and again.is_dir()
