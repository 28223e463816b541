"""Reading commands read: they never create a store, and they read one they cannot write."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cutaway.model import Spec, Variant
from cutaway.store import Store, StoreError
from tests.cutaway_command import cutaway


def test_a_missing_store_is_an_error_and_nothing_is_created(tmp_path: Path) -> None:
    path = tmp_path / "no-such-dir" / "typo.db"
    with pytest.raises(StoreError, match=r"no store at .*typo\.db"):
        Store(path, create=False)
    assert not path.parent.exists()


@pytest.mark.parametrize("command", [["list"], ["report"], ["export"], ["compare", "1", "2"]])
def test_reading_commands_never_create_a_store(tmp_path: Path, command: list[str]) -> None:
    typo = tmp_path / "typo" / "cutaway.db"
    result = cutaway(*command, "--db", str(typo), cwd=tmp_path)
    assert result.returncode == 1
    assert f"no store at {typo}" in result.stderr
    assert not typo.parent.exists()


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare"
)
def test_a_store_on_a_read_only_mount_is_read(tmp_path: Path) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    with Store(directory / "s.db") as store:
        store.create_experiment(Spec("kept", (Variant("a", ("true",)),), "a"), {}, None, "t")
    reader = textwrap.dedent(f"""\
        from cutaway.store import Store
        store = Store({str(directory / "s.db")!r}, create=False)
        print([row.name for row in store.list_experiments()])
        try:
            store.finish_experiment(1, "complete", None)
        except Exception as error:
            print(type(error).__name__)
        """)
    (tmp_path / "reader.py").write_text(reader)
    # A private mount namespace: the directory is read-only for the reader alone.
    script = (
        f"mount --bind {directory} {directory} && mount -o remount,bind,ro {directory} && "
        f"{sys.executable} {tmp_path / 'reader.py'}"
    )
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["['kept']", "StoreError"]
