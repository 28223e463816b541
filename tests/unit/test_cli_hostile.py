"""Hostile text (tests/hostile.py) in everything the CLI prints itself: progress lines and notices,
`list`, error messages and usage errors. Each is shown escaped ("\\x1b"), on one line where
the output is one line per item, and rich markup or an emoji code prints as itself.
The real command with a failing program is in tests/integration/test_cli_terminal.py."""

from __future__ import annotations

import io
import os
import signal
import time
from pathlib import Path

import pytest
from hostile import HOSTILE, raw_controls

from cutaway import events
from cutaway.cli import commands as cli
from cutaway.cli import main as entry
from cutaway.cli.progress import TerminalProgress
from cutaway.model import Calibration, Run, RunStatus, Spec, Variant
from cutaway.runner.errors import RunnerError
from cutaway.store import Store
from cutaway.visible import visible


def _events(text: str) -> list[events.Event]:
    failed = Run(text, 2, 0, RunStatus.FAILED, 3, None, {}, started_at=0.0, message=text)
    return [
        events.ExperimentStarted(7, text, (text, "b"), 10, 1, 0),
        events.CalibrationDone(Calibration(text, 30, 0.001, 0.001)),
        events.RunFinished(failed, 3, 22, 0.5),
        events.Notice(f"variant {text!r}: conclude hook `{text}` exited 1: {text}"),
        events.HookRan(text, "setup", text, 1),
        events.ExperimentFinished(7, "incomplete", text),
    ]


@pytest.mark.parametrize("color", [None, True])
def test_progress_lines_show_hostile_text_escaped(color: bool | None) -> None:
    stream = io.StringIO()
    with TerminalProgress(stream, bar=False, color=color) as progress:
        for text in HOSTILE:
            for event in _events(text):
                progress(event)
    out = stream.getvalue()
    assert raw_controls(out) == []
    assert "\\x1b[2J\\x1b]0;pwned\\x07\\x9b1m" in out  # shown, escaped
    assert "[bold red]x[/]" in out and "[red]x[/red]" in out  # markup printed as itself
    assert ":warning:" in out and "\u26a0" not in out  # an emoji code too
    assert "line one\\nline two\\r\\nthree" in out  # one line per message
    assert len(out.splitlines()) == len(HOSTILE) * len(_events(""))


def _store_of_hostile_names(path: Path) -> Path:
    with Store(path) as store:
        for text in HOSTILE:
            spec = Spec(
                name=text,
                variants=(Variant(name="a", command=("true",)), Variant(name=text, command=("x",))),
                baseline="a",
                rounds=1,
            )
            store.create_experiment(spec, {}, text, "test")
    return path


