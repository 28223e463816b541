"""The call interposer (libcwcalls.so, as installed with the package) in real processes:
getent, and native/tests/cw_calls_test_program.c in every shape a measured program takes
(threads, fork, exec, _exit, a signal, aliases such as open64, calls before the library's
constructor), once more with AddressSanitizer and UBSan; and the C side of the shared test
vectors. Every file is read back with cutaway.probes.interposer."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cutaway.probes.interposer import (
    CATALOG,
    CLOCK_MONOTONIC,
    CLOCK_TSC,
    CallRecords,
    call_files,
    environment_for,
    function_id,
    library_path,
    read_call_file,
    tsc_hz,
)
from tests.native_build import NATIVE, ROOT, SANITIZERS, compile_native

PROGRAM_SOURCE = NATIVE / "tests" / "cw_calls_test_program.c"
GETENT = shutil.which("getent")
# A library whose constructor runs before ours (listed after ours in LD_PRELOAD, it is
# initialized first) and calls interposed functions: they reach the stubs, not libc's code.
EARLY_SOURCE = r"""
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void early(void) {
    struct passwd *user = getpwnam("root");
    errno = 0;
    int fd = open("/nonexistent-cutaway-test/missing", O_RDONLY);
    int open_errno = errno;
    fprintf(stderr, "early %s %d %d %d\n", user ? user->pw_name : "-", fd, open_errno, close(-1));
}
"""

# A library listed after ours whose fsync forks inside the timed call; the child makes three
# timed calls and returns through our hook, whose record must not land in any file.
FORKING_FSYNC_SOURCE = r"""
#include <sys/wait.h>
#include <unistd.h>
int fsync(int fd) {
    (void)fd;
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < 3; i++) close(-1);
        return 0;
    }
    int status;
    waitpid(child, &status, 0);
    return 0;
}
"""

# A library listed after ours whose fsync sleeps 20 ms: a timed call of known length.
SLEEPING_FSYNC_SOURCE = r"""
#include <time.h>
int fsync(int fd) {
    (void)fd;
    struct timespec pause = {0, 20000000};
    while (nanosleep(&pause, &pause) != 0) {
    }
    return 0;
}
"""
TSC_HZ = tsc_hz()
# The enumeration functions by database: set, get, end, and the reentrant get.
ENUMERATIONS = {
    "passwd": ("setpwent", "getpwent", "endpwent", "getpwent_r"),
    "group": ("setgrent", "getgrent", "endgrent", "getgrent_r"),
    "services": ("setservent", "getservent", "endservent", "getservent_r"),
}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


@pytest.fixture(scope="module")
def program(native_build: Path) -> str:
    return compile_native(native_build / "program", [PROGRAM_SOURCE], "-O2", "-pthread")


@pytest.fixture
def out(tmp_path: Path) -> Path:
    directory = tmp_path / "calls"
    directory.mkdir()
    return directory


def _run(
    argv: Sequence[str],
    functions: Sequence[str],
    out: Path,
    *,
    thread_cpu: bool = False,
    preload_after: str = "",
    tsc: int | None = TSC_HZ,
) -> subprocess.CompletedProcess[str]:
    """Run argv with the interposer timing `functions` into `out`, on the clock the calls
    probe would choose here (the TSC where the kernel trusts it) unless `tsc` says otherwise."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CUTAWAY_", "LD_"))}
    if preload_after:
        base["LD_PRELOAD"] = preload_after
    added = environment_for(functions, out, thread_cpu=thread_cpu, tsc_hz=tsc, environment=base)
    env = {**base, **added}
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=60)


def _files(out: Path) -> list[CallRecords]:
    return [read_call_file(path) for path in call_files(out)]


def _in_process_order(out: Path) -> list[CallRecords]:
    """The files of `out`, a parent's before its children's, an image's before its exec's
    (pids alone could wrap around)."""
    files = _files(out)
    pids = {f.pid for f in files}
    return sorted(files, key=lambda f: (f.ppid in pids, f.sequence))


def _only_file(out: Path) -> CallRecords:
    files = _files(out)
    assert len(files) == 1, [f.pid for f in files]
    return files[0]


