"""The runtime under the asyncio face: operations start in the order they were asked for (R-AIO-1, R-RACE-3).

Trio runs the tasks of one scheduling batch in any order (it reverses a
batch at random), so operations asked for within one step of the asyncio
loop would race each other unless the runtime orders them: a ``connect``
asked before a ``disconnect`` must reach its server first.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import trio

from wave_actors._asyncio.runtime import RuntimeClosed, TrioRuntime

Run = Callable[[Coroutine[Any, Any, Any]], Any]


@asynccontextmanager
async def _nothing(runtime: TrioRuntime) -> AsyncGenerator[None, None]:
    yield None


def test_operations_asked_for_in_one_step_take_their_first_step_in_that_order(run: Run) -> None:
    # R-RACE-3 through the face: 40 operations asked for without yielding, 5 times over.
    async def main() -> list[list[int]]:
        rounds: list[list[int]] = []
        async with TrioRuntime.open(_nothing, name="ordering") as (runtime, _):
            for _ in range(5):
                first_steps: list[int] = []

                def operation(
                    index: int, first_steps: list[int] = first_steps
                ) -> Callable[[], Coroutine[Any, Any, int]]:
                    async def step() -> int:
                        first_steps.append(index)  # its first step, before any checkpoint
                        await trio.sleep(0)
                        return index

                    return step

                asked = [asyncio.ensure_future(runtime.run(operation(index))) for index in range(40)]
                assert await asyncio.gather(*asked) == list(range(40))
                rounds.append(first_steps)
        return rounds

    for first_steps in run(main()):
        assert first_steps == list(range(40))


def test_an_operation_asked_for_after_the_holder_was_let_go_is_refused(run: Run) -> None:
    async def main() -> None:
        async with TrioRuntime.open(_nothing, name="refusing") as (runtime, _):
            held = runtime
        try:
            await held.run(trio.lowlevel.checkpoint)
        except RuntimeClosed as error:
            assert "refusing is closed" in str(error)
        else:
            raise AssertionError("an operation ran after the runtime had ended")

    run(main())
