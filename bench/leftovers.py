"""What finding leftovers costs per run: the fork server as a child subreaper that checks, after
each run, whether the run left anything running.

Two fork servers run ``/bin/true`` in alternating blocks: this checkout's, and the one before
leftovers were looked for (native/cw_forkserver.c and its client at ``--before``, a git commit),
both compiled the same way into bench/results/. For each: the median ``wall`` the server
measured (the timed part of a run, which must not change) and the median round trip of
``ForkServer.run()`` as the client sees it (which includes the check after the run's end).
Then, with this checkout's server only, the round trip of a run that leaves ``sleep`` behind
(found, named, stopped with SIGTERM, reaped) against the same shell command leaving nothing.
Usage: ``python bench/leftovers.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
ENV = {"PATH": "/usr/bin:/bin"}


def compile_server(source: Path) -> str:
    """Compile a fork server as setup.py does (static, -O2), beside its source."""
    executable = source.with_suffix("")
    command = ["gcc", "-O2", "-std=gnu11", f"-I{source.parent}", "-static", "-o", str(executable)]
    subprocess.run([*command, str(source)], check=True)
    return str(executable)


def build_before(commit: str, directory: Path) -> tuple[ModuleType, str]:
    """The fork server and its client as they were at ``commit``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("native/cw_forkserver.c", "native/cw_protocol.h"):
        text = subprocess.run(
            ["git", "show", f"{commit}:{name}"], cwd=ROOT, check=True, capture_output=True
        ).stdout
        (directory / Path(name).name).write_bytes(text)
    executable = compile_server(directory / "cw_forkserver.c")
    client = subprocess.run(
        ["git", "show", f"{commit}:src/cutaway/runner/forkserver.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    (directory / "forkserver_before.py").write_bytes(client)
    spec = importlib.util.spec_from_file_location(
        "forkserver_before", directory / "forkserver_before.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module, str(executable)


def block(server: Any, argv: list[str], runs: int, devnull: int) -> tuple[list[float], list[float]]:
    """``runs`` runs of argv: the server's wall times and the client's round trips, in s."""
    walls, trips = [], []
    for _ in range(runs):
        started = time.perf_counter()
        result = server.run(argv[0], argv, ENV, None, None, devnull, devnull)
        trips.append(time.perf_counter() - started)
        walls.append(result.wall_ns / 1e9)
    return walls, trips


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", default="2e5cca3", help="commit without the leftover check")
    parser.add_argument("--runs", type=int, default=200, help="runs per block")
    parser.add_argument("--blocks", type=int, default=10, help="blocks per server")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from cutaway.runner.forkserver import ForkServer

    before_module, before_executable = build_before(args.before, RESULTS_DIR / "leftovers-before")
    devnull = os.open(os.devnull, os.O_WRONLY)
    figures: dict[str, tuple[list[float], list[float]]] = {"before": ([], []), "now": ([], [])}
    now_directory = RESULTS_DIR / "leftovers-now"
    now_directory.mkdir(parents=True, exist_ok=True)
    for name in ("cw_forkserver.c", "cw_protocol.h"):
        (now_directory / name).write_bytes((ROOT / "native" / name).read_bytes())
    now_executable = compile_server(now_directory / "cw_forkserver.c")
    with ForkServer(now_executable) as now, before_module.ForkServer(before_executable) as before:
        servers = {"before": before, "now": now}
        for index in range(args.blocks):
            for name in ("before", "now") if index % 2 == 0 else ("now", "before"):
                walls, trips = block(servers[name], ["/bin/true"], args.runs, devnull)
                figures[name][0].extend(walls)
                figures[name][1].extend(trips)
            print(f"block {index + 1}/{args.blocks}", file=sys.stderr)
        left = block(now, ["/bin/sh", "-c", "sleep 60 &"], 50, devnull)[1]
        clean = block(now, ["/bin/sh", "-c", "true"], 50, devnull)[1]

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1e3:.3f} ms"

    count = args.runs * args.blocks
    print(f"/bin/true, {count} runs per server in {args.blocks} alternating blocks:\n")
    print("| server | median wall (timed) | median round trip of run() |")
    print("|---|---|---|")
    for name in ("before", "now"):
        walls, trips = figures[name]
        print(f"| {name} | {ms(walls)} | {ms(trips)} |")
    print(f"\n`sh -c 'sleep 60 &'` (leaves sleep, stopped): round trip {ms(left)};")
    print(f"`sh -c true` (leaves nothing): round trip {ms(clean)} (50 runs each)")


if __name__ == "__main__":
    main()
