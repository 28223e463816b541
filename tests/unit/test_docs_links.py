"""Every relative link in the docs and the benchmark records resolves: the file exists and, when
the link names a section, a heading of that file gives that anchor as GitHub spells it. Sections
get renamed and tables move between docs/performance.md and bench/results/; a link left pointing
at the old place is found here, not by a reader."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINKED_FILES = [
    ROOT / "README.md",
    ROOT / "bench" / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "bench" / "results").glob("*.md")),
]
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.*)$")
FENCE = re.compile(r"^\s*(```|~~~)")


def lines_outside_code_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the prose, so that `# comment` in a shell block is no heading."""
    kept: list[tuple[int, str]] = []
    in_code_block = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_code_block = not in_code_block
        elif not in_code_block:
            kept.append((number, line))
    return kept


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation but `-` and `_` dropped, spaces to
    hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    anchors: set[str] = set()
    for _, line in lines_outside_code_blocks(path.read_text()):
        match = HEADING.match(line)
        if match is None:
            continue
        anchor = github_anchor(match.group(1))
        duplicate_count = 0
        unique_anchor = anchor
        while unique_anchor in anchors:
            duplicate_count += 1
            unique_anchor = f"{anchor}-{duplicate_count}"
        anchors.add(unique_anchor)
    return anchors


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    problems: list[str] = []
    for number, line in lines_outside_code_blocks(path.read_text()):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue  # an absolute URL or mailto:, not checked offline
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(root)}:{number}: {target}"
            if not linked.exists():
                problems.append(f"{where}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in anchors_of(linked):
                problems.append(f"{where}: no heading gives #{anchor}")
    return problems


def test_github_anchor_keeps_underscores_and_drops_other_punctuation() -> None:
    heading = "Spans probe: volume of spans (`spans_volume.py`)"
    assert github_anchor(heading) == "spans-probe-volume-of-spans-spans_volumepy"


def test_a_link_to_a_missing_file_or_heading_is_reported(tmp_path: Path) -> None:
    (tmp_path / "target.md").write_text("# Title\n\n```sh\n# not a heading\n```\n")
    source = tmp_path / "source.md"
    source.write_text("[ok](target.md#title) [gone](target.md#not-a-heading) [none](missing.md)\n")
    assert broken_links(source, root=tmp_path) == [
        "source.md:1: target.md#not-a-heading: no heading gives #not-a-heading",
        "source.md:1: missing.md: no such file",
    ]


def test_every_relative_link_in_the_docs_resolves() -> None:
    problems = [problem for path in LINKED_FILES for problem in broken_links(path)]
    assert not problems, "\n".join(problems)
