"""cw_load built under AddressSanitizer and UndefinedBehaviorSanitizer, run in each of its
modes against nginx and against misbehaving servers: no memory error, no undefined
behaviour."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cutaway.probes.load.generator import read_summary
from cutaway.probes.load.hdr import HIGHEST, Histogram
from tests.load_servers import (
    memcached_server,
    misbehaving_server,
    nginx_executable,
    nginx_server,
)

ROOT = Path(__file__).resolve().parents[2]
FLAGS = ["-Wall", "-Wextra", "-Werror", "-std=gnu11", "-O1", "-g", "-pthread"]
SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    binary = tmp_path_factory.mktemp("sanitized") / "cw_load"
    source = ROOT / "native" / "cw_load.c"
    include = ["-I", str(ROOT / "native")]
    subprocess.run(
        ["cc", *FLAGS, *SANITIZERS, *include, "-o", str(binary), str(source), "-lz", "-lm"],
        check=True,
    )
    yield str(binary)


@pytest.fixture(scope="module")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if nginx_executable() is None:
        pytest.skip("nginx not installed")
    with nginx_server(tmp_path_factory.mktemp("nginx")) as (target, _):
        yield target


def run(binary: str, *flags: str) -> subprocess.CompletedProcess[bytes]:
    environment = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    done = subprocess.run([binary, *flags], capture_output=True, env=environment, timeout=60)
    stderr = done.stderr.decode(errors="replace")
    assert "Sanitizer" not in stderr and "runtime error" not in stderr, stderr
    return done


@pytest.mark.parametrize(
    "flags",
    [
        ["--connections", "4", "--duration", "0.5"],
        ["--connections", "4", "--threads", "2", "--requests", "500", "--path", "/big.html"],
        ["--connections", "3", "--rate", "300", "--duration", "1.2", "--warmup", "0.1"],
        ["--connections", "4", "--threads", "2", "--rate", "400", "--duration", "1.1"],
        ["--connections", "3", "--new-connection", "--requests", "200"],
        ["--connections", "2", "--requests", "100", "--path", "/chunked.shtml"],
        ["--connections", "2", "--requests", "20", "--path", "/missing"],
    ],
)
def test_modes_against_nginx_are_clean(
    sanitized: str,
    nginx: str,
    flags: list[str],
    tmp_path: Path,
) -> None:
    log = tmp_path / "intervals.hlog"
    done = run(sanitized, "--target", nginx, "--interval-log", str(log), *flags)
    assert done.returncode in (0, 1)
    read_summary(done.stdout.decode())
    assert log.read_text().startswith("#[Histogram log format version 1.3]")


@pytest.mark.parametrize("mode", ["reset", "garbage", "truncated", "silent", "close-idle"])
def test_misbehaving_servers_are_clean(sanitized: str, mode: str) -> None:
    with misbehaving_server(mode) as (target, _):
        done = run(sanitized, "--target", target, "--duration", "0.5", "--timeout", "0.2")
    assert done.returncode in (0, 1)
    read_summary(done.stdout.decode())


@pytest.mark.parametrize("new_connection", [False, True])
def test_memcached_is_clean(sanitized: str, new_connection: bool) -> None:
    if shutil.which("memcached") is None:
        pytest.skip("memcached not installed")
    with memcached_server({"k": b"v" * 3000}) as target:
        flags = ["--new-connection"] if new_connection else []
        done = run(
            sanitized,
            "--target",
            target,
            "--protocol",
            "memcached",
            "--path",
            "k",
            "--requests",
            "300",
            *flags,
        )
    assert done.returncode == 0
    assert read_summary(done.stdout.decode()).requests == 300


def test_the_c_histogram_answers_as_the_python_one(tmp_path: Path) -> None:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    binary = tmp_path / "cw_hdr_vectors"
    source = ROOT / "native" / "tests" / "cw_hdr_vectors.c"
    subprocess.run(
        ["cc", *FLAGS, *SANITIZERS, "-o", str(binary), str(source), "-lz", "-lm"], check=True
    )
    rng = np.random.default_rng(12)
    cases = {
        "empty": [],
        "edges": [0, 1, 2, 2047, 2048, 2049, 4095, 4096, HIGHEST - 1, HIGHEST],
        "clamped": [-5, HIGHEST + 1, 10**15],
        "one": [123_456_789],
        "lognormal": rng.lognormal(13, 2, 20_000).astype(np.int64).tolist(),
        "uniform": rng.integers(0, 10**10, 5_000).tolist(),
    }
    text = "".join(f"{name} {' '.join(map(str, values))}\n" for name, values in cases.items())
    environment = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1"}
    done = subprocess.run(
        [str(binary)], input=text.encode(), capture_output=True, env=environment, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    lines = done.stdout.decode().splitlines()
    assert len(lines) == len(cases)
    for line in lines:
        name, count, low, high, mean, stdev, *rest = line.split(" ")
        *percentiles, encoded = rest
        histogram = Histogram.of(np.clip(cases[name], 0, HIGHEST)) if cases[name] else Histogram()
        assert histogram.count == int(count), name
        assert (histogram.min, histogram.max) == (int(low), int(high)), name
        assert histogram.mean == pytest.approx(float(mean), rel=1e-12), name
        assert histogram.stdev == pytest.approx(float(stdev), rel=1e-9, abs=1e-9), name
        expected = [histogram.percentile(p) for p in (0, 50, 90, 99, 99.9, 100)]
        assert expected == [int(value) for value in percentiles], name
        assert histogram.encode() == encoded, name
        assert Histogram.decode(encoded) == histogram, name
