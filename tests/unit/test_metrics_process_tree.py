"""A process tree is walked at most once a TREE_SECONDS: the stats read at one sampling tick
share one walk (a server of many threads costs cutaway one open per thread per walk), and a
worker forked later is seen once the walk is older than that."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from cutaway.metrics import process

PARENT = """
import subprocess, sys, time
sys.stdin.readline()                      # fork the worker when told
worker = subprocess.Popen(["sleep", "30"])
print(worker.pid, flush=True)
time.sleep(30)
"""


@pytest.fixture
def parent() -> Iterator[subprocess.Popen[str]]:
    started = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    yield started
    subprocess.run(["pkill", "-KILL", "-P", str(started.pid)], check=False)
    started.kill()
    started.wait()


def test_one_walk_serves_every_stat_of_a_tick(
    parent: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    walks: list[int] = []
    walk = process._walk
    monkeypatch.setattr(process, "_walk", lambda pid: walks.append(pid) or walk(pid))
    for stat in ("cpu", "rss", "threads", "fds", "rss"):
        assert process.read_stat(parent.pid, stat) >= (0 if stat == "cpu" else 1)
    assert walks == [parent.pid]


def test_a_worker_forked_later_is_seen_once_the_walk_is_old(
    parent: subprocess.Popen[str],
) -> None:
    start = time.monotonic()
    assert process.tree(parent.pid, now=start) == [parent.pid]
    assert parent.stdin is not None and parent.stdout is not None
    parent.stdin.write("\n")
    parent.stdin.flush()
    worker = int(parent.stdout.readline())
    assert process.tree(parent.pid, now=start + 0.5) == [parent.pid]  # the walk still stands
    later = start + process.TREE_SECONDS
    assert process.tree(parent.pid, now=later) == [parent.pid, worker]


def test_the_cache_keeps_only_the_walks_that_still_stand(
    parent: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "_trees", {})
    start = time.monotonic()
    for offset in range(100):  # a long-lived user sampling a hundred processes, one per second
        process.tree(parent.pid + 1_000_000 + offset, now=start + offset * process.TREE_SECONDS)
    process.tree(parent.pid, now=start + 100 * process.TREE_SECONDS)
    assert list(process._trees) == [parent.pid]
