"""Regenerate the pictures in docs/: run the bundled examples, write their HTML reports, and
take screenshots of the parts the docs show with headless Chromium (Debian's `chromium`).

    .venv/bin/python scripts/docs_screenshots.py             # every example (as root)
    .venv/bin/python scripts/docs_screenshots.py --only nscd
    .venv/bin/python scripts/docs_screenshots.py --only squid --db PATH   # a run stored there

The nscd example needs nscd; the mailqueue one sendmail-bin, linux-perf and root (see
docs/case-studies/mailqueue.md); the squid one squid, nginx, apache2-utils, linux-perf and root
(about 8 minutes: see docs/case-studies/squid.md); the varnish one varnish, nginx-light,
linux-perf and root (about 4.5 minutes: see docs/case-studies/varnish.md); the caddy one
nginx-light, linux-perf, root and Go (about 10 minutes, and the first time a few more to build
two Caddy releases: see docs/case-studies/caddy.md). Runs go to a store in
a temporary directory and the reports are not kept: only the PNGs, under docs/images/. With
``--db``, the latest experiment of that store is reported instead of running the example again
(one example).

A picture is an element of the report (a CSS selector and which of its matches), or a flame
graph (``flame:N``, the N-th in the Flame graphs section), opened, zoomed by clicking the
frames named in order and searched (``search:REGEX``), as a reader would."""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from chromium import Chromium, Page  # noqa: E402

IMAGES = ROOT / "docs" / "images"
WIDTH = 1100

# Per example: the experiment file, extra arguments, environment, and the pictures: (file
# name, CSS selector or "flame:N", index among its matches, frames to click in a flame graph).
Picture = tuple[str, str, int, tuple[str, ...]]
# varnishd's own functions (its worker threads' frames that are neither the kernel's nor libc's):
# its C API (VSL, VRT, WS_, HTTP_, SES_...), the request state machine and its unnamed frames.
VARNISHD_FRAMES = r"^(V[A-Z]+_?[A-Za-z]|WS_|HTTP|SES_|CNT_|cnt_|vbf_|Pool_|\[varnishd\])"
EXAMPLES: dict[str, tuple[str, tuple[str, ...], dict[str, str], list[Picture]]] = {
    "nscd": (
        "examples/nscd/experiment.toml",
        (),
        {},
        [
            ("nscd-answer.png", "section.answer", 0, ()),
            ("nscd-getpwnam-percentiles.png", "figure.kind-percentiles", 1, ()),
            ("nscd-wall-distribution.png", "figure.kind-distribution", 0, ()),
            ("nscd-wall-rounds.png", "figure.kind-rounds", 0, ()),
        ],
    ),
    # The case study's run on ext4 without dir_index (the first of its four file systems).
    "mailqueue": (
        "examples/mailqueue/experiment.toml",
        ("--label", "ext4-linear"),
        {"MAILQUEUE_FS": "ext4-linear"},
        [
            # ten queue directories against one, ten senders, zoomed into sendmail's off-CPU
            # time: the directory's inode lock (under openat and rename) gone, fsync's journal
            # commit and writeback waits unchanged.
            (
                "mailqueue-flamegraph-diff.png",
                "flame:5",
                0,
                ("off-CPU", "sendmail", "search:^(rwsem_down_write_slowpath|jbd2_log_wait_commit)"),
            ),
        ],
    ),
    # The case study's attribution run: 8 rounds of 800 requests.
    "squid": (
        "examples/squid/experiment.toml",
        ("--rounds", "8"),
        {"SQUID_REQUESTS": "800"},
        [
            ("squid-attribution-curve.png", "figure.kind-attribution", 0, ()),
            # blocklist against few, zoomed into squid's on-CPU frames, glibc's regex
            # engine highlighted.
            (
                "squid-flamegraph-diff.png",
                "flame:2",
                0,
                ("on-CPU", "squid", "search:^(re_|regexec|build_upper_buffer)"),
            ),
        ],
    ),
    # The case study's run: 10 rounds, profiled system-wide.
    "varnish": (
        "examples/varnish/experiment.toml",
        ("--profile", "--system-wide"),
        {},
        [
            # small against default, zoomed into varnishd's worker threads' on-CPU frames,
            # varnishd's own functions (and its unnamed frames) highlighted.
            (
                "varnish-flamegraph-diff.png",
                "flame:2",
                0,
                ("on-CPU", "cache-worker", "search:" + VARNISHD_FRAMES),
            ),
        ],
    ),
    # The case study's run: 8 rounds, profiled system-wide and narrowed to caddy's process.
    "caddy": (
        "examples/caddy/experiment.toml",
        (),
        {},
        [
            ("caddy-attribution-curve.png", "figure.kind-attribution", 0, ()),
            # v2.10.2 against v2.7.6, zoomed into caddy's on-CPU frames, the logging
            # library's (zap) frames highlighted: the largest changes beyond noise.
            (
                "caddy-flamegraph-diff.png",
                "flame:2",
                0,
                ("on-CPU", "caddy", "search:^go\\.uber\\.org/zap"),
            ),
        ],
    ),
}


