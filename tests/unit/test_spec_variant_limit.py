"""A matrix is counted before it is expanded: more variants than the limit (10,000 unless the
file's ``max_variants`` or ``--max-variants`` says otherwise) is refused with the count, naming
the file, line and key, instead of growing to gigabytes."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from cutaway.cli import commands as cli
from cutaway.cli import parser as parser_module
from cutaway.spec import SpecError, load_spec, quick_spec
from cutaway.spec.matrix import DEFAULT_MAX_VARIANTS
from cutaway.spec.quick import parameter_list, parameter_scan


def matrix_file(tmp_path: Path, sizes: list[int], *, extra: str = "", variants: int = 1) -> Path:
    lines = ['name = "sweep"', 'command = "echo {p0}"', extra, "", "[matrix]"]
    lines += [f"p{index} = {list(range(size))}" for index, size in enumerate(sizes)]
    for number in range(variants):
        lines += ["", "[[variants]]", f'name = "v{number}"']
    path = tmp_path / "sweep.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_default_limit_is_ten_thousand() -> None:
    assert DEFAULT_MAX_VARIANTS == 10_000
    run_help = parser_module._subparsers(cli.build_parser())["run"].format_help()
    assert f"default {DEFAULT_MAX_VARIANTS}" in " ".join(run_help.split())


def test_a_matrix_over_the_limit_is_refused_with_its_count(tmp_path: Path) -> None:
    # 2 declared variants x 100 x 60 = 12,000 variants: cheap to expand, and still refused.
    path = matrix_file(tmp_path, [100, 60], variants=2)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    error = caught.value
    assert (error.path, error.line, error.key) == (str(path), 5, "matrix")
    assert "12000 variants" in error.message
    assert "2 variants x 100 x 60" in error.message
    assert "10000" in error.message and "max_variants" in error.message


def test_five_parameters_of_forty_values_fail_fast(tmp_path: Path) -> None:
    """The issue's case: 40**5 = 102,400,000 variants, counted, never built."""
    path = matrix_file(tmp_path, [40] * 5)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert "102400000 variants" in caught.value.message


def test_the_files_max_variants_raises_the_limit(tmp_path: Path) -> None:
    spec = load_spec(matrix_file(tmp_path, [120, 100], extra="max_variants = 12000"))
    assert len(spec.variants) == 12_000


def test_the_files_max_variants_may_lower_it(tmp_path: Path) -> None:
    path = matrix_file(tmp_path, [3, 3], extra="max_variants = 8")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert "9 variants" in caught.value.message and "8" in caught.value.message


def test_the_option_overrides_the_file(tmp_path: Path) -> None:
    path = matrix_file(tmp_path, [3, 3], extra="max_variants = 8")
    assert len(load_spec(path, max_variants=9).variants) == 9
    with pytest.raises(SpecError) as caught:
        load_spec(matrix_file(tmp_path, [3, 3]), max_variants=4)
    assert "--max-variants" in caught.value.message


@pytest.mark.parametrize("value", ["0", "-1", '"many"', "1.5", "true"])
def test_a_bad_max_variants_is_refused(tmp_path: Path, value: str) -> None:
    path = matrix_file(tmp_path, [2], extra=f"max_variants = {value}")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert (caught.value.line, caught.value.key) == (3, "max_variants")


def test_a_bad_max_variants_option_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(matrix_file(tmp_path, [2]), max_variants=0)
    assert caught.value.key == "--max-variants"


def test_quick_mode_parameters_are_counted_too() -> None:
    parameters = [parameter_list(f"p{index}", ",".join(map(str, range(40)))) for index in range(5)]
    with pytest.raises(SpecError) as caught:
        quick_spec(["echo {p0}"], parameters=parameters)
    error = caught.value
    assert error.key == "--parameter-scan/--parameter-list"
    assert "102400000 variants" in error.message and "--max-variants" in error.message
    spec = quick_spec(["echo {p0}"], parameters=parameters[:2], max_variants=1600)
    assert len(spec.variants) == 1600


def test_a_long_scan_follows_the_same_limit() -> None:
    with pytest.raises(SpecError) as caught:
        parameter_scan("N", "1", "20000")
    assert "--max-variants" in caught.value.message
    assert len(parameter_scan("N", "1", "20000", max_values=20_000).values) == 20_000


def test_the_command_line_refuses_it_before_anything_runs(tmp_path: Path) -> None:
    """End to end, in a process whose address space is capped at 1 GiB: the issue's matrix
    once ran out of memory; now it is an error naming file, line and key, exit 2."""
    path = matrix_file(tmp_path, [40] * 5)

    def cap_memory() -> None:
        limit = 1 << 30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    result = subprocess.run(
        [sys.executable, "-m", "cutaway", "run", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap_memory,
    )
    assert result.returncode == 2, result.stderr
    assert f"{path}:5: matrix: 102400000 variants" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / ".cutaway").exists()

    capped = subprocess.run(
        [sys.executable, "-m", "cutaway", "run", str(path), "--max-variants", "100"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert capped.returncode == 2 and "--max-variants" in capped.stderr
