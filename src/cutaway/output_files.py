"""Files cutaway writes for the user (exports of every format, ``export -o``, ``check
--summary``, ``bisect --export-json``): checked before any work starts, then written whole or
not at all, and never in place of something that is not a file.

One rule for every path, decided by what is there when the command starts (:func:`output_plan`):

- a regular file, or nothing yet (in a directory that exists and can be written): written
  atomically. The text goes to a temporary file beside it, flushed to the disk (fsync) and
  renamed over the target (``os.replace``, atomic within a filesystem): a full disk, a crash or
  an I/O error leaves the earlier file of that name, or none, but never a truncated one. See
  https://lwn.net/Articles/457667/ for why the fsync comes before the rename. A symbolic link
  to such a file is followed: the file it names is replaced, the link stays.
- a character device (``/dev/null``, a terminal), a FIFO, ``-`` or a descriptor of this process
  (``/dev/stdout``, ``/dev/fd/3``): written through, as ``>`` in a shell would. Renaming a
  file over ``/dev/null`` would replace the device for every program on the machine (cutaway
  runs as root in CI); a reader that goes away (``| head``) ends the writing quietly. A
  character device is opened once when checked: ``/dev/tty`` in a process with no controlling
  terminal (``setsid``, cron, a CI runner) is refused then, not after the work.
- anything else (a directory, a block device, a socket, a missing directory): refused before
  any work, naming the option, the path and what is there.

A file appended to (``$GITHUB_STEP_SUMMARY``, :func:`append_output_file`) is checked by the
same rule and appended to in place (what is there stays); a FIFO is opened without waiting
for a reader: with none, nothing is written (no hang).

:func:`store_path_problem` is the store's own rule (an SQLite file and the journals beside it:
regular files or nothing, never a device). This module imports nothing of cutaway but
cutaway.visible (a leaf): the CLI, the spec readers and the store all use it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Collection, Iterable, Sequence
from typing import Literal

from cutaway.value_class import value_class

# How a path is written: replaced atomically, or written through (see the module docstring).
ATOMIC: Literal["atomic"] = "atomic"
THROUGH: Literal["through"] = "through"
STANDARD_OUTPUT = "-"
# Symbolic links followed, at most, when looking for a descriptor (as the kernel's MAXSYMLINKS).
_MAX_LINKS = 40
# Files SQLite keeps beside a database (rollback journal, write-ahead log, its shared memory).
STORE_COMPANIONS = ("-journal", "-wal", "-shm")
# The device numbers of /dev/tty, the controlling terminal of whichever process opens it.
_CONTROLLING_TERMINAL = (5, 0)


class OutputPathError(ValueError):
    """An output path that cannot be written, found before any work (bad input: exit 2)."""


class OutputWriteError(Exception):
    """Writing an output file failed (a full disk, an I/O error); nothing was left behind."""


@value_class
class OutputPlan:
    """How a path will be written: ``how`` is ATOMIC or THROUGH; ``descriptor`` is set when
    the path names a descriptor of this process (``-``, ``/dev/stdout``, ``/dev/fd/N``)."""

    how: Literal["atomic", "through"]
    descriptor: int | None = None


def output_plan(path: str) -> OutputPlan | str:
    """How ``path`` would be written now, or why it cannot be, in words. Paths in the words
    are quoted with repr(), which shows a control character escaped (``\\x1b``) instead of
    sending it to the terminal."""
    if not path:
        return "an empty path"
    if "\0" in path:
        return "a path cannot contain a NUL byte (\\0)"
    descriptor = own_descriptor(path)
    if descriptor is not None:
        return _descriptor_plan(descriptor)
    try:
        status = os.stat(path)  # through symbolic links, to what they name
    except (FileNotFoundError, NotADirectoryError):
        if path.endswith("/"):  # realpath would drop the slash and make a file of the name
            return "ends with '/', which names a directory, not a file"
        return _new_file_plan(path)
    except OSError as error:
        return error.strerror or str(error)
    return _existing_plan(path, status.st_mode)


def append_plan(path: str) -> OutputPlan | str:
    """How ``path`` would be appended to now, or why it cannot be: as :func:`output_plan`,
    but an existing file is written through (in place), so only the file itself must be
    writable, not its directory."""
    plan = output_plan(path)
    if isinstance(plan, OutputPlan) and plan.how == THROUGH:
        return plan
    with contextlib.suppress(OSError, ValueError):
        if stat.S_ISREG(os.stat(path).st_mode) and os.access(path, os.W_OK):
            return OutputPlan(THROUGH)
    return plan


def output_path_problem(path: str) -> str | None:
    """Why a file could not be written at ``path`` now, in words, or None when it can (see
    :func:`output_plan`)."""
    plan = output_plan(path)
    return plan if isinstance(plan, str) else None


def _existing_plan(path: str, mode: int) -> OutputPlan | str:
    if stat.S_ISREG(mode):
        if not os.access(path, os.W_OK):
            return "the file exists and cannot be written (permission denied)"
        return _new_file_plan(path)  # the rename over it needs its directory, as a new file
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        if not os.access(path, os.W_OK):
            return f"the {_kind(mode)} cannot be written (permission denied)"
        if stat.S_ISCHR(mode):
            return _device_problem(path) or OutputPlan(THROUGH)
        return OutputPlan(THROUGH)
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    return f"is a {_kind(mode)}, not a file, a character device or a FIFO"


def _device_problem(path: str) -> str | None:
    """Why a character device cannot be opened for writing now, or None. It is opened and
    closed at once, as the write at the end will open it: ``/dev/tty`` is a device node on
    every machine, but opens only in a process with a controlling terminal (not under
    ``setsid``, cron or most CI runners), and a terminal whose other side has gone refuses
    too. Not done for a FIFO: opening one waits for its reader."""
    try:
        handle = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ENXIO and _is_controlling_terminal(path):
            return "this process has no controlling terminal for /dev/tty to name"
        return f"the character device cannot be opened: {error.strerror or error}"
    os.close(handle)
    return None


def _is_controlling_terminal(path: str) -> bool:
    """Whether ``path`` is the device /dev/tty is (major 5, minor 0: "this process's
    terminal"), by whatever name."""
    with contextlib.suppress(OSError):
        device = os.stat(path).st_rdev
        return (os.major(device), os.minor(device)) == _CONTROLLING_TERMINAL
    return False


def _new_file_plan(path: str) -> OutputPlan | str:
    """A file written atomically: its directory must exist and be writable."""
    target = _real_path(path)  # through links: the file they name, or would create
    directory = os.path.dirname(target)
    if not os.path.exists(directory):
        return f"no such directory: {directory!r}"
    if not os.path.isdir(directory):
        return f"{directory!r} is not a directory"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"cannot write in {directory!r} (permission denied, or a read-only filesystem)"
    return OutputPlan(ATOMIC)


def _real_path(path: str) -> str:
    """The path with its symbolic links resolved, as far as they can be read: a link this
    process may not read (another process's ``/proc/PID/fd/N``) raises in realpath, and the
    stat that follows says why in words instead."""
    try:
        return os.path.realpath(path)
    except OSError:
        return os.path.abspath(path)


def _descriptor_plan(descriptor: int) -> OutputPlan | str:
    try:
        mode = os.fstat(descriptor).st_mode
    except OSError:
        return f"names descriptor {descriptor}, which is not open"
    if stat.S_ISDIR(mode) or stat.S_ISBLK(mode):
        return f"names descriptor {descriptor}, a {_kind(mode)}"
    return OutputPlan(THROUGH, descriptor)


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device (a disk)"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISLNK, "symbolic link"),
    )
    return next((name for test, name in kinds if test(mode)), "special file")


