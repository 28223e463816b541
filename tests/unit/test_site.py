"""The site's file names (cutaway.site.page_file): whatever an experiment's name holds, its
page stays inside the site's directory, means nothing to a shell, and is its own."""

from __future__ import annotations

import re

import pytest
from hostile import HOSTILE

from cutaway.site import page_file

NAMES = [*HOSTILE, "", ".", "..", "../../etc/passwd", "a/b", "a" * 10_000, "\ud800", "é", "É"]


@pytest.mark.parametrize("name", NAMES)
def test_a_page_file_is_one_safe_name_in_the_directory(name: str) -> None:
    file = page_file(name)
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,60}-[0-9a-f]{8}\.html", file), file
    assert not file.startswith((".", "-"))


def test_names_never_share_a_page() -> None:
    files = [page_file(name) for name in NAMES]
    assert len(set(files)) == len(files)
    assert page_file("a b") != page_file("a-b")  # the same safe characters, two names
