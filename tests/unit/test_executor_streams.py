"""Where a measured command's standard streams go (Variant.stdin, Variant.stdout) and what an
output metric gets (Attachment.capture), with real processes through the fork server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cutaway.model import RunStatus, Variant
from cutaway.probes.base import Attachment
from cutaway.runner.executor import ProcessExecutor

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
