"""The C folder (native/cw_fold.c) against the Python folder, its reference: the same output
byte for byte on every recorded perf script output (and inferno's golden files), on hostile
symbols, and on random bytes, where it must give output or an error, never crash or hang."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from cutaway.probes.profile.fold import (
    Folder,
    FoldOptions,
    fold_lines,
    folded_text,
)
from cutaway.probes.profile.native_fold import (
    fold_file_natively,
    fold_perf_script,
    fold_text_natively,
    folder_path,
)
from tests.hostile import HOSTILE

FIXTURES = Path(__file__).parent.parent / "fixtures" / "perf"
ALL = FoldOptions(annotate_kernel=True, annotate_jit=True)
OPTIONS = (FoldOptions(), FoldOptions(annotate_kernel=True), FoldOptions(annotate_jit=True), ALL)

pytestmark = pytest.mark.skipif(folder_path() is None, reason="cw_fold not built (pip install .)")


def _python(text: str, options: FoldOptions) -> str:
    return fold_perf_script(text, options, native=False)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.txt")), ids=lambda path: path.stem)
def test_the_c_folder_folds_every_fixture_as_python_does(path: Path) -> None:
    text = path.read_text()
    for options in OPTIONS:
        python = _python(text, options)
        assert fold_text_natively(text, options) == python
        assert fold_file_natively(path, options) == python
        assert folded_text(fold_lines(text.split("\n"), Folder(options))) == python


@pytest.mark.parametrize("name", ["user", "kernel", "dwarf", "truncated", "hostile"])
def test_the_c_folder_writes_inferno_s_golden_output(name: str) -> None:
    path = FIXTURES / f"{name}.txt"
    assert fold_file_natively(path) == (FIXTURES / f"{name}.folded").read_text()
    assert fold_file_natively(path, ALL) == (FIXTURES / f"{name}.all.folded").read_text()


def _hostile_script() -> str:
    """Every hostile string as a symbol, a module, a process name and an event name, with
    comments, whitespace-only lines, inline frames and Rust leftovers between them."""
    events = []
    for index, name in enumerate(HOSTILE):
        flat = name.replace("\n", " ")
        events += [
            f"{flat} {index + 1}  1.0:    1000 cpu-clock: \n\t  118d {flat}+0x3 ({flat})\n"
            f"\t  2 [unknown] (/usr/lib/{flat}.so)\n\t  3 a->b->{flat} (/tmp/perf-1.map)",
            f"# {flat}\nprog {index}/{index} 2.0: 7 {flat}: 0 x: {flat}",
            f"java {index} 3.0: 5 cpu-clock:\n\t 1 Lcom/x;{flat}(I)V (/vmlinux)\n  \t",
            f"p {index} 4.0: 99 cpu-clock:\n\t 1 core..ptr..{flat}$LT$T$GT$::h0123456789abcdef"
            " (/ko.ko)\n\u3000",
        ]
    return "\n\n".join(events) + "\n"


def test_hostile_input_folds_the_same_in_c() -> None:
    text = _hostile_script()
    for options in OPTIONS:
        assert fold_text_natively(text, options) == _python(text, options)


def _garbage(seed: int) -> bytes:
    """Random bytes, and random splices of a real perf script output with bytes and the
    characters the parser looks at, so that the fuzzing reaches deep into the parser."""
    generator = random.Random(seed)
    real = (FIXTURES / "kernel.txt").read_bytes()
    alphabet = [
        *(b" ", b"\n", b"\t", b":", b"/", b"(", b")", b"->", b"+0x", b"$LT$", b"#", b"_[i]"),
        *(b"\xc2\x85", b"\xe2\x80\xa8", b"\xe3\x80\x80", b"\xff", b"\xe0\x80", b"\xf0\x90\x80"),
        *(b"123 ", b"1/2 ", b"cpu-clock:", b"h0123456789abcdef", b"[unknown]", b"vmlinux"),
    ]
    pieces = []
    for _ in range(generator.randrange(1, 60)):
        kind = generator.random()
        if kind < 0.3:
            start = generator.randrange(len(real))
            pieces.append(real[start : start + generator.randrange(400)])
        elif kind < 0.7:
            pieces.append(generator.choice(alphabet))
        else:
            pieces.append(generator.randbytes(generator.randrange(1, 40)))
    return b"".join(pieces)


@pytest.mark.parametrize("seed", range(300))
def test_random_bytes_fold_the_same_and_never_crash(seed: int, tmp_path: Path) -> None:
    data = _garbage(seed)
    path = tmp_path / "garbage.txt"
    path.write_bytes(data)
    folder = folder_path()
    assert folder is not None
    for flags, options in (([], FoldOptions()), (["--kernel", "--jit"], ALL)):
        done = subprocess.run([folder, *flags, str(path)], capture_output=True, timeout=20)
        assert done.returncode == 0, done.stderr  # no signal (a negative code), no error
        python = _python(data.decode("utf-8", errors="replace"), options)
        assert done.stdout.decode("utf-8") == python


def test_an_unreadable_input_is_an_error_with_its_name(tmp_path: Path) -> None:
    folder = folder_path()
    assert folder is not None
    missing = tmp_path / "missing.txt"
    done = subprocess.run([folder, str(missing)], capture_output=True, text=True, timeout=20)
    assert done.returncode == 2
    assert str(missing) in done.stderr
    done = subprocess.run([folder, "--bogus"], capture_output=True, text=True, timeout=20)
    assert done.returncode == 2 and "--bogus" in done.stderr
