"""The docs run tests the way the scripts allow: through ./scripts/test, which installs the test
dependencies and passes its arguments to pytest. `.venv/bin/python -m pytest` alone fails in
the venv ./scripts/demo makes (no pytest there)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_scripts_test_passes_its_arguments_to_pytest() -> None:
    script = (ROOT / "scripts" / "test").read_text()
    assert 'PIP_EXTRAS="[test]"' in script
    assert script.rstrip().endswith('exec .venv/bin/python -m pytest "$@"')


def test_every_test_command_in_the_docs_goes_through_scripts_test() -> None:
    bare = re.compile(r"(?:python3?|\.venv/bin/python) -m pytest|(?<![\w/.-])pytest tests")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in DOCS
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if bare.search(line)
    ]
    assert not found, "\n".join(found)
