"""Files cutaway writes for the user (``--export-json``, ``export -o`` ...): checked before any
work starts, and then written whole or not at all.

A path is checked when a command starts, before the first run is measured, so that a typo in
a directory costs no measurement. A file is written to a temporary file beside it, flushed to
the disk (fsync) and renamed over the target (``os.replace``, atomic within a filesystem): a
full disk, a crash or an I/O error leaves the earlier file of that name, or none, but never a
truncated one. See https://lwn.net/Articles/457667/ for why the fsync comes before the rename.

This module imports nothing of cutaway: the CLI and the spec readers both use it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Sequence


class OutputPathError(ValueError):
    """An output path that cannot be written, found before any work (bad input: exit 2)."""


class OutputWriteError(Exception):
    """Writing an output file failed (a full disk, an I/O error); nothing was left behind."""


def output_path_problem(path: str) -> str | None:
    """Why a file could not be written at ``path`` now, in words, or None when it can: the
    directory exists and is writable, and the path is not a directory or a read-only file.
    Paths are quoted with repr(), which shows a control character escaped (``\\x1b``)
    instead of sending it to the terminal."""
    if not path:
        return "an empty path"
    if "\0" in path:
        return "a path cannot contain a NUL byte (\\0)"
    target = os.path.realpath(path)  # through a symbolic link, to the file it names
    if os.path.isdir(target):
        return "is a directory, not a file"
    directory = os.path.dirname(target)
    if not os.path.exists(directory):
        return f"no such directory: {directory!r}"
    if not os.path.isdir(directory):
        return f"{directory!r} is not a directory"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"cannot write in {directory!r} (permission denied, or a read-only filesystem)"
    if os.path.exists(target) and not os.access(target, os.W_OK):
        return "the file exists and cannot be written (permission denied)"
    return None


def check_output_paths(
    outputs: Iterable[tuple[str, str]], keep: Sequence[tuple[str, str]] = ()
) -> None:
    """Raise OutputPathError for the first output, an (option, path) pair, that cannot be
    written, that another output also names, or that names a file in ``keep`` (what, path):
    an export must never replace the store or the experiment file it came from."""
    seen: dict[str, str] = {}
    kept = {os.path.realpath(path): what for what, path in keep if path}
    for option, path in outputs:
        target = os.path.realpath(path) if path and "\0" not in path else path
        if target in kept:
            raise OutputPathError(f"{option} {path!r} would replace {kept[target]}")
        if target in seen:
            raise OutputPathError(f"{option} {path!r} names the same file as {seen[target]}")
        problem = output_path_problem(path)
        if problem is not None:
            raise OutputPathError(f"{option} {path!r}: {problem}")
        seen[target] = option


def write_output_file(path: str, text: str, option: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically: the whole text or, on any error, the file
    as it was before and no temporary file. Raises OutputWriteError naming ``option`` and the
    path. A symbolic link is written through, as opening it would."""
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory
        )
    except OSError as error:
        raise _write_error(option, path, error) from None
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(text.encode("utf-8"))
            file.flush()
            os.fchmod(file.fileno(), _file_mode(target))
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise _write_error(option, path, error) from None
        raise
    _sync_directory(directory)


def _write_error(option: str, path: str, error: OSError) -> OutputWriteError:
    reason = error.strerror or str(error)
    return OutputWriteError(
        f"cannot write {option} {path!r}: {reason}; nothing was written (a file already "
        "there is left as it was)",
    )


def _file_mode(target: str) -> int:
    """The mode the file would have had if opened for writing: an existing file keeps its
    own, a new one gets 0666 less the umask (mkstemp makes it 0600)."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _sync_directory(directory: str) -> None:
    """Make the rename itself durable; not every filesystem can, which is no error."""
    with contextlib.suppress(OSError):
        handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)
