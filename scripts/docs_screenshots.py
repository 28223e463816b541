"""Regenerate the pictures in docs/: run the bundled examples, write their HTML reports, and
take screenshots of the parts the docs show with headless Chromium (Debian's `chromium`).

    .venv/bin/python scripts/docs_screenshots.py             # nscd and mailqueue (as root)
    .venv/bin/python scripts/docs_screenshots.py --only nscd

The nscd example needs nscd; the mailqueue one sendmail-bin, strace and root (see
docs/case-studies/mailqueue.md). Runs go to a store in a temporary directory and the reports
are not kept: only the PNGs, under docs/images/."""

from __future__ import annotations

import argparse
import base64
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from chromium import Chromium, Page  # noqa: E402

IMAGES = ROOT / "docs" / "images"
WIDTH = 1100

# Per example: the experiment file, extra arguments, and the pictures: (file name, CSS
# selector, index among its matches).
EXAMPLES: dict[str, tuple[str, tuple[str, ...], list[tuple[str, str, int]]]] = {
    "nscd": (
        "examples/nscd/experiment.toml",
        (),
        [
            ("nscd-answer.png", "section.answer", 0),
            ("nscd-getpwnam-percentiles.png", "figure.kind-percentiles", 1),
            ("nscd-wall-distribution.png", "figure.kind-distribution", 0),
            ("nscd-wall-rounds.png", "figure.kind-rounds", 0),
        ],
    ),
    "mailqueue": (
        "examples/mailqueue/experiment.toml",
        (),
        [
            ("mailqueue-syscall-totals.png", "figure.kind-bars", 0),
        ],
    ),
}


def run_example(name: str, db: Path, html: Path) -> None:
    experiment, extra, _ = EXAMPLES[name]
    command = [
        sys.executable, "-m", "cutaway", "run", str(ROOT / experiment), *extra,
        "--db", str(db), "--export-html", str(html), "-q",
    ]  # fmt: skip
    print(f"running {experiment} ...", file=sys.stderr)
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def capture(browser: Chromium, page: Page, selector: str, index: int, path: Path) -> None:
    """A PNG of the ``index``-th element matching ``selector``, its numbers' table cut at
    1,400 pixels."""
    box = browser.evaluate(
        page,
        f"""(function () {{
          var element = document.querySelectorAll({selector!r})[{index}];
          element.scrollIntoView();
          cutaway.drawAll();
          var r = element.getBoundingClientRect();
          return [r.x, r.y + window.scrollY, r.width, r.height];
        }}())""",
    )
    browser.evaluate(page, "new Promise(function (r) { setTimeout(r, 300); })")
    x, y, width, height = box
    clip = {"x": x - 8, "y": y - 8, "width": width + 16, "height": min(height, 1400) + 16}
    result = browser.send(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True, "clip": {**clip, "scale": 1}},
        session=page.session_id,
    )
    path.write_bytes(base64.b64decode(result["data"]))
    print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(EXAMPLES), action="append")
    args = parser.parse_args()
    IMAGES.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="cutaway-docs-") as scratch,
        Chromium(width=WIDTH) as browser,
    ):
        for name in args.only or list(EXAMPLES):
            html = Path(scratch) / f"{name}.html"
            run_example(name, Path(scratch) / "cutaway.db", html)
            page = browser.open(html, width=WIDTH)
            for file_name, selector, index in EXAMPLES[name][2]:
                capture(browser, page, selector, index, IMAGES / file_name)


if __name__ == "__main__":
    main()
