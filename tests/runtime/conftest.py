"""Fixtures for runtime tests."""

from __future__ import annotations

import pytest
from presets import FAST_SESSION

from wave_actors import SessionOptions


@pytest.fixture
def options() -> SessionOptions:
    """Short graces and backoffs, so that failures show fast."""
    return FAST_SESSION
