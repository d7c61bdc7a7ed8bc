"""The result store: one SQLite file of runs, per-test results with raw samples, calibrations."""

from pytest_roofline.store.records import Baseline, RunRecord, StoredResult, StoredRun
from pytest_roofline.store.sqlite import STORE_SCHEMA_VERSION, Store

__all__ = ["STORE_SCHEMA_VERSION", "Baseline", "RunRecord", "Store", "StoredResult", "StoredRun"]