def run_example(name: str, db: Path, html: Path) -> None:
    experiment, extra, environment, _ = EXAMPLES[name]
    command = [
        sys.executable, "-m", "cutaway", "run", str(ROOT / experiment), *extra,
        "--db", str(db), "--export-html", str(html), "-q",
    ]  # fmt: skip
    print(f"running {experiment} ...", file=sys.stderr)
    subprocess.run(
        command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, env={**os.environ, **environment}
    )


def report_latest(db: Path, html: Path) -> None:
    command = [sys.executable, "-m", "cutaway", "report", "latest", "--db", str(db)]
    with html.open("w", encoding="utf-8") as out:
        subprocess.run([*command, "--format", "html"], check=True, cwd=ROOT, stdout=out)


def capture_flame_graph(
    browser: Chromium, page: Page, number: int, clicks: tuple[str, ...], path: Path
) -> None:
    """The ``number``-th flame graph of the report, opened, each frame of ``clicks`` (its
    name) clicked in turn to zoom, as a PNG of its frame."""
    box, summary = browser.evaluate(
        page,
        f"""(function () {{
          var details = document.querySelectorAll('details.flamegraph')[{number}];
          details.open = true;
          details.scrollIntoView();
          var r = details.querySelector('iframe').getBoundingClientRect();
          return [[r.x, r.y + window.scrollY, r.width, r.height],
                  details.querySelector('summary').textContent];
        }}())""",
    )
    browser.evaluate(page, "new Promise(function (r) { setTimeout(r, 1000); })")
    # The graph's own title ends with its summary's text ("EXPERIMENT: few against blocklist").
    title = "document.querySelector('.cw-title').textContent"
    frame = next(
        f for f in browser.frames(page) if browser.evaluate(f, title).endswith(f": {summary}")
    )
    for name in clicks:
        if name.startswith("search:"):  # the Search button, answering its prompt
            term = json.dumps(name.removeprefix("search:"))
            browser.evaluate(
                frame,
                f"window.prompt = function () {{ return {term}; }};"
                "document.querySelector('.cw-search').dispatchEvent(new MouseEvent('click'))",
            )
            continue
        clicked = browser.evaluate(
            frame,
            f"""(function () {{
              var name = {json.dumps(name)};
              var g = Array.from(document.querySelectorAll('.cw-frame:not(.cw-ancestor)'))
                .filter(function (g) {{
                  return g.querySelector('title').textContent.indexOf(name + ':') === 0; }})
                .sort(function (a, b) {{
                  return b.querySelector('rect').getAttribute('width') -
                         a.querySelector('rect').getAttribute('width'); }})[0];
              if (!g) {{ return false; }}
              g.dispatchEvent(new MouseEvent('click'));
              return true;
            }}())""",
        )
        if not clicked:
            raise SystemExit(f"{path.name}: no frame named {name!r} to click")
    # A frame of its own process is painted only inside the viewport: make the viewport as
    # tall as the graph, bring the graph into it, and take the picture there.
    x, _, width, height = box
    browser.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": int(height) + 40, "deviceScaleFactor": 1, "mobile": False},
        session=page.session_id,
    )
    top = browser.evaluate(
        page,
        f"""(function () {{
          var frame = document.querySelectorAll('details.flamegraph')[{number}]
            .querySelector('iframe');
          frame.scrollIntoView();
          return frame.getBoundingClientRect().y + window.scrollY;
        }}())""",
    )
    browser.evaluate(page, "new Promise(function (r) { setTimeout(r, 1000); })")
    clip = {"x": x, "y": top, "width": width, "height": height, "scale": 1}
    result = browser.send(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": False, "clip": clip},
        session=page.session_id,
    )
    path.write_bytes(base64.b64decode(result["data"]))
    print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)


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
    parser.add_argument("--db", type=Path, help="report this store's latest experiment")
    args = parser.parse_args()
    if args.db is not None and len(args.only or EXAMPLES) != 1:
        parser.error("--db reports one example: name it with --only")
    IMAGES.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="cutaway-docs-") as scratch,
        Chromium(width=WIDTH) as browser,
    ):
        for name in args.only or list(EXAMPLES):
            html = Path(scratch) / f"{name}.html"
            if args.db is not None:
                report_latest(args.db, html)
            else:
                run_example(name, Path(scratch) / "cutaway.db", html)
            page = browser.open(html, width=WIDTH)
            for file_name, selector, index, clicks in EXAMPLES[name][3]:
                if selector.startswith("flame:"):
                    number = int(selector.removeprefix("flame:"))
                    capture_flame_graph(browser, page, number, clicks, IMAGES / file_name)
                else:
                    capture(browser, page, selector, index, IMAGES / file_name)


if __name__ == "__main__":
    main()
