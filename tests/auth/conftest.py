"""Fixtures of the login tests: the protected server with its authorization server, and a scratch home."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from auth_support import OAuthServers, oauth_servers


@pytest.fixture
def servers() -> Iterator[OAuthServers]:
    """A protected streamable HTTP server and its authorization server, on two origins."""
    with oauth_servers() as running:
        yield running


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The host's home: its logins go in ``<home>/oauth``."""
    path = tmp_path / "home"
    path.mkdir()
    return path