def own_descriptor(path: str) -> int | None:
    """The descriptor of this process that ``path`` names (``-``, ``/dev/stdout``,
    ``/dev/fd/N``, ``/proc/self/fd/N``, or a link to one), else None. Such a path is written
    to the descriptor itself: reopening it would truncate a file the shell opened for
    appending (``>>``), and its link in /proc names a pipe that no rename can reach."""
    if path == STANDARD_OUTPUT:
        return 1
    prefixes = ("/dev/fd/", "/proc/self/fd/", f"/proc/{os.getpid()}/fd/")
    current = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        for prefix in prefixes:
            number = current.removeprefix(prefix)
            if number != current and number.isdigit():
                return int(number)
        try:
            link = os.readlink(current)
        except OSError:  # not a link (or not there): not a descriptor
            return None
        current = os.path.normpath(os.path.join(os.path.dirname(current), link))
    return None


def store_path_problem(path: str) -> str | None:
    """Why the SQLite store cannot be at ``path``, in words, or None: the path and the journals
    SQLite keeps beside it (``-journal``, ``-wal``, ``-shm``) must each be a regular file or
    nothing yet. Checked before SQLite creates anything: on ``/dev/null`` it would leave a
    ``/dev/null-journal`` behind."""
    if "\0" in path:
        return "a path cannot contain a NUL byte (\\0)"
    if path.endswith("/"):
        return "ends with '/', which names a directory, not a file"
    for name in (path, *(path + suffix for suffix in STORE_COMPANIONS)):
        try:
            mode = os.stat(name).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue  # nothing yet; a missing directory is the store's to create
        except OSError as error:
            return f"{name!r}: {error.strerror or error}"
        if not stat.S_ISREG(mode):
            which = "" if name == path else f"{name!r} beside it "
            return f"{which}is a {_kind(mode)}, not a regular file"
    return None


