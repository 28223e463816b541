"""Shared pytest options and fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from filesystems import Tmpfs


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the expected outputs in tests/golden/ instead of comparing with them",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when golden files are to be rewritten (pytest --update-golden)."""
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Tmpfs]:
    """Mount small filesystems with ``tmpfs.mount(size)``; each is unmounted after the test."""
    mounts = Tmpfs(tmp_path)
    try:
        yield mounts
    finally:
        mounts.unmount_all()


@pytest.fixture(scope="module")
def native_build(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """A directory for one test module's builds of native/ code (tests/native_build.py),
    shared by its tests."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    return tmp_path_factory.mktemp(f"{module}_build")
