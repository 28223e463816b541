"""The version of what was measured, for `cutaway history`.

An experiment's version is its label: ``--label``, or ``git describe --tags --always --dirty``
of a checkout (``--version-from DIR``). A variant may have a version of its own (two builds
measured in one experiment): ``version`` as written, ``version_from`` (``git describe`` of a
directory) or ``version_command`` (what a shell command prints), read once before the
experiment's first round by :func:`variant_versions` and stored with the variant. ``--tags``
so that a lightweight tag (``git tag v1.2``, the common kind) names the version too."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cutaway.model import Spec, Variant, VersionSource

# A version_command that prints more than this is not printing a version.
MAX_VERSION_CHARS = 200
# What is read of a version_command's output (and of its stderr's end): surrounding blank
# space aside, a version fits many times over.
MAX_VERSION_BYTES = 64 * 1024


class VersionError(ValueError):
    """The version cannot be read: not a directory, not a git checkout (exit 2)."""


def describe_checkout(directory: str | Path, option: str = "--version-from") -> str:
    """``git describe --tags --always --dirty`` of the checkout at ``directory``: the nearest tag
    with the commits since and the short hash (``v1.2-3-gabc1234``), or the short hash alone
    when no tag is reachable, ``-dirty`` when the tree has uncommitted changes. ``option``
    names what asked for it in messages (the option, or a file's key)."""
    path = Path(directory)
    if not path.is_dir():
        raise VersionError(f"{option} {directory}: not a directory")
    try:
        result = subprocess.run(
            ["git", "-C", str(path), "describe", "--tags", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise VersionError(f"{option} {directory}: git describe failed: {error}") from None
    if result.returncode != 0:
        reason = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
        raise VersionError(f"{option} {directory}: not a git checkout with a commit ({reason})")
    return result.stdout.strip()


def variant_versions(
    spec: Spec, environment_of: Callable[[Variant], Mapping[str, str]]
) -> dict[str, str]:
    """Each variant's own version, by name (a variant without one is left out): read now, once
    per distinct source, a command in the variant's environment (``environment_of``) and
    directory. A version that cannot be read raises SpecError naming the file, line, key and
    variant, before anything has run."""
    read: dict[tuple[object, ...], str] = {}
    versions: dict[str, str] = {}
    for variant in spec.variants:
        source = variant.version
        if source is None:
            continue
        environment = dict(environment_of(variant))
        # Copies of one declared variant (its conditions) share a source: read it once.
        key = (source, variant.cwd, tuple(sorted(environment.items())))
        if key not in read:
            read[key] = _read(spec, variant, source, environment)
        versions[variant.name] = read[key]
    return versions


def _read(spec: Spec, variant: Variant, source: VersionSource, env: dict[str, str]) -> str:
    try:
        if source.key == "version_from":
            return describe_checkout(source.text, "version_from")
        if source.key == "version_command":
            return _command_output(source.text, env, variant.cwd, spec.hook_timeout_seconds)
        return source.text
    except VersionError as error:
        raise _located(spec, variant, source, str(error)) from None


def _command_output(command: str, env: dict[str, str], cwd: str | None, timeout: float) -> str:
    """What ``/bin/sh -c command`` prints on stdout, stripped; VersionError when it fails,
    times out or prints nothing. It runs as a hook does, in a process group of its own,
    stopped whole at its time limit or within a second of an interrupt (which is then
    raised): subprocess.run would kill the shell alone, and then wait for whatever the shell
    started to close its standard output (``sleep 600; git describe`` ran its full ten
    minutes past the limit, and past Ctrl-C, and stayed behind after SIGTERM)."""
    from cutaway import interrupts
    from cutaway.runner.captured import Captured
    from cutaway.runner.hooks import STOPPED, TIMED_OUT, run_in_group

    # Only what a version could be is kept: a command that printed megabytes is not printing
    # a version (and its output is not worth the memory).
    output = Captured(head_bytes=MAX_VERSION_BYTES)
    errors = Captured(tail_bytes=MAX_VERSION_BYTES)
    try:
        exit_code = run_in_group(
            ["/bin/sh", "-c", command],
            output,
            errors=errors,
            env=env,
            cwd=cwd,
            timeout_seconds=timeout,
            stopped_by_pending=True,
        )
    except OSError as error:
        raise VersionError(f"the command could not start: {error}") from None
    printed_bytes = output.total_bytes
    printed = output.head_text()
    stderr = errors.tail_text().strip()
    if exit_code == STOPPED:
        interrupts.check()  # the interrupt that stopped it, held by the runner until here
        raise VersionError("the command was stopped by an interrupt")
    if exit_code == TIMED_OUT:
        raise VersionError(f"the command did not end within {timeout:g} s")
    if exit_code != 0:
        tail = stderr.splitlines()[-1] if stderr else "nothing on stderr"
        raise VersionError(f"the command exited with status {exit_code} ({tail})")
    version = printed.strip()
    if printed_bytes > MAX_VERSION_BYTES:
        raise VersionError(
            f"the command printed {printed_bytes} bytes, more than a version's "
            f"{MAX_VERSION_CHARS} characters"
        )
    if not version:
        raise VersionError("the command printed nothing on stdout")
    if len(version) > MAX_VERSION_CHARS:
        raise VersionError(
            f"the command printed {len(version)} characters, more than a version's "
            f"{MAX_VERSION_CHARS}"
        )
    return version


def _located(spec: Spec, variant: Variant, source: VersionSource, problem: str) -> Exception:
    from cutaway.spec import SpecError, find_line

    text = spec.source_text
    return SpecError(
        f"the version of variant {variant.name!r} cannot be read: {problem}",
        path=spec.source_path,
        line=None if text is None or not source.key_path else find_line(text, source.key_path),
        key=None if source.key_path else source.key,
        key_path=source.key_path or None,
    )
