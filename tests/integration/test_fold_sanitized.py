"""cw_fold built under AddressSanitizer and UndefinedBehaviorSanitizer, fed every recorded perf
script output and random bytes: no memory error, no undefined behaviour, output equal to the
Python folder's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cutaway.probes.profile.fold import FoldOptions
from cutaway.probes.profile.native_fold import fold_perf_script
from tests.unit.test_profile_native_fold import FIXTURES, _garbage

ROOT = Path(__file__).resolve().parents[2]
FLAGS = ["-Wall", "-Wextra", "-Werror", "-std=gnu11", "-O1", "-g"]
SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_cw_fold_is_clean_under_sanitizers(tmp_path: Path) -> None:
    binary = tmp_path / "cw_fold"
    subprocess.run(
        ["cc", *FLAGS, *SANITIZERS, "-o", str(binary), str(ROOT / "native" / "cw_fold.c")],
        check=True,
    )
    # The process exits with its buffers allocated: that is not a leak worth a report.
    environment = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    inputs = [path.read_bytes() for path in sorted(FIXTURES.glob("*.txt"))]
    inputs += [_garbage(seed) for seed in range(1000, 1150)]
    for data in inputs:
        for flags, options in (
            ([], FoldOptions()),
            (["--kernel", "--jit"], FoldOptions(True, True)),
        ):
            done = subprocess.run(
                [str(binary), *flags], input=data, capture_output=True, env=environment, timeout=60
            )
            assert done.returncode == 0, done.stderr.decode(errors="replace")
            text = data.decode("utf-8", errors="replace")
            assert done.stdout.decode() == fold_perf_script(text, options, native=False)
