"""A host that runs out of file descriptors for real: ``python descriptor_limit_program.py LIMIT``.

It lowers its own ``RLIMIT_NOFILE`` soft limit to ``LIMIT`` first thing (the
test's process keeps its own), opens a host, and gives one session after
another a stdio fault server until a dial fails. Then it checks what the
sessions already connected still do, what an explicit connect raises, what
the host reports, and that failed dials hold no descriptor; it ends the
sessions, dials once more, and prints one JSON line with what it saw.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

from wave_actors import DialError, Host, ServerState, Session
from wave_actors.testing import fault_server_entry

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' shared helpers, as pytest sees them
from process_support import held_descriptors


async def main(limit: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as directory:
        home, workdir = Path(directory, "home"), Path(directory, "work")
        workdir.mkdir()
        async with Host.open(home=home) as host:
            found["headroom_at_start"] = host.orphan_protection().file_descriptors
            sessions: list[Session] = []
            failed: Session | None = None
            while failed is None and len(sessions) < limit:
                session = await host.create_session(workdir, {"s": fault_server_entry()})
                await session.prepare_turn()
                if session.server("s").state is ServerState.ERROR:
                    failed = session
                else:
                    sessions.append(session)
            assert failed is not None, "the limit was never reached"
            found["connected"] = len(sessions)
            found["lazy_error"] = failed.server("s").error
            before, held_before = host.orphan_protection().file_descriptors, held_descriptors()
            explicit: list[str] = []
            for _ in range(5):
                try:
                    await failed.connect("s")
                except DialError as error:
                    explicit.append(str(error))
            found["explicit_errors"] = explicit
            after, held_after = host.orphan_protection().file_descriptors, held_descriptors()
            found["in_use_before_and_after_failed_dials"] = [
                None if before is None else before.in_use,
                None if after is None else after.in_use,
            ]
            found["held_only_after_failed_dials"] = sorted(held_after - held_before)
            answers = [await session.call_tool("mcp__s__echo", {"text": "still here"}) for session in sessions]
            found["others_answer"] = all(not answer.is_error for answer in answers)
            for session in sessions[:2]:
                await host.destroy_session(session.id)
            await failed.connect("s")
            found["after_ending_two"] = failed.server("s").state.value
    return found


def _plain(value: object) -> object:
    if hasattr(value, "__attrs_attrs__"):
        return {name: getattr(value, name) for name in ("in_use", "soft_limit", "hard_limit")}
    return value


if __name__ == "__main__":
    wanted = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    result = trio.run(main, wanted)
    print(json.dumps({key: _plain(value) for key, value in result.items()}))
