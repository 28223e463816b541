"""Where a measured command's standard streams go (Variant.stdin, Variant.stdout) and what an
output metric gets (Attachment.capture), with real processes through the fork server."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cutaway import interrupts
from cutaway.model import RunStatus, Variant
from cutaway.probes.base import Attachment
from cutaway.runner.executor import Measurement, ProcessExecutor

SCRIPT = "cat; echo out; echo err >&2"


@pytest.fixture
def executor() -> Iterator[ProcessExecutor]:
    started = ProcessExecutor()
    yield started
    started.close()


def variant(**options: object) -> Variant:
    return Variant(name="v", command=SCRIPT, shell=True, **options)  # type: ignore[arg-type]


STDOUT = Attachment(capture=frozenset({"stdout"}))


def test_stdin_comes_from_the_variants_file_at_every_run(
    executor: ProcessExecutor, tmp_path: Path
) -> None:
    (tmp_path / "in.txt").write_text("fed\n")
    v = variant(stdin=str(tmp_path / "in.txt"))
    for _ in range(2):  # opened afresh: the second run reads it from the start again
        measured = executor.measure(v, None, STDOUT)
        assert measured.output == {"stdout": "fed\nout\n"}


def test_without_stdin_the_command_reads_nothing(executor: ProcessExecutor) -> None:
    assert executor.measure(variant(), None, STDOUT).output == {"stdout": "out\n"}


def test_a_missing_stdin_file_is_an_error_run(executor: ProcessExecutor, tmp_path: Path) -> None:
    measured = executor.measure(variant(stdin=str(tmp_path / "none")), None)
    assert measured.status is RunStatus.ERROR
    assert str(tmp_path / "none") in measured.message


def test_null_output_is_discarded_and_never_given(executor: ProcessExecutor) -> None:
    measured = executor.measure(variant(), None)
    assert measured.status is RunStatus.OK and measured.output == {}


def test_pipe_output_is_captured(executor: ProcessExecutor) -> None:
    measured = executor.measure(variant(stdout="pipe"), None, STDOUT)
    assert measured.output == {"stdout": "out\n"}


def test_a_file_gets_each_runs_output(executor: ProcessExecutor, tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    executor.measure(variant(stdout=str(path)), None)
    executor.measure(variant(stdout=str(path)), None)
    assert path.read_text() == "out\n"  # truncated at each run: the last run's output
    measured = executor.measure(variant(stdout=str(path)), None, STDOUT)  # captured and written
    assert measured.output == {"stdout": "out\n"} and path.read_text() == "out\n"


def test_inherit_writes_to_cutaways_stdout(
    executor: ProcessExecutor, capfd: pytest.CaptureFixture[str]
) -> None:
    executor.measure(variant(stdout="inherit"), None)
    executor.measure(variant(stdout="inherit"), None, STDOUT)
    assert capfd.readouterr().out == "out\nout\n"


def test_stderr_is_given_when_asked(executor: ProcessExecutor) -> None:
    both = Attachment(capture=frozenset({"stdout", "stderr"}))
    measured = executor.measure(variant(), None, both)
    assert measured.output == {"stdout": "out\n", "stderr": "err\n"}


def test_captured_output_that_cannot_be_written_makes_an_error_run(
    executor: ProcessExecutor,
) -> None:
    """An output metric captures stdout, copied to the variant's file after the run: /dev/full
    refused sendfile (EINVAL) and the OSError was a traceback. Now the run is an
    error run that says why, as `echo > /dev/full` fails by itself."""
    measured = executor.measure(variant(stdout="/dev/full"), None, STDOUT)
    assert measured.status is RunStatus.ERROR
    assert measured.message == "cannot write its output to '/dev/full': No space left on device"
    assert measured.output == {"stdout": "out\n"}  # what the metric reads is still there


@interrupts.holding
def measure_held(executor: ProcessExecutor, v: Variant, attachment: Attachment) -> Measurement:
    """measure() as the runner calls it: interrupts held, raised where the executor lets them."""
    return executor.measure(v, None, attachment)


def signal_soon_then_open_other_end(fifo: Path, flags: int) -> threading.Event:
    """SIGINT to this process in 0.3 s; 5 s later the FIFO's other end is opened, so that a
    wait for it ends even when the interrupt did not end it. The event says it was opened."""
    opened = threading.Event()

    def act() -> None:
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        opened.set()
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, flags | os.O_NONBLOCK))

    threading.Thread(target=act, daemon=True).start()
    return opened


def test_a_fifo_without_a_reader_is_left_at_an_interrupt_and_the_run_kept(
    executor: ProcessExecutor, tmp_path: Path
) -> None:
    """Captured stdout copied to a FIFO that no one reads: the open waited for a reader for ever,
    deaf to Ctrl-C and SIGTERM (found by a hostile re-run). Now an interrupt ends
    the wait, the run that ended is kept, and the interrupt stays held for the runner."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader_came = signal_soon_then_open_other_end(fifo, os.O_RDONLY)
    with interrupts.handling():
        measured = measure_held(executor, variant(stdout=str(fifo)), STDOUT)
        assert interrupts.discard()  # held, not lost
    assert not reader_came.is_set()
    assert measured.status is RunStatus.OK and measured.output == {"stdout": "out\n"}