def _positions_are_exact(records: CallRecords, count: int) -> None:
    """`count` records, each function's call_index 1..n once, overall_index 1..count once."""
    assert len(records) == count
    assert records.overall_index.tolist() == list(range(1, count + 1))
    for function in np.unique(records.function_id):
        indices = np.sort(records.call_index[records.function_id == function])
        assert indices.tolist() == list(range(1, indices.size + 1))


@pytest.mark.skipif(GETENT is None, reason="needs getent (libc-bin)")
@pytest.mark.parametrize("options", [[], ["-s", "files"]], ids=["default", "files"])
def test_getent_two_lookups_are_call_1_and_call_2(out: Path, options: list[str]) -> None:
    assert GETENT is not None
    done = _run([GETENT, *options, "passwd", "root", "nobody"], ["getpwnam"], out)
    assert done.returncode == 0 and done.stdout.startswith("root:")
    records = _only_file(out)
    assert records.function_id.tolist() == [function_id("getpwnam")] * 2
    assert records.call_index.tolist() == [1, 2]
    assert not records.failed.any() and (records.duration_ns > 0).all()
    assert os.path.realpath(records.exe) == os.path.realpath(GETENT)
    assert records.selected == ("getpwnam",)


def _names(records: CallRecords) -> list[str]:
    return [CATALOG[i - 1] for i in records.function_id]


@pytest.mark.skipif(GETENT is None, reason="needs getent (libc-bin)")
@pytest.mark.parametrize("database", list(ENUMERATIONS))
def test_getent_without_a_key_is_timed_entry_by_entry(out: Path, database: str) -> None:
    """What getent really calls for a whole database: set*ent, get*ent until it returns NULL
    (one call per entry printed, and the one that ends the list), end*ent."""
    assert GETENT is not None
    start, get, end, _ = ENUMERATIONS[database]
    done = _run([GETENT, database], [start, get, end], out)
    assert done.returncode == 0, done.stderr
    entries = len(done.stdout.splitlines())
    assert entries > 0
    records = _only_file(out)
    assert _names(records) == [start, *[get] * (entries + 1), end]
    _positions_are_exact(records, entries + 3)
    gets = records.function_id == function_id(get)
    assert records.call_index[gets].tolist() == list(range(1, entries + 2))
    assert records.failed[gets].tolist() == [False] * entries + [True]  # the end of the list
    assert not records.error.any() and not records.depth.any()


@pytest.mark.parametrize("database", list(ENUMERATIONS))
def test_both_enumeration_forms_are_timed_and_the_last_call_fails(
    program: str, out: Path, database: str
) -> None:
    start, get, end, get_r = ENUMERATIONS[database]
    selected = [name for names in ENUMERATIONS.values() for name in names]
    done = _run([program, "enumerate", database], selected, out)
    assert done.returncode == 0, done.stderr
    plain, reentrant = map(int, done.stdout.split())
    assert plain > 0 and reentrant > 0
    records = _only_file(out)
    names = _names(records)
    assert names == [start, *[get] * (plain + 1), end, start, *[get_r] * (reentrant + 1), end]
    _positions_are_exact(records, plain + reentrant + 6)
    for name, count in [(start, 2), (end, 2), (get, plain + 1), (get_r, reentrant + 1)]:
        calls = records.function_id == function_id(name)
        assert records.call_index[calls].tolist() == list(range(1, count + 1)), name
    failed = [(names[i], int(records.error[i])) for i in np.flatnonzero(records.failed)]
    assert failed == [(get, 0), (get_r, errno.ENOENT)]  # NULL without errno; ENOENT returned


def test_threads_get_every_record_and_exact_positions(program: str, out: Path) -> None:
    done = _run([program, "threads", "8", "10000"], ["close"], out)
    assert done.returncode == 0, done.stderr
    records = _only_file(out)
    _positions_are_exact(records, 80_000)
    thread_ids, counts = np.unique(records.thread_id, return_counts=True)
    assert counts.tolist() == [10_000] * 8 and records.pid not in thread_ids
    assert (records.error == errno.EBADF).all() and records.failed.all()
    assert records.dropped_records == 0