def check_output_paths(
    outputs: Iterable[tuple[str, str]],
    keep: Sequence[tuple[str, str]] = (),
    appended: Collection[str] = (),
) -> None:
    """Raise OutputPathError for the first output, an (option, path) pair, that cannot be
    written, that another output also names, or that names a file in ``keep`` (what, path):
    an export must never replace the store or the experiment file it came from, nor a file
    be appended to them (the options in ``appended``). Outputs written through (``-``,
    ``/dev/null``) may be named more than once."""
    seen: dict[str, str] = {}
    kept = {_real_path(path): what for what, path in keep if path}
    for option, path in outputs:
        target = _real_path(path) if path and "\0" not in path else path
        if target in kept:
            verb = "would append to" if option in appended else "would replace"
            raise OutputPathError(f"{option} {path!r} {verb} {kept[target]}")
        plan = append_plan(path) if option in appended else output_plan(path)
        if isinstance(plan, str):
            raise OutputPathError(f"{option} {path!r}: {plan}")
        # A file appended to is one file still: an export may not replace it as well.
        if plan.how == THROUGH and not (option in appended and _is_regular_file(path)):
            continue
        if target in seen:
            raise OutputPathError(f"{option} {path!r} names the same file as {seen[target]}")
        seen[target] = option


def _is_regular_file(path: str) -> bool:
    with contextlib.suppress(OSError, ValueError):
        return stat.S_ISREG(os.stat(path).st_mode)
    return False


