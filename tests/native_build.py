"""C test programs and libraries built from native/ by the integration tests: with the warnings
the package's own build treats as errors, and AddressSanitizer and UBSan when asked for. Each
test module builds into its own directory, the ``native_build`` fixture (tests/conftest.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NATIVE = ROOT / "native"
STRICT = ["-Wall", "-Wextra", "-Werror", "-std=gnu11"]
SANITIZERS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"]


def compile_native(output: Path, sources: Sequence[Path], *flags: str) -> str:
    """Compile ``sources`` with gcc into ``output`` (STRICT plus ``flags``); its path."""
    command = ["gcc", *STRICT, *flags, "-o", str(output), *map(str, sources)]
    subprocess.run(command, check=True, capture_output=True)
    return str(output)