def test_a_fork_child_writes_its_own_file_and_counts_from_one(program: str, out: Path) -> None:
    done = _run([program, "fork", "3", "5"], ["close"], out)
    assert done.returncode == 0, done.stderr
    parent, child = _in_process_order(out)
    _positions_are_exact(parent, 6)
    _positions_are_exact(child, 5)
    assert child.ppid == parent.pid and child.pid != parent.pid
    assert (child.thread_id == child.pid).all()


def test_an_exec_image_writes_the_next_file_of_the_pid(program: str, out: Path) -> None:
    done = _run([program, "exec", "3", "4"], ["close"], out)
    assert done.returncode == 0, done.stderr
    before, after = _files(out)
    assert before.pid == after.pid and (before.sequence, after.sequence) == (0, 1)
    _positions_are_exact(before, 3)  # the old image never exited: read at preallocated size
    _positions_are_exact(after, 4)


def test_records_survive_exit_without_cleanup(program: str, out: Path) -> None:
    done = _run([program, "exit", "7"], ["close"], out)
    assert done.returncode == 0
    records = _only_file(out)
    _positions_are_exact(records, 7)
    assert records.truncated_bytes == 0


def test_records_survive_sigkill(program: str, out: Path) -> None:
    done = _run([program, "kill", str(int(signal.SIGKILL)), "6"], ["close"], out)
    assert done.returncode == -signal.SIGKILL
    records = _only_file(out)
    _positions_are_exact(records, 6)
    assert records.truncated_bytes == 0 and records.dropped_records == 0


