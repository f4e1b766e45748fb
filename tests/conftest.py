"""Test configuration: hypothesis profiles and the location of ../shared."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=100, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PSE_SHARED", REPO_ROOT.parent / "shared"))