@pytest.mark.parametrize("stream", ["stdin", "stdout"])
def test_a_fifo_without_its_other_end_is_left_at_an_interrupt(
    executor: ProcessExecutor, tmp_path: Path, stream: str
) -> None:
    """--input or --output naming a FIFO no one writes or reads: opened before the run, it waited
    for ever, deaf to interrupts. Now the interrupt stops the experiment before this run."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    other_end = os.O_WRONLY if stream == "stdin" else os.O_RDONLY
    other_end_came = signal_soon_then_open_other_end(fifo, other_end)
    with interrupts.handling(), pytest.raises(KeyboardInterrupt):
        measure_held(executor, variant(**{stream: str(fifo)}), Attachment())
    assert not other_end_came.is_set()


def test_each_run_gets_only_its_own_stderr(executor: ProcessExecutor) -> None:
    """The stderr memfd is emptied before every run, and only when something is in it: a run
    that wrote nothing after one that wrote reads neither its own nor the other's."""
    both = Attachment(capture=frozenset({"stderr"}))
    wrote = Variant(name="wrote", command="echo first >&2", shell=True)
    silent = Variant(name="silent", command="exit 3", shell=True)
    assert executor.measure(wrote, None, both).output == {"stderr": "first\n"}
    failed = executor.measure(silent, None, both)
    assert failed.output == {"stderr": ""}
    assert failed.message == "exit status 3"  # no tail of the run before it
    assert executor.measure(wrote, None, both).output == {"stderr": "first\n"}


def test_what_an_attachment_adds_is_in_that_run_only(executor: ProcessExecutor) -> None:
    """A variant's command is kept between its runs, but not with what a probe's attachment
    added to one of them (a variable, a tracer in front of it)."""
    v = Variant(name="v", command='echo "$0 ${ADDED-none}"', shell=True, env={"OWN": "1"})
    added = Attachment(env={"ADDED": "yes"}, capture=frozenset({"stdout"}))
    prefixed = Attachment(argv_prefix=("/usr/bin/env", "ADDED=prefix"), capture=STDOUT.capture)
    assert executor.measure(v, None, STDOUT).output == {"stdout": "/bin/sh none\n"}
    assert executor.measure(v, None, added).output == {"stdout": "/bin/sh yes\n"}
    assert executor.measure(v, None, prefixed).output == {"stdout": "/bin/sh prefix\n"}
    assert executor.measure(v, None, STDOUT).output == {"stdout": "/bin/sh none\n"}
    # Two variants alike but for their environment never share what is kept.
    other = Variant(name="v", command='echo "$0 ${ADDED-none}"', shell=True, env={"ADDED": "own"})
    assert executor.measure(other, None, STDOUT).output == {"stdout": "/bin/sh own\n"}
