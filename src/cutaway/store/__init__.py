"""The SQLite store: experiments, their runs and measurements, and loaders for analysis."""

from cutaway.store.checks import DamagedStoreError
from cutaway.store.db import Store
from cutaway.store.records import (
    ExperimentRow,
    MetricTable,
    ProbeInfo,
    StoredExperiment,
    StoredRunData,
)
from cutaway.store.schema import BUSY_TIMEOUT_SECONDS, LATEST_VERSION, StoreError

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "LATEST_VERSION",
    "DamagedStoreError",
    "ExperimentRow",
    "MetricTable",
    "ProbeInfo",
    "Store",
    "StoreError",
    "StoredExperiment",
    "StoredRunData",
]
