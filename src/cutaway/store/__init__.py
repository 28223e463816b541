"""The store: experiments, their runs and measurements, and loaders for analysis, in SQLite
(a file, the default) or PostgreSQL (the team store).

The names below are imported on first use (PEP 562), so that a light module of the package
(store/listing.py, which `cutaway list` uses) can be imported without the model's dataclasses.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which costs start-up time
if TYPE_CHECKING:
    from cutaway.store.checks import DamagedStoreError, StoredRecordError
    from cutaway.store.db import Store
    from cutaway.store.records import (
        ExperimentRow,
        MetricTable,
        ProbeInfo,
        StoredExperiment,
        StoredRunData,
    )
    from cutaway.store.schema import (
        BUSY_TIMEOUT_SECONDS,
        LATEST_VERSION,
        BadStorePath,
        BadStoreUrl,
        StoreError,
        StoreFull,
    )

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "LATEST_VERSION",
    "BadStorePath",
    "BadStoreUrl",
    "DamagedStoreError",
    "ExperimentRow",
    "MetricTable",
    "ProbeInfo",
    "Store",
    "StoreError",
    "StoreFull",
    "StoredExperiment",
    "StoredRecordError",
    "StoredRunData",
]

# Each exported name and the module that defines it.
_EXPORTS = {
    "BUSY_TIMEOUT_SECONDS": "schema",
    "LATEST_VERSION": "schema",
    "BadStorePath": "schema",
    "BadStoreUrl": "schema",
    "ExperimentRow": "records",
    "MetricTable": "records",
    "ProbeInfo": "records",
    "DamagedStoreError": "checks",
    "StoredRecordError": "checks",
    "Store": "db",
    "StoreError": "schema",
    "StoreFull": "schema",
    "StoredExperiment": "records",
    "StoredRunData": "records",
}


def __getattr__(name: str) -> object:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value