def test_a_kill_in_the_middle_of_a_run_leaves_no_hole(program: str, out: Path) -> None:
    env_for_run = environment_for(["close"], out, tsc_hz=TSC_HZ)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUTAWAY_")}
    with subprocess.Popen(
        [program, "loop", "20000"], env={**env, **env_for_run}, stdout=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        process.kill()
    records = _only_file(out)
    assert len(records) >= 20_000
    _positions_are_exact(records, len(records))  # the call in progress has no record


def test_a_signal_handler_inside_a_record_write_costs_a_drop_not_a_collision(
    program: str, out: Path
) -> None:
    done = _run([program, "signals", "200000"], ["close"], out)
    assert done.returncode == 0, done.stderr
    handler_calls = int(done.stdout)
    total = 200_000 + handler_calls
    records = _only_file(out)
    assert handler_calls > 0
    assert len(records) + records.dropped_records == total
    assert np.unique(records.call_index).size == len(records)
    assert int(records.call_index.max()) <= total


def test_unselected_catalog_functions_leave_no_record(
    program: str, out: Path, tmp_path: Path
) -> None:
    done = _run([program, "catalog", str(tmp_path)], ["getpwnam"], out)
    assert done.returncode == 0, done.stderr
    records = _only_file(out)
    assert records.function_id.tolist() == [function_id("getpwnam")]


def test_every_catalog_function_is_timed_once(program: str, out: Path, tmp_path: Path) -> None:
    done = _run([program, "catalog", str(tmp_path)], CATALOG, out)
    assert done.returncode == 0, done.stderr
    records = _only_file(out)
    outermost = records.function_id[records.depth == 0]  # an NSS module's calls nest inside
    assert [CATALOG[i - 1] for i in outermost] == list(CATALOG)
    missing = records.error[records.function_id == function_id("open")]
    assert missing.tolist() == [errno.ENOENT]


def test_errno_is_what_libc_left(program: str, out: Path) -> None:
    done = _run([program, "errno"], ["open", "close"], out)
    assert done.returncode == 0, done.stderr
    records = _only_file(out)
    assert [CATALOG[i - 1] for i in records.function_id] == ["open", "open", "close"]
    assert records.error.tolist() == [0, errno.ENOENT, 0]
    assert records.failed.tolist() == [False, True, False]


@pytest.mark.parametrize("selected", [True, False], ids=["timed", "untimed"])
def test_aliases_are_timed_under_their_function_and_keep_the_mode(
    program: str, out: Path, tmp_path: Path, selected: bool
) -> None:
    functions = ["open", "openat", "creat"] if selected else ["getpwnam"]
    done = _run([program, "aliases", str(tmp_path)], functions, out)
    assert done.returncode == 0, done.stderr  # the program checks every file's mode
    records = _only_file(out)
    names = [CATALOG[i - 1] for i in records.function_id]
    expected = {"open": 3, "openat": 3, "creat": 1} if selected else {}
    assert {name: names.count(name) for name in set(names)} == expected


def test_thread_cpu_time_only_when_asked(program: str, out: Path) -> None:
    _run([program, "calls", "getpwnam", "3"], ["getpwnam"], out, thread_cpu=True)
    _run([program, "calls", "getpwnam", "3"], ["getpwnam"], out)
    plain, measured = sorted(_files(out), key=lambda f: f.thread_cpu_measured)
    assert measured.thread_cpu_measured and (measured.thread_cpu_ns > 0).all()
    assert not plain.thread_cpu_measured and (plain.thread_cpu_ns == -1).all()


def _library(native_build: Path, name: str, source_text: str) -> str:
    source = native_build / f"{name}.c"
    source.write_text(source_text)
    return compile_native(native_build / f"lib{name}.so", [source], "-O2", "-fPIC", "-shared")


@pytest.mark.parametrize(
    "clock",
    [
        CLOCK_MONOTONIC,
        pytest.param(
            CLOCK_TSC,
            marks=pytest.mark.skipif(TSC_HZ is None, reason="the kernel does not use the TSC"),
        ),
    ],
    ids=["monotonic", "tsc"],
)
def test_either_clock_gives_clock_monotonic_durations_and_instants(
    native_build: Path, program: str, out: Path, clock: int
) -> None:
    sleeping = _library(native_build, "sleeping_fsync", SLEEPING_FSYNC_SOURCE)
    before = time.monotonic_ns()
    done = _run(
        [program, "calls", "fsync", "3"],
        ["fsync"],
        out,
        preload_after=sleeping,
        tsc=TSC_HZ if clock == CLOCK_TSC else None,
    )
    after = time.monotonic_ns()
    assert done.returncode == 0, done.stderr
    records = _only_file(out)
    assert records.clock == clock
    _positions_are_exact(records, 3)
    assert (records.duration_ns >= 20_000_000).all(), records.duration_ns  # nanosleep's floor
    ends = records.start_ns + records.duration_ns
    assert (records.start_ns > before).all() and (ends < after).all()
    assert (np.diff(records.start_ns) >= records.duration_ns[:-1]).all()  # one after the other


def test_a_single_threaded_exit_cuts_the_file_after_its_last_record(
    program: str, out: Path
) -> None:
    _run([program, "calls", "close", "5"], ["close"], out)
    _run([program, "calls", "close", "5"], ["getpwnam"], out)  # no timed call at all
    with_records, without = sorted(call_files(out), key=lambda p: -p.stat().st_size)
    assert with_records.stat().st_size == 4096 + 5 * 32
    assert without.stat().st_size == 4096 and len(read_call_file(without)) == 0


def test_calls_before_the_constructor_reach_libc(
    native_build: Path, program: str, out: Path
) -> None:
    early = _library(native_build, "early", EARLY_SOURCE)
    done = _run(
        [program, "calls", "close", "2"], ["getpwnam", "open", "close"], out, preload_after=early
    )
    assert done.returncode == 0, done.stderr
    assert f"early root -1 {errno.ENOENT} -1" in done.stderr
    records = _only_file(out)
    _positions_are_exact(records, 2)  # the early calls are not timed


def test_a_fork_inside_a_timed_call_records_it_in_the_parent_only(
    native_build: Path, program: str, out: Path
) -> None:
    forking = _library(native_build, "forking_fsync", FORKING_FSYNC_SOURCE)
    done = _run([program, "calls", "fsync", "1"], ["fsync", "close"], out, preload_after=forking)
    assert done.returncode == 0, done.stderr
    parent, child = _in_process_order(out)
    assert child.ppid == parent.pid
    assert [CATALOG[i - 1] for i in parent.function_id] == ["fsync"]
    assert [CATALOG[i - 1] for i in child.function_id] == ["close"] * 3
    _positions_are_exact(child, 3)


def test_without_a_directory_the_library_does_nothing(program: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUTAWAY_")}
    env.update(LD_PRELOAD=library_path(), CUTAWAY_CALLS="close")
    done = subprocess.run([program, "errno"], env=env, cwd=tmp_path, capture_output=True)
    assert done.returncode == 0 and list(tmp_path.iterdir()) == []


def test_only_interposed_names_are_exported() -> None:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("needs nm (binutils)")
    listing = subprocess.run(
        [nm, "-D", "--defined-only", library_path()], check=True, capture_output=True, text=True
    ).stdout
    exported = {line.split()[-1] for line in listing.splitlines() if line.strip()}
    aliases = {"open64", "openat64", "creat64", "__open_2", "__open64_2", "__openat_2"}
    allowed = set(CATALOG) | aliases | {"__openat64_2"}
    assert {name for name in exported if not name.startswith("cw_")} == allowed


def test_the_vectors_program_regenerates_the_committed_vectors(
    native_build: Path, tmp_path: Path
) -> None:
    vectors = compile_native(
        native_build / "vectors", [NATIVE / "tests" / "cw_calls_vectors.c"], "-O2"
    )
    subprocess.run([vectors, str(tmp_path)], check=True)
    committed = ROOT / "tests" / "vectors"
    # Span vectors come from their own program (tests/integration/test_spans_native.py).
    names = sorted(p.name for p in committed.iterdir() if p.name.startswith("calls_"))
    assert sorted(path.name for path in tmp_path.iterdir()) == names
    assert len(names) == 6
    for name in names:
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), name


# AddressSanitizer must be the first library loaded, so it goes first in LD_PRELOAD, ahead
# of an instrumented build of the library; the test program is instrumented too.
@pytest.fixture(scope="module")
def sanitized(native_build: Path) -> tuple[str, str, str]:
    runtime = subprocess.run(
        ["gcc", "-print-file-name=libasan.so"], check=True, capture_output=True, text=True
    ).stdout.strip()
    if not os.path.isabs(runtime):
        pytest.skip("no AddressSanitizer runtime")
    library = compile_native(
        native_build / "libcwcalls-sanitized.so",
        [NATIVE / "cw_calls.c"],
        "-O1", "-fPIC", "-shared", "-fvisibility=hidden", *SANITIZERS, "-ldl", "-lpthread",
    )  # fmt: skip
    program = compile_native(
        native_build / "program-sanitized", [PROGRAM_SOURCE], "-O1", "-pthread", *SANITIZERS
    )
    return runtime, library, program


@pytest.mark.parametrize(
    ("arguments", "functions", "counts", "thread_cpu"),
    [
        (["threads", "4", "3000"], ["close"], [12_000], False),
        (["threads", "4", "300"], ["close"], [1_200], True),  # 40-byte records
        (["fork", "3", "5"], ["close"], [6, 5], False),
        (["exec", "2", "3"], ["close"], [2, 3], False),
        (["errno"], ["open", "close"], [3], False),
        (["aliases", "{tmp}"], ["open", "openat", "creat"], [7], False),
        (["catalog", "{tmp}"], list(CATALOG), [len(CATALOG)], False),
        (["enumerate", "group"], list(ENUMERATIONS["group"]), None, False),
    ],
    ids=["threads", "threads-cpu", "fork", "exec", "errno", "aliases", "catalog", "enumerate"],
)
def test_sanitizers_find_nothing(
    sanitized: tuple[str, str, str],
    out: Path,
    tmp_path: Path,
    arguments: list[str],
    functions: list[str],
    counts: list[int] | None,
    thread_cpu: bool,
) -> None:
    runtime, library, program = sanitized
    argv = [program, *(a.replace("{tmp}", str(tmp_path)) for a in arguments)]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CUTAWAY_", "LD_"))}
    env = {
        **base,
        **environment_for(functions, out, thread_cpu=thread_cpu, tsc_hz=TSC_HZ, environment=base),
        "LD_PRELOAD": f"{runtime}:{library}",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    }
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Sanitizer" not in done.stderr and "runtime error" not in done.stderr
    if counts is None:  # enumerate: two passes, each entry a call, plus 3 calls per pass
        counts = [sum(int(entries) + 3 for entries in done.stdout.split())]
    files = _in_process_order(out)
    assert [len(f) for f in files] == counts
