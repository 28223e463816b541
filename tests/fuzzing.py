"""What every fuzz test (tests/fuzz/) shares: the Hypothesis budget and a guard against hangs.

Budget: by default each property tries DEFAULT_EXAMPLES inputs, derandomized (the same inputs
on every run, so CI is reproducible) and with no per-example deadline (the machine is shared
and noisy; a real hang is caught by :func:`no_hang` instead). ``CUTAWAY_FUZZ=long`` tries
LONG_EXAMPLES random inputs per property and keeps what fails in ``.hypothesis/`` so that the
next run tries it first; ``CUTAWAY_FUZZ=N`` tries N."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from hypothesis import HealthCheck, settings

DEFAULT_EXAMPLES = 100
LONG_EXAMPLES = 5_000
HANG_SECONDS = 10.0  # one input, on a loaded 2-core machine: far beyond any honest parse

_SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "default",
    max_examples=DEFAULT_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=_SLOW_IS_FINE,
)
settings.register_profile(
    "long",
    max_examples=LONG_EXAMPLES,
    deadline=None,
    print_blob=True,
    suppress_health_check=_SLOW_IS_FINE,
)


def _profile(value: str) -> str:
    if value.isdigit():
        settings.register_profile(
            "chosen",
            max_examples=int(value),
            deadline=None,
            print_blob=True,
            suppress_health_check=_SLOW_IS_FINE,
        )
        return "chosen"
    return "long" if value == "long" else "default"


settings.load_profile(_profile(os.environ.get("CUTAWAY_FUZZ", "")))


# An experiment file using every section and key: a seed of the loader's fuzzing, and the
# source of valid specs for the stored-spec fuzzing.
EVERY_SECTION = """\
version = 1
name = "every section {threads}"
rounds = 3
warmup_rounds = 0
timeout = "10s"
hook_timeout = "1m"
margin = "1%"
confidence = 0.9
until = "2%"
max_time = "5m"
seed = 4
baseline = "one-1"
command = "sh -c 'echo {threads}'"
ignore_failure = false

[matrix]
threads = [1, 2]

[probes]
calls = ["getpwnam", "getservbyname"]
syscalls = ["openat"]

[[metrics]]
name = "rps"
source = "output"
pattern = 'rps: (?P<value>[0-9.]+)'
better = "higher"
unit = "requests/s"

[[metrics]]
name = "size"
source = "file"
path = "."
series = true

[[variants]]
name = "one-{threads}"
env = { LC_ALL = "C", THREADS = "{threads}" }
cwd = "/tmp"
setup = "true"
prepare = "true"
conclude = "true"
cleanup = "true"
version_command = "echo build-{threads}"

[[variants]]
name = "two-{threads}"
command = ["echo", "{threads}"]
output = "pipe"
version = "v{threads}"
"""


def scaled(factor: float) -> settings:
    """The loaded profile with ``factor`` times its examples: for properties whose examples
    cost microseconds (decoding bytes), so that they search further at no real cost."""
    return settings(max_examples=max(1, int(settings.default.max_examples * factor)))


class Hang(Exception):
    """An input kept the code under test busy for HANG_SECONDS."""


@contextmanager
def no_hang(seconds: float = HANG_SECONDS) -> Iterator[None]:
    """Fail (raise Hang) when the block runs longer than ``seconds`` (a real timer: SIGALRM)."""

    def expired(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
