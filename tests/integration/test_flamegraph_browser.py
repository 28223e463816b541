"""Flame graphs in a real browser (Debian's chromium, headless): with hostile names as frames,
process and variant names, the drawn graph holds no injected element and no injected script
ran; inline in an HTML page (as a report embeds it), clicking a frame zooms and a search
highlights."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cutaway.probes.profile.flamegraph import render_flamegraph, render_flamegraph_diff
from tests.hostile import HOSTILE

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="needs chromium (apt-get install chromium)"
)
MARK = "document.documentElement.setAttribute('data-pwned','1')"
PAYLOADS = (
    *HOSTILE,
    f'<img src=x onerror="{MARK}">',
    f"</script><script>{MARK}</script>",
    f"]]></script><script>{MARK}</script><![CDATA[",
    f'"><svg onload="{MARK}">',
    f"&lt;img src=x onerror={MARK}&gt;",
)


def _dom(page: Path, profile: Path) -> str:
    assert CHROMIUM is not None
    done = subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", "--dump-dom", page.as_uri(),
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _stacks() -> dict[str, float]:
    stacks = {"on-CPU;prog;main;target": 5.0}
    for index, payload in enumerate(PAYLOADS):
        frame = " ".join(payload.replace(";", ":").splitlines())
        stacks[f"on-CPU;{frame};main;{frame}"] = 1.0 + index
    return stacks


def test_no_hostile_name_runs_as_script(tmp_path: Path) -> None:
    name = " ".join(PAYLOADS)
    documents = {
        "one.svg": render_flamegraph(_stacks(), title=name, subtitle=name, unit="seconds"),
        "diff.svg": render_flamegraph_diff(
            {"on-CPU;a;b": 1.0},
            _stacks(),
            title=name,
            subtitle=name,
            unit="seconds",
            names=(name, name),
        ),
    }
    for file_name, document in documents.items():
        page = tmp_path / file_name
        page.write_text(document)
        dom = _dom(page, tmp_path / f"profile-{file_name}")
        assert dom.count('class="cw-frame') >= len(PAYLOADS)  # the script ran and drew
        assert "data-pwned" not in dom.replace(MARK, "").replace(MARK.replace("'", "&#39;"), ""), (
            "an injected script ran"
        )
        assert not re.search(r"<(img|iframe|object|embed|foreignObject)\b", dom)


def test_inline_in_html_it_zooms_and_searches(tmp_path: Path) -> None:
    svg = render_flamegraph(_stacks(), title="t", subtitle="s", unit="seconds")
    svg = svg.split("\n", 1)[1]  # inline: no XML declaration
    probe = """<script>
    var frames = Array.prototype.slice.call(document.querySelectorAll(".cw-frame"));
    var before = frames.length;
    var target = frames.filter(function (g) {
      return g.querySelector("title").textContent.indexOf("target:") === 0; })[0];
    target.dispatchEvent(new MouseEvent("click"));
    var after = document.querySelectorAll(".cw-frame").length;
    var opacity = document.querySelector(".cw-reset").style.opacity;
    window.prompt = function () { return "targ"; };
    document.querySelector(".cw-search").dispatchEvent(new MouseEvent("click"));
    document.body.setAttribute("data-result", [before, after, opacity,
      document.querySelector(".cw-matched").textContent].join("|"));
    </script>"""
    page = tmp_path / "page.html"
    page.write_text(f"<!DOCTYPE html><html><body>{svg}{probe}</body></html>")
    dom = _dom(page, tmp_path / "profile")
    found = re.search(r'data-result="([^"]*)"', dom)
    assert found is not None, dom[:2000]
    before, after, opacity, matched = found[1].split("|")
    # Zoomed into "target": its four ancestors (faded) and itself are all that is drawn.
    assert int(before) > int(after) == 5
    assert opacity == "1"  # "Reset zoom" shows
    assert matched == "Matched: 100.00 % of the frame shown"
