"""A second process of the same user, for the tests of what processes of one machine agree on (R-AUTH-3).

Usage::

    python second_process.py connect HOME URL   # connect server "docs" (file store in HOME); print its state as JSON
    python second_process.py lock HOME          # hold server "docs"'s record lock until stdin closes

``connect`` prints ``{"state": ..., "error": ...}`` once the dial settled.
``lock`` prints ``locked`` once it holds the lock.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import trio

from wave_actors import Credentials, LoginRequired, SessionOptions, TransportOptions, WaveActorsError, open_session
from wave_actors._auth.credentials import vault_of


async def connect(home: Path, url: str) -> None:
    options = SessionOptions(dial_timeout=30, transport=TransportOptions(ping_interval=None))
    with tempfile.TemporaryDirectory() as workdir:
        async with open_session(
            workdir=workdir, home=home, credentials="file", mcp_servers={"docs": {"url": url}}, options=options
        ) as session:
            try:
                await session.connect("docs")
            except (LoginRequired, WaveActorsError):
                pass
            status = session.server("docs")
            print(json.dumps({"state": status.state.value, "error": status.error}), flush=True)


def hold_lock(home: Path) -> None:
    with vault_of(Credentials(home, "file"))._locked("docs"):
        print("locked", flush=True)
        sys.stdin.read()  # until the test closes it


def main() -> None:
    command, home = sys.argv[1], Path(sys.argv[2])
    if command == "connect":
        trio.run(connect, home, sys.argv[3])
    else:
        hold_lock(home)


if __name__ == "__main__":
    main()
