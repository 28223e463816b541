"""What the uprobes probe checks before anything runs, each refusal in words that say what to
do: not root, no uprobes in the kernel, a file that is not ELF, a binary without function
symbols, an unknown function (named, with the nearest ones the binary has). Binaries are
compiled here."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cutaway.probes.base import ProbeError
from cutaway.probes.uprobes.elf import NotElf, function_symbols
from cutaway.probes.uprobes.settings import UprobeTarget
from cutaway.probes.uprobes.targets import (
    ResolvedTarget,
    check_names,
    check_system,
    merge_same_files,
    resolve_target,
)

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

SOURCE = """
__attribute__((noinline)) int parse_request(int x) { return x * 3; }
__attribute__((noinline)) int parse_response(int x) { return x + 1; }
int main(int argc, char **argv) { (void)argv; return parse_request(argc) + parse_response(argc); }
"""


def compile_program(directory: Path, *flags: str) -> Path:
    source = directory / "p.c"
    source.write_text(SOURCE)
    binary = directory / ("p" + "".join(flags).replace("-", "_"))
    subprocess.run(["cc", "-O1", *flags, "-o", str(binary), str(source)], check=True)
    return binary


def test_the_symbols_of_a_binary_are_its_functions(tmp_path: Path) -> None:
    symbols = function_symbols(compile_program(tmp_path))
    assert {"main", "parse_request", "parse_response"} <= symbols.functions
    assert symbols.has_symtab


def test_an_unknown_function_is_named_with_the_nearest_ones(tmp_path: Path) -> None:
    binary = compile_program(tmp_path)
    with pytest.raises(ProbeError) as caught:
        resolve_target(UprobeTarget(str(binary), ("parse_requests",)))
    message = str(caught.value)
    assert "no function 'parse_requests'" in message and str(binary) in message
    assert "nearest: parse_request, parse_response" in message


def test_a_stripped_binary_without_exports_is_refused_with_what_to_do(tmp_path: Path) -> None:
    binary = compile_program(tmp_path, "-s")
    with pytest.raises(ProbeError, match=r"has no function symbols.*debug symbols"):
        resolve_target(UprobeTarget(str(binary), ("parse_request",)))


def test_a_stripped_binary_keeps_its_exported_functions(tmp_path: Path) -> None:
    binary = compile_program(tmp_path, "-s", "-rdynamic")
    symbols = function_symbols(binary)
    assert not symbols.has_symtab and "parse_request" in symbols.functions
    with pytest.raises(ProbeError, match=r"exported functions \(it is stripped"):
        resolve_target(UprobeTarget(str(binary), ("nowhere",)))


def test_a_file_that_is_not_elf_is_named(tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(NotElf, match="not an ELF binary"):
        function_symbols(script)
    with pytest.raises(ProbeError, match=r"script\.sh is not an ELF binary"):
        resolve_target(UprobeTarget(str(script), ("f",)))


def test_a_missing_binary_or_command_is_named(tmp_path: Path) -> None:
    with pytest.raises(ProbeError, match="no such file"):
        resolve_target(UprobeTarget(str(tmp_path / "absent"), ("f",)))
    with pytest.raises(ProbeError, match="no program named 'no-such-program-here'"):
        resolve_target(UprobeTarget("no-such-program-here", ("f",)))


def test_not_root_and_no_uprobes_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ProbeError, match="needs root"):
        check_system(euid=1000)
    with pytest.raises(ProbeError, match="this kernel has no uprobes"):
        check_system(euid=0, pmu=tmp_path / "uprobe")


def test_names_that_are_not_symbols_are_refused() -> None:
    with pytest.raises(ValueError, match="not a function name"):
        check_names([UprobeTarget("/bin/x", ('f"); system("x',))])


def test_one_function_in_two_binaries_is_one_phase_of_two_builds() -> None:
    check_names([UprobeTarget("/bin/x", ("f",)), UprobeTarget("/bin/y", ("f",))])
    merged = merge_same_files(
        [
            ResolvedTarget("x", "/bin/x", ("f", "g")),
            ResolvedTarget("/bin/x", "/bin/x", ("g", "h")),
            ResolvedTarget("/bin/y", "/bin/y", ("f",)),
        ]
    )
    assert merged == (
        ResolvedTarget("x", "/bin/x", ("f", "g", "h")),
        ResolvedTarget("/bin/y", "/bin/y", ("f",)),
    )
