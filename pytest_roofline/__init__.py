"""pytest-roofline: performance regression gating for pytest."""

from __future__ import annotations

from pytest_roofline.errors import ConfigError, RooflineError, RooflineWarning, StoreError

__version__ = "0.2.0.dev0"
__all__ = ["ConfigError", "RooflineError", "RooflineWarning", "StoreError", "__version__"]