def test_list_shows_hostile_names_and_labels_escaped_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _store_of_hostile_names(tmp_path / "hostile.db")
    assert entry.main(["list", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert raw_controls(out) == []
    assert len(out.splitlines()) == len(HOSTILE)
    assert "[red]x[/red]" in out and "\\x1b]0;pwned\\x07" in out


def test_list_cuts_a_huge_name_and_label_short(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A quick-mode name is the command: a 5 MB command made a 5 MB line in `cutaway list`."""
    huge = "n" * 5_000_000
    spec = Spec(name=huge, variants=(Variant(name="a", command=("true",)),), baseline="a")
    with Store(tmp_path / "huge.db") as store:
        store.create_experiment(spec, {}, "l" * 300, "test")
    assert entry.main(["list", "--db", str(tmp_path / "huge.db")]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.endswith(
        f"{'n' * 200}... (4,999,800 more characters)  [{'l' * 200}... (100 more characters)]"
    )


def test_an_empty_store_named_with_escapes_is_named_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "\x1b[2Jstore.db"
    Store(db).close()
    assert entry.main(["list", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert raw_controls(out) == [] and "\\x1b[2Jstore.db" in out


@pytest.mark.parametrize("text", HOSTILE)
def test_error_messages_show_hostile_text_escaped(
    text: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A RunnerError carries a failing command's stderr; its own lines stay lines."""

    def fail(_: object) -> int:
        raise RunnerError(f"variant 'a' failed on its first run: `x`\n  exit status 3: {text}")

    monkeypatch.setitem(cli.COMMANDS, "list", fail)
    assert cli.main(["list"]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert raw_controls(err) == []
    assert err == "cutaway: variant 'a' failed on its first run: `x`\n  exit status 3: " + (
        visible(text, keep_newlines=True) + "\n"
    )


def test_a_bug_traceback_shows_hostile_text_escaped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(_: object) -> int:
        raise KeyError(HOSTILE[-1])

    monkeypatch.setitem(cli.COMMANDS, "list", fail)
    assert cli.main(["list"]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert "Traceback" in err and "KeyError" in err
    assert raw_controls(err) == []


@pytest.mark.parametrize("text", [HOSTILE[0], HOSTILE[-1]])
def test_a_positional_command_that_cannot_run_is_named_escaped(
    text: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`cutaway run 'nosuchprogram ...'` measures nothing and says why; the command may hold
    anything."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", f"nosuchprogram {text}"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "nosuchprogram" in err  # why it cannot run: no such program, or shell syntax
    assert raw_controls(err) == []


class SignalledWhileNamed:
    """A descriptor whose __set_name__ (run as its class is made, as a dataclass's fields are
    while a module is imported) is where a signal lands: Python 3.11 raises the interrupt
    wrapped in a RuntimeError ("Error calling __set_name__"), a traceback and exit 1 before."""

    def __init__(self, stop_signal: int) -> None:
        self.stop_signal = stop_signal

    def __set_name__(self, owner: type, name: str) -> None:
        os.kill(os.getpid(), self.stop_signal)
        time.sleep(0.01)  # the handler runs here


def make_class_signalled(stop_signal: int) -> None:
    type("Imported", (), {"field": SignalledWhileNamed(stop_signal)})


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_module_defines_a_class_is_an_interrupt(
    stop_signal: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def command(_: object) -> int:
        make_class_signalled(stop_signal)
        return 0

    monkeypatch.setitem(cli.COMMANDS, "list", command)
    assert cli.main(["list"]) == 128 + stop_signal
    assert capsys.readouterr().err == "cutaway: interrupted\n"


def test_ctrl_c_while_the_commands_are_imported_is_an_interrupt(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def importing(_: object) -> int:
        make_class_signalled(signal.SIGINT)  # before cutaway's handlers: Python's own
        return 0

    monkeypatch.setattr(cli, "main", importing)
    assert entry.main(["report"]) == 130
    assert capsys.readouterr().err == "cutaway: interrupted\n"


@pytest.mark.parametrize("option", ["-n", "-c", "--label"])
def test_an_argument_that_is_not_utf8_is_refused_before_anything_is_stored(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bytes that are not UTF-8 (`-n $'\\xff'`) reach Python as lone surrogates, which the store
    cannot write: the experiment failed with a UnicodeEncodeError traceback once it had begun."""
    db = tmp_path / "store.db"
    argv = ["run", "-c", "true", "-r", "1", "-w", "0", "--db", str(db), option, "v\udcff"]
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(
        "cutaway: error: argument 11 is not UTF-8 text (byte b'\\xff' in 'v\ufffd')"
    )
    assert not db.exists()


def test_a_damaged_stored_profile_is_bad_input_not_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cutaway report` of an experiment whose run_data.data was damaged by hand: the profile
    decoder's error reached the user as a traceback (`export --format folded` said it), found
    by a hostile re-run."""
    from cutaway.probes.profile.records import decode

    def report(_: object) -> int:
        decode(b"\xde\xad\xbe\xef")
        return 0

    monkeypatch.setitem(cli.COMMANDS, "list", report)
    assert cli.main(["list"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("cutaway: run_data.data: not a stored profile: Error -3")
    assert "Traceback" not in err