def write_output_file(path: str, text: str, option: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` by the rule of :func:`output_plan`: a file atomically
    (the whole text or, on any error, the file as it was before and no temporary file), a
    device, a FIFO or a descriptor written through. Raises OutputWriteError naming ``option``
    and the path (also when the path became something that cannot be written since it was
    checked). A reader that closes a pipe early ends the writing without error."""
    plan = output_plan(path)
    if isinstance(plan, str):
        raise OutputWriteError(f"cannot write {option} {path!r}: {plan}")
    if plan.descriptor is not None:
        _write_descriptor(plan.descriptor, text, option, path)
    elif plan.how == THROUGH:
        _write_through(path, text, option)
    else:
        _write_atomically(path, text, option)


def append_output_file(path: str, text: str, option: str) -> None:
    """Append ``text`` (UTF-8) to ``path`` by the rule of :func:`output_plan`: a file (made if
    missing) keeps what it holds, a device or a descriptor is written through, a FIFO only
    when a reader has it open (it is opened without waiting: a FIFO nobody reads would hang
    the command forever). Raises OutputWriteError naming ``option`` and the path."""
    plan = append_plan(path)
    if isinstance(plan, str):
        raise OutputWriteError(f"cannot append to {option} {path!r}: {plan}")
    if plan.descriptor is not None:
        _write_descriptor(plan.descriptor, text, option, path)
        return
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOCTTY | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        handle = os.open(path, flags, 0o666)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a FIFO with no reader (O_NONBLOCK says so, at once)
            raise OutputWriteError(
                f"cannot append to {option} {path!r}: a FIFO that nobody reads"
            ) from None
        raise _through_error(option, path, error) from None
    try:
        # A reader is there: writes may wait for it now, as a shell's >> would.
        os.set_blocking(handle, True)
        _write_shown(handle, text, option, path)
    except OSError as error:
        raise _through_error(option, path, error) from None
    finally:
        with contextlib.suppress(OSError):
            os.close(handle)


def _write_descriptor(descriptor: int, text: str, option: str, path: str) -> None:
    """``-`` and ``/dev/stdout`` go through sys.stdout (after what it holds already, and
    through its broken-pipe guard, cli/streams.py); other descriptors are written directly.
    Control characters are shown escaped on a terminal, as every report printed there."""
    stream = {1: sys.stdout, 2: sys.stderr}.get(descriptor)
    if os.isatty(descriptor):
        from cutaway.visible import visible

        text = visible(text, keep_newlines=True)
    try:
        if stream is not None:
            stream.write(text)
            stream.flush()
        else:
            _write_all(descriptor, text.encode("utf-8"))
    except BrokenPipeError:
        return  # the reader has gone, as with `| head`: nothing is wrong with the output
    except OSError as error:
        raise _through_error(option, path, error) from None


def _write_through(path: str, text: str, option: str) -> None:
    """A character device or a FIFO: opened for writing, never created nor replaced. A FIFO
    waits for its reader, as a shell's ``>`` does."""
    try:
        handle = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        raise _through_error(option, path, error) from None
    try:
        if stat.S_ISREG(os.fstat(handle).st_mode):  # replaced by a file since it was checked
            os.close(handle)
            handle = -1
            _write_atomically(path, text, option)
            return
        _write_shown(handle, text, option, path)
    except OSError as error:
        raise _through_error(option, path, error) from None
    finally:
        if handle >= 0:
            with contextlib.suppress(OSError):
                os.close(handle)


def _write_shown(handle: int, text: str, option: str, path: str) -> None:
    """``text`` to an open descriptor, control characters escaped on a terminal; a reader that
    has gone (``| head``) is nothing wrong with the output."""
    if os.isatty(handle):
        from cutaway.visible import visible

        text = visible(text, keep_newlines=True)
    try:
        _write_all(handle, text.encode("utf-8"))
    except BrokenPipeError:
        return
    except OSError as error:
        raise _through_error(option, path, error) from None


def _write_all(handle: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view) :]


def _through_error(option: str, path: str, error: OSError) -> OutputWriteError:
    reason = error.strerror or str(error)
    return OutputWriteError(f"cannot write {option} {path!r}: {reason}")


def _write_atomically(path: str, text: str, option: str) -> None:
    """Write ``text`` to a temporary file beside the target and rename it over the target. A
    symbolic link is written through, as opening it would."""
    target = _real_path(path)
    directory = os.path.dirname(target)
    try:
        import tempfile  # here only: a command that writes no file does not import it

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
        _still_replaceable(target)
        os.replace(temporary, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise _write_error(option, path, error) from None
        raise
    _sync_directory(directory)


def _still_replaceable(target: str) -> None:
    """Raise when ``target`` became something else than a file since it was checked (a
    device made while the experiment ran): a rename would replace it."""
    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(target).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(0, f"it is now a {_kind(mode)}, which is never replaced")


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
