"""An asyncio host program for the loop-ending tests: it opens a host, dials, says so, then ends as told.

Run by path: ``python ending_program.py ENDING LOOP WORKDIR``. It uses the
public asyncio face only. Once its server (which has a grandchild) is
connected it prints ``ready``, waits for a line on stdin (the test has
looked at its processes), then, by ``ENDING``:

- ``run-ends``: ``main`` returns while another task still holds the host
  open; ``asyncio.run`` (``uvloop.run``) cancels that task as it ends.
- ``interrupt``: it waits, holding the host open, for the test's SIGINT
  (``KeyboardInterrupt`` under ``asyncio.run``).
- ``loop-closed``: the block is never left: the loop is stopped and closed
  with the host open, and the program's main thread ends.
"""

from __future__ import annotations

import asyncio
import sys
from contextlib import AsyncExitStack
from pathlib import Path

from wave_actors.asyncio import Host
from wave_actors.testing import fault_server_entry

HELD: list[asyncio.Task[None]] = []
"""The task ``run-ends`` leaves pending (held here so that nothing collects it)."""


async def open_host(stack: AsyncExitStack, workdir: Path) -> None:
    host = await stack.enter_async_context(Host.open(home=workdir / "home"))
    session = await host.create_session(workdir, {"f": fault_server_entry(grandchild=True)})
    await session.prepare_turn()
    print("ready", flush=True)
    sys.stdin.readline()  # the test has seen what it started; blocking the loop a moment is fine here


async def run_ends(workdir: Path) -> None:
    opened = asyncio.Event()

    async def hold() -> None:
        async with AsyncExitStack() as stack:
            await open_host(stack, workdir)
            opened.set()
            await asyncio.sleep(3600)

    HELD.append(asyncio.get_running_loop().create_task(hold()))  # left pending on purpose
    await opened.wait()


async def interrupt(workdir: Path) -> None:
    async with AsyncExitStack() as stack:
        await open_host(stack, workdir)
        await asyncio.sleep(3600)


def loop_closed(workdir: Path, loop_kind: str) -> None:
    loop = new_loop(loop_kind)
    stack = AsyncExitStack()
    loop.run_until_complete(open_host(stack, workdir))
    loop.close()  # the block is never left
    print("closed", flush=True)


def new_loop(kind: str) -> asyncio.AbstractEventLoop:
    if kind == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def main() -> None:
    ending, loop_kind, workdir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    if ending == "loop-closed":
        loop_closed(workdir, loop_kind)
        return
    body = run_ends(workdir) if ending == "run-ends" else interrupt(workdir)
    if loop_kind == "uvloop":
        import uvloop

        uvloop.run(body)
    else:
        asyncio.run(body)


if __name__ == "__main__":
    main()
