"""The unmeasured commands around a variant's runs: setup, prepare, conclude, cleanup.

Hooks always run through ``/bin/sh -c`` with the variant's environment and directory. Their
output goes to a temporary file, not a pipe: a hook that starts a daemon (``nscd``, ``slapd``)
leaves it holding whatever stdout it inherited, and reading a pipe to its end would then wait
for the daemon to exit. Each hook runs in a process group of its own, so that the Ctrl-C that
interrupts an experiment does not also kill the cleanup that must follow it."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass

from cutaway.model import Variant
from cutaway.runner.executor import SHELL, run_environment

HOOK_NAMES = ("setup", "prepare", "conclude", "cleanup")
OUTPUT_TAIL_BYTES = 2000


@dataclass(frozen=True)
class HookResult:
    hook: str
    command: str
    exit_code: int
    output: str  # the tail of stdout and stderr together

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def hook_command(variant: Variant, hook: str) -> str | None:
    if hook not in HOOK_NAMES:
        raise ValueError(f"unknown hook {hook!r}")
    command: str | None = getattr(variant.hooks, hook)
    return command


def run_hook(variant: Variant, hook: str) -> HookResult | None:
    """Run one hook of a variant and wait for it; None when the variant has no such hook."""
    command = hook_command(variant, hook)
    if command is None:
        return None
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            [SHELL, "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=run_environment(variant),
            cwd=variant.cwd,
            process_group=0,
        )
        try:
            exit_code = process.wait()
        except BaseException:
            # Interrupted while a prepare/conclude ran: let it finish, it may be restoring state.
            process.wait()
            raise
        output.seek(0, 2)
        output.seek(max(0, output.tell() - OUTPUT_TAIL_BYTES))
        text = output.read().decode(errors="replace").strip()
    return HookResult(hook, command, exit_code, text)
