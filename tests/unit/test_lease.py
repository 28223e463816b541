"""The lease on an experiment: who may resume it, decided from the store alone."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from cutaway.model import Spec, Variant
from cutaway.store import Store, StoreError
from cutaway.store.lease import FOREIGN_LEASE_SECONDS, Owner

SPEC = Spec("t", (Variant("a", ("true",)),), "a")


def dead_owner() -> Owner:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    return Owner(Owner.current().host, int(child.stdout), 12345)


def test_a_live_owner_keeps_its_experiment(store_location: str) -> None:
    store = Store(store_location)
    me = Owner.current()
    experiment_id = store.create_experiment(SPEC, {}, None, "test", me)
    other = Owner(me.host, me.pid + 1, None)
    with pytest.raises(StoreError, match=f"being run by process {me.pid} on host"):
        store.claim(experiment_id, other)
    with pytest.raises(StoreError, match="no experiment 'latest-incomplete'"):
        store.resolve("latest-incomplete")  # the only candidate is live


def test_a_dead_owner_or_a_reused_pid_gives_the_experiment_up(store_location: str) -> None:
    store = Store(store_location)
    experiment_id = store.create_experiment(SPEC, {}, None, "test", dead_owner())
    reused = Owner(Owner.current().host, Owner.current().pid, -1)  # our pid, another start
    second = store.create_experiment(SPEC, {}, None, "test", reused)
    assert store.resolve("latest-incomplete") == second
    store.claim(second, Owner.current())
    assert store.resolve("latest-incomplete") == experiment_id


def test_another_hosts_lease_lives_as_long_as_its_heartbeat(tmp_path: Path) -> None:
    foreign = Owner("elsewhere.example", 4242, 1)
    now = time.time()
    assert foreign.alive(now - 5, now)
    assert not foreign.alive(now - FOREIGN_LEASE_SECONDS - 1, now)
    assert not foreign.alive(None, now)


def test_finishing_releases_the_lease_and_a_complete_experiment_is_never_claimed(
    store_location: str,
) -> None:
    store = Store(store_location)
    experiment_id = store.create_experiment(SPEC, {}, None, "test", Owner.current())
    store.finish_experiment(experiment_id, "incomplete", None)
    store.claim(experiment_id, Owner("elsewhere.example", 1, 1))  # nobody holds it now
    store.finish_experiment(experiment_id, "complete", None)
    with pytest.raises(StoreError, match="is complete"):
        store.claim(experiment_id, Owner.current())
