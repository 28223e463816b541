"""The ``calls`` probe: per-call latency of selected libc functions in unmodified programs.

Every measured run gets our interposer (native/cw_calls.c) in LD_PRELOAD and a fresh directory
for its per-process record files, in memory (/dev/shm) where there is one: the records of a run
are read back whole when it ends, so the disk would only add its page-cache and journal work to
every process and every record. After the run the files are decoded with numpy (no Python loop
per record), and each selected function's calls become one blob (column by column, see
cutaway.probes.timed_calls) with, per call, the process it was made in (0, 1, ... in pid
order), its position among that process's calls of the function (1 = the first call), its
duration, its thread CPU time and errno."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from cutaway.model import RunData
from cutaway.probes import timed_calls as calls_blob
from cutaway.probes.base import Attachment, Launch, Overhead, ProbeError, process_cost
from cutaway.probes.interposer import (
    CATALOG,
    CallFileError,
    CallRecords,
    UnstartedFileError,
    calibrator_path,
    call_files,
    environment_for,
    function_id,
    library_path,
    read_call_file,
    records_directory,
    tsc_hz,
)
from cutaway.probes.timed_calls import Calls, ProcessCalls

KIND = "calls"
CALIBRATION_CALLS = 200_000
LOSSES_KIND = "calls-losses"


def decode_calls(data: bytes) -> Calls:
    """A stored blob (any version) back to its calls, column by column."""
    return calls_blob.decode(data)


def check_functions(functions: Sequence[str]) -> tuple[str, ...]:
    """The selection in catalog order; an unknown name raises ValueError listing the catalog."""
    if not functions:
        raise ValueError(f"no function selected; known functions: {', '.join(CATALOG)}")
    return tuple(sorted(set(functions), key=function_id))


def _per_function(records: Sequence[CallRecords], functions: Sequence[str]) -> list[RunData]:
    """Each function's calls as one blob, process by process. A process that timed only this
    function hands its columns over as they are: selecting would copy them for nothing."""
    data = []
    for name in functions:
        wanted = function_id(name)
        parts = []
        for process, record in enumerate(records):
            mask = record.function_id == wanted
            if not mask.any():
                continue
            columns = [getattr(record, column) for column in ProcessCalls.COLUMNS]
            if not mask.all():
                columns = [values[mask] for values in columns]
            parts.append(ProcessCalls(process, *columns))
        if parts:
            count = sum(len(part.duration_ns) for part in parts)
            data.append(RunData(KIND, name, count, calls_blob.encode(parts)))
    return data


def _nanoseconds_per_call(calibrator: Path, environment: Mapping[str, str]) -> float:
    result = subprocess.run(
        [str(calibrator), str(CALIBRATION_CALLS)],
        env=dict(environment),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return float(result.stdout)


def _without_preload() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


class CallsProbe:
    """Times the selected catalog functions in every measured run."""

    name = "calls"
    own_runs = False

    def __init__(self, functions: Sequence[str], *, thread_cpu: bool = False) -> None:
        self.functions = check_functions(functions)
        self.thread_cpu = thread_cpu
        self.directory = records_directory()
        self.tsc_hz: int | None = None

    def check(self) -> str:
        try:
            library = library_path()
        except FileNotFoundError as error:
            raise ProbeError(str(error)) from None
        self.tsc_hz = tsc_hz()
        clock = f"TSC at {self.tsc_hz / 1e9:.6f} GHz" if self.tsc_hz else "CLOCK_MONOTONIC"
        what = "and thread CPU time" if self.thread_cpu else "wall time only"
        return (
            f"LD_PRELOAD interposer {library} ({clock}, {what}) on "
            f"{', '.join(self.functions)}; records in {self.directory}"
        )

    def overhead(self) -> Overhead:
        """What the interposer adds here. Per timed call: close(-1) in a loop, timed by the
        library against not preloaded at all (fastest of 7 batches each, see
        native/cw_calls_calibrate.c). Per process: the same program making 7 timed calls,
        spawned with the library and without, in alternating pairs (loading the library,
        creating and cutting the record file)."""
        calibrator = calibrator_path()
        if not calibrator.is_file():
            return Overhead()
        without = _without_preload()
        with tempfile.TemporaryDirectory(prefix="calibrate-", dir=self.directory) as directory:
            timed = environment_for(
                ["close"],
                directory,
                thread_cpu=self.thread_cpu,
                tsc_hz=self.tsc_hz,
                environment={},
            )
            with_probe = {**os.environ, **timed}
            per_call = _nanoseconds_per_call(calibrator, with_probe)
            per_process = process_cost(
                Launch([str(calibrator), "1"], with_probe), Launch([str(calibrator), "1"], without)
            )
        plain = _nanoseconds_per_call(calibrator, without)
        return Overhead(max(0.0, per_call - plain) / 1e9, per_process)

    def check_program(self, program: str) -> str | None:
        return None

    def _clear(self) -> None:
        for path in call_files(self.directory):
            path.unlink()

    def before_run(self, environment: Mapping[str, str]) -> Attachment:
        self._clear()
        return Attachment(
            env=environment_for(
                self.functions,
                self.directory,
                thread_cpu=self.thread_cpu,
                tsc_hz=self.tsc_hz,
                environment=environment,
            )
        )

    def after_run(self) -> list[RunData]:
        records: list[CallRecords] = []
        unstarted = 0  # processes killed (by Ctrl-C, a timeout) while creating their file
        try:
            for path in call_files(self.directory):
                try:
                    records.append(read_call_file(path))
                except UnstartedFileError:
                    unstarted += 1
        except CallFileError as error:
            raise ProbeError(f"the calls probe's records are damaged: {error}") from None
        finally:
            self._clear()
        data = _per_function(records, self.functions)
        truncated = sum(r.truncated_bytes for r in records)
        dropped = sum(r.dropped_records for r in records)
        losses = {
            "processes": len(records),
            "truncated_bytes": truncated,
            "dropped": dropped,
            "unstarted": unstarted,
        }
        data.append(RunData(LOSSES_KIND, "losses", len(records), json.dumps(losses).encode()))
        return data

    def run_metrics(self) -> Mapping[str, float]:
        return {}

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
