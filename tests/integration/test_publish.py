"""`cutaway publish DIR` and `cutaway history --format html` over experiments stored by real
`cutaway run`s: ten versions of one experiment whose candidate gets four times slower at v6
(the command reads its delay from a file, so that what runs is the same command throughout,
as a new release of a program would be). The pages draw in Chromium with the step at v6, the
index lists it as open until it is triaged, hostile names stay text, and bad input exits 2.

Screenshots are kept under .artifacts/html/ (or $CUTAWAY_TEST_ARTIFACTS); the one of the
published page is docs/images/history-site.png."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from chromium import Chromium, Page, chromium_path
from hostile import HOSTILE

from cutaway.cli import main as entry
from cutaway.site import page_file
from cutaway.visible import visible

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("CUTAWAY_TEST_ARTIFACTS", ROOT / ".artifacts" / "html"))
NAME = "nightly: web"
VERSIONS = 10
STEP_AT = 6  # the first version of the slower candidate
DATA = re.compile(r'<script type="application/json" id="cutaway-data">(.*?)</script>', re.DOTALL)
# Each drawn chart's change-point lines: (series name, x index, label) for every markLine
# whose data has an xAxis and is not the machine's.
STEP_LINES = """
cutaway.charts.map(function (chart) {
  var lines = [];
  chart.getOption().series.forEach(function (s) {
    if (s.name === 'machine changed' || !s.markLine || !s.markLine.data) { return; }
    s.markLine.data.forEach(function (d) {
      if (d.xAxis !== undefined) { lines.push([s.name, d.xAxis, d.label.formatter]); }
    });
  });
  return lines;
})
"""


def _experiment_file(directory: Path, name: str, delay_file: Path, base: str, cand: str) -> Path:
    path = directory / "experiment.toml"
    path.write_text(
        f"name = {json.dumps(name)}\nrounds = 5\nwarmup_rounds = 0\n"
        f'[[variants]]\nname = {json.dumps(base)}\ncommand = "sleep 0.01"\n'
        f"[[variants]]\nname = {json.dumps(cand)}\n"
        f'command = "sleep $(cat {delay_file})"\nshell = true\n',
        encoding="utf-8",
    )
    return path


def _run(db: Path, experiment: Path, label: str) -> None:
    status = entry.main(["run", "--db", str(db), "-q", str(experiment), "--label", label])
    assert status == 0


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("publish")
    db = directory / "store.db"
    delay = directory / "delay"
    experiment = _experiment_file(directory, NAME, delay, "base", "cand")
    for version in range(1, VERSIONS + 1):
        delay.write_text("0.04" if version >= STEP_AT else "0.01")
        _run(db, experiment, f"v{version}")
    return db


@pytest.fixture(scope="module")
def browser() -> Any:
    if chromium_path() is None:
        pytest.fail("chromium is not installed: apt-get install chromium (scripts/test does)")
    with Chromium() as chromium:
        yield chromium


def _publish(db: Path, directory: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    status = entry.main(["publish", str(directory), "--db", str(db)])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def _figures(page: str) -> list[dict[str, Any]]:
    found = DATA.search(page)
    assert found is not None
    figures: list[dict[str, Any]] = json.loads(found.group(1))["figures"]
    return figures


def _open(browser: Chromium, path: Path, shot: str) -> tuple[Page, dict[str, Any]]:
    page = browser.open(path, width=1200, height=900)
    drawn: dict[str, Any] = browser.evaluate(page, "cutaway.drawAll()")
    browser.evaluate(page, "new Promise(function (r) { setTimeout(r, 100); })")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.screenshot(page, ARTIFACTS / f"{shot}.png")
    return page, drawn


def test_publish_writes_an_index_and_a_page_with_the_step_at_its_version(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    status, out = _publish(store, site, capsys)
    assert status == 0, out
    page = (site / page_file(NAME)).read_text(encoding="utf-8")
    index = (site / "index.html").read_text(encoding="utf-8")
    wall = next(f for f in _figures(page) if f["data"]["metric"] == "wall")
    assert wall["data"]["labels"] == [f"v{i}" for i in range(1, VERSIONS + 1)]
    names = [s["name"] for s in wall["data"]["series"]]
    assert names == ["base", "cand"]
    steps = [(names[s["series"]], wall["data"]["labels"][s["x"]]) for s in wall["data"]["steps"]]
    assert ("cand", f"v{STEP_AT}") in steps
    assert f'href="{page_file(NAME)}"' in index
    assert re.search(r"\d+ steps? not triaged", index)


def test_the_step_is_drawn_at_its_version_in_chromium(
    store: Path, tmp_path: Path, browser: Chromium, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    assert _publish(store, site, capsys)[0] == 0
    page, drawn = _open(browser, site / page_file(NAME), "history-site")
    assert drawn["failed"] == 0 and drawn["drawn"] == drawn["figures"] >= 3
    lines = browser.evaluate(page, STEP_LINES)
    wall = lines[0]  # the primary metric's chart comes first
    assert ["cand", STEP_AT - 1] in [line[:2] for line in wall]
    assert all("not triaged" in line[2] for line in wall)
    assert page.console_errors == [] and page.exceptions == []
    assert [url for url in page.requests if not url.endswith(page_file(NAME))] == []
    index, _ = _open(browser, site / "index.html", "history-site-index")
    link = browser.evaluate(index, "document.querySelector('td a').getAttribute('href')")
    assert link == page_file(NAME)


def test_a_triaged_step_is_no_longer_open(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "copy.db"
    with sqlite3.connect(store) as source, sqlite3.connect(db) as copy:
        source.backup(copy)  # the write-ahead log's pages too
    capsys.readouterr()
    assert entry.main(["history", NAME, "--db", str(db), "--format", "json"]) == 0
    change = json.loads(capsys.readouterr().out)["changes"][0]["id"]
    assert entry.main(["history", NAME, "--db", str(db), "--triage", change, "accepted"]) == 0
    site = tmp_path / "site"
    status, _ = _publish(db, site, capsys)
    assert status == 0
    assert (site / "index.html").exists()
    page = (site / page_file(NAME)).read_text(encoding="utf-8")
    wall = next(f for f in _figures(page) if f["data"]["metric"] == "wall")
    triaged = [s for s in wall["data"]["steps"] if s["id"] == change]
    assert triaged and all(s["triage"] == "accepted" for s in triaged)
    # The step (and any other that noise made) is open until triaged: this one no more.
    open_ids = re.findall(r"open step <code class=\"name\">([0-9-]+)</code>", page)
    assert change not in open_ids


def test_history_format_html_draws_one_metric_for_every_variant(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "history.html"
    status = entry.main(
        ["history", NAME, "--db", str(store), "--format", "html", "--metric", "cpu", "-o",
         str(output)]
    )  # fmt: skip
    assert status == 0
    [figure] = _figures(output.read_text(encoding="utf-8"))
    assert figure["kind"] == "history" and figure["data"]["metric"] == "cpu"
    assert [s["name"] for s in figure["data"]["series"]] == ["base", "cand"]
    capsys.readouterr()
    status = entry.main(
        ["history", NAME, "--db", str(store), "--format", "html", "--reference", "base"]
    )
    out = capsys.readouterr().out
    assert status == 0 and out.startswith("<!DOCTYPE html>")
    [figure] = _figures(out)
    assert figure["data"]["metric"] == "wall / base"
    assert [s["name"] for s in figure["data"]["series"]] == ["cand"]


def test_hostile_names_stay_text_in_every_page(
    tmp_path: Path, browser: Chromium, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "hostile.db"
    delay = tmp_path / "delay"
    delay.write_text("0.01")
    name, base, cand = HOSTILE[-2], HOSTILE[0], HOSTILE[-1]
    experiment = _experiment_file(tmp_path, name, delay, base, cand)
    for label in HOSTILE[:3]:
        _run(db, experiment, label)
    site = tmp_path / "site"
    status, out = _publish(db, site, capsys)
    assert status == 0, out
    assert sorted(p.name for p in site.iterdir()) == sorted(["index.html", page_file(name)])
    for path in site.iterdir():
        page, drawn = _open(browser, path, f"history-site-hostile-{path.stem[:10]}")
        assert drawn["failed"] == 0
        smuggled = browser.evaluate(
            page,
            "({scripts: document.querySelectorAll('script').length, elements: "
            "document.querySelectorAll('img, iframe, object, embed, link, base, form').length})",
        )
        assert smuggled["elements"] == 0
        text = browser.evaluate(page, "document.body.textContent")
        assert visible(name) in text
        assert page.console_errors == [] and page.exceptions == [] and page.dialogs == []


@pytest.mark.parametrize("where", ["a file", "no parent"])
def test_a_directory_that_cannot_be_written_is_refused(
    store: Path, tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "site"
    if where == "a file":
        target.write_text("keep me")
    else:
        target = tmp_path / "missing" / "site"
    status, out = _publish(store, target, capsys)
    assert status == 2 and "DIRECTORY" in out
    if where == "a file":
        assert target.read_text() == "keep me"


def test_a_missing_store_is_refused_and_no_directory_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = _publish(tmp_path / "none.db", tmp_path / "site", capsys)
    assert status == 1 and "no store" in out  # as every reading command says it
    assert not (tmp_path / "site").exists()


def test_publish_reads_a_postgresql_store(
    postgresql_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    delay = tmp_path / "delay"
    experiment = _experiment_file(tmp_path, NAME, delay, "base", "cand")
    for version in range(1, 4):
        delay.write_text("0.01")
        status = entry.main(
            ["run", "--db", postgresql_url, "-q", str(experiment), "--label", f"v{version}"]
        )
        assert status == 0
    site = tmp_path / "site"
    capsys.readouterr()
    assert entry.main(["publish", str(site), "--db", postgresql_url]) == 0
    wall = next(
        f
        for f in _figures((site / page_file(NAME)).read_text(encoding="utf-8"))
        if f["data"]["metric"] == "wall"
    )
    assert wall["data"]["labels"] == ["v1", "v2", "v3"]
