"""The bundled examples' helper scripts keep their promises on the real daemons (issue #9)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NSCD_CACHE = Path("/var/cache/nscd")

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


def nscd_running() -> bool:
    return subprocess.run(["nscd", "-g"], capture_output=True).returncode == 0


@needs_nscd
def test_nscd_ctl_leaves_the_persistent_caches_as_it_found_them(tmp_path: Path) -> None:
    if nscd_running():
        pytest.skip("an nscd of the machine's own is running: nscd-ctl would leave it alone")
    control = str(EXAMPLES / "nscd" / "nscd-ctl")
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
