"""`cutaway compare` end to end with real runs and a real store: two experiments without a
variant name in common are a usage error that names both sides' variants and suggests --map;
--map pairs them."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from tests.cutaway_command import cutaway as run_cutaway

# A command that fails fails the test, with its output.
cutaway = partial(run_cutaway, check=True)
QUICK = ("--rounds", "3", "--warmup", "0", "-q")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("compare")
    cutaway("run", "-c", "true", "-n", "default", "-c", "true", "-n", "small", *QUICK,
            cwd=directory)  # fmt: skip
    cutaway("run", "-c", "true", "-n", "before", "-c", "true", "-n", "after", *QUICK,
            cwd=directory)  # fmt: skip
    return directory


def test_no_variant_in_common_is_exit_2_naming_both_sides(store: Path) -> None:
    result = cutaway("compare", "1", "2", cwd=store, check=False)
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()  # one message, no warnings
    assert line.startswith("cutaway: experiments #1 and #2 have no variant in common")
    assert "#1 has 'default', 'small'; #2 has 'before', 'after'" in line
    assert "--map default=before" in line


def test_map_pairs_the_variants_and_each_header_is_its_own(store: Path) -> None:
    result = cutaway(
        "compare", "1", "2", "--map", "default=before", "--map", "small=after", cwd=store
    )
    assert "before (#2) vs default (#1)" in result.stdout
    assert "after (#2) vs small (#1)" in result.stdout
    assert "share no variant" not in result.stdout
    headers = [line for line in result.stdout.splitlines() if line.startswith("3 rounds")]
    assert [h.split(" · ")[1] for h in headers] == ["baseline default", "baseline before"]
    # Each experiment's harness figure is the one its own report shows.
    for header, experiment in zip(headers, ("1", "2"), strict=True):
        own = cutaway("report", experiment, cwd=store).stdout.splitlines()[1]
        assert header.split(" · ")[-1] == own.split(" · ")[-1]
        assert own.split(" · ")[-1].startswith("harness ")


def test_a_malformed_map_is_exit_2(store: Path) -> None:
    result = cutaway("compare", "1", "2", "--map", "default", cwd=store, check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert "--map 'default' pairs no variant of #1 with one of #2" in result.stderr
