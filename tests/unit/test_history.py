"""`cutaway history` over experiments stored by real `cutaway run`s with different labels: the
step between versions is found where it is, triage round-trips, bad input exits 2."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hostile import HOSTILE, raw_controls
from repositories import git

from cutaway.cli import main as entry

NAME = "quick: server"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six versions: three sleep 10 ms, three 40 ms (a step between v3 and v4, far above the
    noise of a busy machine)."""
    db = tmp_path_factory.mktemp("history") / "h.db"
    for version, seconds in [(1, 0.01), (2, 0.01), (3, 0.01), (4, 0.04), (5, 0.04), (6, 0.04)]:
        status = entry.main(
            [
                "run",
                "--db",
                str(db),
                "-n",
                "server",
                "--label",
                f"v{version}",
                "--rounds",
                "4",
                "--warmup",
                "0",
                "-c",
                f"sleep {seconds}",
            ]
        )
        assert status == 0
    return db


def _history(db: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = entry.main(["history", NAME, "--db", str(db), *extra])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_the_step_between_versions_is_found_with_its_size(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _history(store, capsys, "--format", "json")
    assert status == 0
    document = json.loads(out)
    assert [p["version"] for p in document["points"]] == [f"v{i}" for i in range(1, 7)]
    [change] = document["changes"]
    assert (change["before_version"], change["after_version"]) == ("v3", "v4")
    assert 0.02 < change["size"] < 0.04  # 30 ms more, give or take the spawn cost
    assert change["triage"] is None


def test_terminal_and_markdown_mark_the_step(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for fmt in ("terminal", "markdown"):
        status, out, _ = _history(store, capsys, "--format", fmt)
        assert status == 0
        assert "step " in out and "v3" in out and "v4" in out and "not triaged" in out


def test_triage_is_stored_and_shown(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _history(store, capsys, "--format", "json")
    change_id = json.loads(out)["changes"][0]["id"]
    note = HOSTILE[-1]
    status, out, _ = _history(store, capsys, "--triage", change_id, "accepted", "--note", note)
    assert status == 0
    assert "triage: accepted" in out and raw_controls(out) == []
    _, out, _ = _history(store, capsys, "--format", "json")
    assert json.loads(out)["changes"][0]["triage"]["note"] == note
    _, out, _ = _history(store, capsys, "--format", "markdown")
    assert "triage: accepted" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--metric", "nope"), "metric 'nope'"),
        (("--variant", "nope"), "no variant 'nope' in the experiments named"),
        (("--reference", "nope"), "their variants: 'server'"),
        (("--triage", "1-99", "confirmed"), "no flagged change '1-99'"),
        (("--triage", "3-4", "maybe"), "unknown triage state 'maybe'"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    store: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], message: str
) -> None:
    status, _, err = _history(store, capsys, *extra)
    assert status == 2 and message in err


def test_an_output_that_would_replace_the_store_or_cannot_be_written_is_refused_first(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-o naming the store itself replaced the store with the page; -o into a missing
    directory failed only after --triage had been stored (found by a hostile re-run). Both
    are refused before the store is read: exit 2, the store as it was."""
    db = tmp_path / "copy.db"
    with sqlite3.connect(store) as source, sqlite3.connect(db) as copy:
        source.backup(copy)  # the write-ahead log's pages too
    source.close()
    copy.close()
    before = db.read_bytes()
    for output in ("html", "json"):
        status, _, err = _history(db, capsys, "--format", output, "-o", str(db))
        assert status == 2 and "would replace the store (--db)" in err
    assert db.read_bytes() == before
    _, out, _ = _history(db, capsys, "--format", "json")
    change = json.loads(out)["changes"][0]
    missing = str(tmp_path / "missing" / "history.md")
    status, _, err = _history(db, capsys, "--triage", change["id"], "confirmed", "-o", missing)
    assert status == 2 and "no such directory" in err
    _, out, _ = _history(db, capsys, "--format", "json")
    # The triage the shared store had (other tests triage it) is left as it was.
    assert json.loads(out)["changes"][0]["triage"] == change["triage"]
    assert (change["triage"] or {}).get("state") != "confirmed"


def test_an_unknown_name_exits_2(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert entry.main(["history", "nobody", "--db", str(store)]) == 2
    assert "no experiment named 'nobody'" in capsys.readouterr().err


def test_version_from_stores_git_describe_of_the_checkout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    git("init", "-q", cwd=checkout)
    git("commit", "-q", "--allow-empty", "-m", "one", cwd=checkout)
    git("tag", "v1.2", cwd=checkout)
    db = tmp_path / "v.db"
    run = ["run", "--db", str(db), "--rounds", "2", "-n", "server", "-c", "true"]
    assert entry.main([*run, "--version-from", str(checkout)]) == 0
    (checkout / "new").write_text("x")
    git("add", "new", cwd=checkout)  # uncommitted: the tree is dirty
    assert entry.main([*run, "--version-from", str(checkout), "--label", "nightly"]) == 0
    capsys.readouterr()
    assert entry.main(["history", NAME, "--db", str(db), "--format", "json"]) == 0
    versions = [p["version"] for p in json.loads(capsys.readouterr().out)["points"]]
    assert versions == ["v1.2", "nightly v1.2-dirty"]


def test_version_from_a_directory_without_git_exits_2_before_measuring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    status = entry.main(["run", "--db", str(db), "--version-from", str(tmp_path), "-c", "true"])
    assert status == 2
    assert "not a git checkout" in capsys.readouterr().err
    assert not db.exists()


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "json"])
def test_hostile_versions_and_notes_are_data_in_every_format(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    db = _hostile_store(tmp_path_factory)
    capsys.readouterr()
    assert entry.main(["history", NAME, "--db", str(db), "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert raw_controls(out) == []
    if fmt == "json":
        versions = [p["version"] for p in json.loads(out)["points"]]
        assert versions == list(HOSTILE[-4:])
    elif fmt == "markdown":
        rows = [line for line in out.split("\n") if line.startswith("| #")]
        assert len(rows) == 4  # one table row per version, whatever the labels hold
        assert all(row.count("|") == 8 for row in rows)  # 7 cells: no label adds one


_HOSTILE_DB: list[Path] = []


def _hostile_store(factory: pytest.TempPathFactory) -> Path:
    if not _HOSTILE_DB:
        db = factory.mktemp("hostile") / "h.db"
        for label in HOSTILE[-4:]:
            run = ["run", "--db", str(db), "-n", "server", "--rounds", "2", "-c", "true"]
            assert entry.main([*run, "--label", label]) == 0
        _HOSTILE_DB.append(db)
    return _HOSTILE_DB[0]


def test_a_change_of_workload_is_pointed_out(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fixture's v4 runs `sleep 0.04` where v1-v3 ran `sleep 0.01`."""
    _, out, _ = _history(store, capsys, "--format", "json")
    workloads = [p["workload"] for p in json.loads(out)["points"]]
    assert len(set(workloads[:3])) == 1 and len(set(workloads[3:])) == 1
    assert workloads[2] != workloads[3]
    _, out, _ = _history(store, capsys)
    assert "the workload changed (command, environment, directory, hooks or input) at #4" in out


def test_the_ratio_to_a_reference_variant_of_the_same_experiments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    for version in ("v1", "v2"):
        run = ["run", "--db", str(db), "--label", version, "--rounds", "5", "--warmup", "0"]
        names = ["-n", "direct", "-c", "sleep 0.01", "-n", "proxy", "-c", "sleep 0.03"]
        assert entry.main([*run, *names]) == 0
    capsys.readouterr()
    name = "quick: direct vs proxy"
    assert (
        entry.main(["history", name, "--db", str(db), "--reference", "direct", "--format", "json"])
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert (document["variant"], document["reference"]) == ("proxy", "direct")
    for point in document["points"]:
        assert point["ci_low"] <= point["value"] <= point["ci_high"]
        assert 1.5 < point["value"] < 3.5  # 30 ms against 10 ms, plus the spawn cost on both
    assert [p["reference_version"] for p in document["points"]] == [None, None]
    capsys.readouterr()
    assert entry.main(["history", name, "--db", str(db), "--reference", "direct"]) == 0
    assert "version of the reference" not in capsys.readouterr().out


@pytest.fixture(scope="module")
def nightly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six nights of a CI job: the baseline v1.0 against that night's candidate, each variant
    with its own version, the same commands every night (the candidate's build reads its
    delay from a file, as a new build behind the same path). Night 4's candidate is slower,
    and the machine got a new kernel that night (its fingerprint as captured, with the
    kernel changed: the one seam here, the runs are real)."""
    from cutaway.environment import capture_environment
    from cutaway.runner.runner import run_experiment
    from cutaway.spec import quick_spec
    from cutaway.store import Store

    directory = tmp_path_factory.mktemp("nightly")
    delay = directory / "delay"
    db = directory / "n.db"
    for night in range(1, 7):
        # Ten times slower from night 4: a step that no load on a shared machine hides.
        delay.write_text("0.01" if night <= 3 else "0.1")
        spec = quick_spec(
            ["sleep 0.01", f"sleep $(cat {delay})"],
            ["base", "cand"],
            shell=True,
            rounds=4,
            warmup_rounds=0,
            versions=["v1.0", f"c{night}"],
        )
        kernel = "6.1.0-18-amd64" if night <= 3 else "6.12.9-amd64"
        with Store(db) as store:
            outcome = run_experiment(
                spec, store, environment={**capture_environment(), "kernel": kernel}
            )
        assert outcome.status == "complete"
    return db


NIGHTLY = "quick: base vs cand"


def test_a_nightly_series_follows_the_candidate_by_its_version(
    nightly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert entry.main(["history", NIGHTLY, "--db", str(nightly), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["variant"] == "cand"  # not the baseline, though it is the first variant
    assert [p["version"] for p in document["points"]] == [f"c{n}" for n in range(1, 7)]
    assert not any(p["workload_changed"] for p in document["points"])
    [change] = document["changes"]
    assert (change["before_version"], change["after_version"]) == ("c3", "c4")
    capsys.readouterr()
    assert entry.main(["history", NIGHTLY, "--db", str(nightly), "--variant", "base"]) == 0
    out = capsys.readouterr().out
    assert "v1.0" in out and "c1" not in out


def test_the_ratio_to_the_baseline_names_both_versions(
    nightly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    extra = ["--reference", "base", "--format", "json"]
    assert entry.main(["history", NIGHTLY, "--db", str(nightly), *extra]) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    assert {p["reference_version"] for p in points} == {"v1.0"}
    assert [p["version"] for p in points] == [f"c{n}" for n in range(1, 7)]
    assert all(p["value"] > 3 for p in points[3:]) and all(p["value"] < 3 for p in points[:3])


def test_a_change_of_machine_is_marked_and_said_beside_the_step(
    nightly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert entry.main(["history", NIGHTLY, "--db", str(nightly), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    changed = [p["machine_changed"] for p in document["points"]]
    assert changed == [[], [], [], ["kernel"], [], []]
    assert document["points"][3]["machine"]["kernel"] == "6.12.9-amd64"
    assert document["changes"][0]["machine_changed"] == ["kernel"]
    for fmt in ("terminal", "markdown"):
        capsys.readouterr()
        assert entry.main(["history", NIGHTLY, "--db", str(nightly), "--format", fmt]) == 0
        out = " ".join(capsys.readouterr().out.split())  # lines wrapped at the terminal's width
        assert "worse; the machine changed here (kernel" in out
        assert "6.12.9-amd64" in out and "the machine changed at #4" in out


def test_the_same_machine_is_not_marked(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _history(store, capsys, "--format", "json")
    assert not any(p["machine_changed"] for p in json.loads(out)["points"])
    _, out, _ = _history(store, capsys)
    assert "machine changed" not in out


def test_a_new_version_of_the_reference_is_pointed_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The baseline moves from v1.0 to v1.1 at the third night: a step of the ratio there may
    be the reference's own. Labels alone (the earlier test) never mark the reference."""
    db = tmp_path / "r.db"
    for night, base in enumerate(("v1.0", "v1.0", "v1.1"), start=1):
        run = ["run", "--db", str(db), "--rounds", "2", "--warmup", "0", "--label", f"n{night}"]
        names = ["-n", "base", "-c", "true", "-n", "cand", "-c", "true"]
        versions = ["--variant-version", base, "--variant-version", f"c{night}"]
        assert entry.main([*run, *names, *versions]) == 0
    capsys.readouterr()
    extra = ["--reference", "base", "--format", "json"]
    assert entry.main(["history", NIGHTLY, "--db", str(db), *extra]) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    assert [p["reference_version"] for p in points] == ["v1.0", "v1.0", "v1.1"]
    assert entry.main(["history", NIGHTLY, "--db", str(db), "--reference", "base"]) == 0
    assert "the version of the reference base changed at #3" in capsys.readouterr().out
