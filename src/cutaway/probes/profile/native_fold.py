"""The C stack folder (native/cw_fold.c, built by ``pip install`` next to the package): the
same folding as :mod:`cutaway.probes.profile.fold`, byte for byte, several times faster.

It is a small executable, like the project's other native parts (the fork server, the calls
calibrator): the text goes in on its standard input (or as a file it reads itself), the folded
text comes out on its standard output. The Python folder stays the reference, and the fallback
when the executable is missing (a source tree never built) or fails."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from cutaway.probes.profile.fold import Folder, FoldOptions, folded_text

FOLDER_NAME = "cw_fold"
DEFAULT_OPTIONS = FoldOptions()


def folder_path() -> str | None:
    """The cw_fold installed with this package, or None when it was not built."""
    path = Path(__file__).resolve().parent.parent.parent / FOLDER_NAME
    return str(path) if os.access(path, os.X_OK) else None


def _argv(options: FoldOptions) -> list[str] | None:
    path = folder_path()
    if path is None or options.event is not None:  # a chosen event type: Python only
        return None
    flags = [
        *(["--kernel"] if options.annotate_kernel else []),
        *(["--jit"] if options.annotate_jit else []),
    ]
    return [path, *flags]


def _run(argv: list[str], data: bytes | None) -> str | None:
    done = subprocess.run(argv, input=data, capture_output=True, check=False)
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8")


def fold_text_natively(text: str, options: FoldOptions | None = None) -> str | None:
    """``text`` folded by cw_fold, or None when it cannot be (not built, or text that is not
    valid UTF-8 once encoded: a lone surrogate)."""
    argv = _argv(options or FoldOptions())
    if argv is None:
        return None
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return _run(argv, data)


def fold_file_natively(path: Path, options: FoldOptions | None = None) -> str | None:
    """The perf script output in ``path`` folded by cw_fold, read as
    ``bytes.decode("utf-8", errors="replace")`` reads it; None when cw_fold is not built or
    fails."""
    argv = _argv(options or FoldOptions())
    if argv is None:
        return None
    return _run([*argv, str(path)], None)


def fold_perf_script(
    text: str, options: FoldOptions = DEFAULT_OPTIONS, *, native: bool = True
) -> str:
    """perf script output -> folded text, as ``inferno-collapse-perf`` writes it: by the C
    folder when it is built, else (or with
    ``native=False``) by :class:`cutaway.probes.profile.fold.Folder`."""
    if native:
        folded = fold_text_natively(text, options)
        if folded is not None:
            return folded
    return folded_text(Folder(options).fold(text))
