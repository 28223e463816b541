"""Command-line overrides of a spec: --ignore-failure, --input and --output among them."""

from __future__ import annotations

from pathlib import Path

import pytest

from cutaway.model import Spec, Variant
from cutaway.spec import SpecError, apply_overrides


def spec() -> Spec:
    return Spec("t", (Variant("a", ("true",)), Variant("b", ("false",), cwd="sub")), "a")


def test_ignore_failure() -> None:
    assert apply_overrides(spec(), {"--ignore-failure": True}).ignore_failure is True
    assert apply_overrides(spec(), {"--ignore-failure": None}).ignore_failure is False


@pytest.mark.parametrize("mode", ["null", "pipe", "inherit"])
def test_output_modes(mode: str) -> None:
    changed = apply_overrides(spec(), {"--output": mode})
    assert [v.stdout for v in changed.variants] == [mode, mode]


def test_output_file_is_absolute_and_its_directory_must_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    changed = apply_overrides(spec(), {"--output": "out.txt"})
    # relative to where each command runs: its cwd, else the current directory
    assert [v.stdout for v in changed.variants] == [
        str(tmp_path / "out.txt"),
        str(tmp_path / "sub" / "out.txt"),
    ]
    for bad in ("nowhere/out.txt", "sub"):
        with pytest.raises(SpecError) as caught:
            apply_overrides(spec(), {"--output": bad})
        assert caught.value.key == "--output"


def test_input_must_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "in.txt").write_text("x")
    (tmp_path / "sub" / "in.txt").write_text("y")
    changed = apply_overrides(spec(), {"--input": "in.txt"})
    assert [v.stdin for v in changed.variants] == [
        str(tmp_path / "in.txt"),
        str(tmp_path / "sub" / "in.txt"),
    ]
    for bad in ("missing.txt", "sub"):
        with pytest.raises(SpecError) as caught:
            apply_overrides(spec(), {"--input": bad})
        assert caught.value.key == "--input"
        assert "missing.txt" in str(caught.value) or "directory" in str(caught.value)
