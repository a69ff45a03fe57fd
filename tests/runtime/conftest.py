"""Fixtures for runtime tests."""

from __future__ import annotations

import pytest
from runtime_support import FAST

from wave_actors import SessionOptions


@pytest.fixture
def options() -> SessionOptions:
    """Short graces and backoffs, so that failures show fast."""
    return FAST
