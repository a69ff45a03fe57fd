"""The runtime under the asyncio face: operations start in the order they were asked for (R-AIO-1, R-RACE-3).

Trio runs the tasks of one scheduling batch in any order (it reverses a
batch at random), so operations asked for within one step of the asyncio
loop would race each other unless the runtime orders them: a ``connect``
asked before a ``disconnect`` must reach its server first.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncGenerator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing

from wave_actors import WaveActorsError
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
    # Every request: the first refusal must not leave the next one waiting for a taking that never comes.
    async def main() -> list[bool]:
        async with TrioRuntime.open(_nothing, name="refusing") as (runtime, _):
            held = runtime
        accepted = [held.request(lambda: None) for _ in range(3)]
        if any(accepted):  # an operation asked for now would wait forever
            return accepted
        for _ in range(3):
            try:
                await held.run(trio.lowlevel.checkpoint)
            except RuntimeClosed as error:
                assert "refusing is closed" in str(error)
            else:
                raise AssertionError("an operation ran after the runtime had ended")
        return accepted

    assert run(main()) == [False, False, False]


class _CountingLoop:
    """The runtime's loop, counting the wake-ups handed to it from other threads."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.wakeups = 0

    def call_soon_threadsafe(self, callback: Callable[..., object], *args: object, **kwargs: Any) -> asyncio.Handle:
        self.wakeups += 1
        return self._loop.call_soon_threadsafe(callback, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loop, name)


def test_outcomes_ready_in_one_trio_batch_wake_the_loop_once(run: Run) -> None:
    # Ten operations answered by one event: their outcomes share one wake-up of the loop, not ten.
    async def main() -> tuple[int, list[int]]:
        async with TrioRuntime.open(_nothing, name="batching") as (runtime, _):
            answered = trio.Event()  # made here, used only in the trio thread

            def waiting(index: int) -> Callable[[], Coroutine[Any, Any, int]]:
                async def wait() -> int:
                    await answered.wait()
                    return index

                return wait

            async def answer() -> None:
                answered.set()

            asked = [asyncio.ensure_future(runtime.run(waiting(index))) for index in range(10)]
            await runtime.run(trio.testing.wait_all_tasks_blocked)  # all ten are waiting
            counting = _CountingLoop(runtime._loop)  # pyright: ignore[reportPrivateUsage]
            runtime._loop = counting  # type: ignore[assignment]  # pyright: ignore[reportPrivateUsage]
            await runtime.run(answer)
            results = await asyncio.gather(*asked)
            return counting.wakeups, results

    wakeups, results = run(main())
    assert results == list(range(10))
    assert wakeups <= 2  # the answer's own outcome, and the ten; one each they would be 11


def test_a_posted_callback_that_raises_goes_to_the_loop_and_the_ones_after_it_still_run(run: Run) -> None:
    async def main() -> tuple[list[str], list[BaseException]]:
        ran: list[str] = []
        handled: list[BaseException] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, context: handled.append(context["exception"]))

        def failing() -> None:
            raise LookupError("a callback of the host's")

        async with TrioRuntime.open(_nothing, name="posting") as (runtime, _):

            async def post_three() -> None:
                runtime.post(ran.append, "first")
                runtime.post(failing)
                runtime.post(ran.append, "third")

            await runtime.run(post_three)  # its outcome comes after the three, in the same taking
        return ran, handled

    ran, handled = run(main())
    assert ran == ["first", "third"]
    assert len(handled) == 1 and isinstance(handled[0], LookupError)


def test_an_outcome_reaches_the_loop_while_the_trio_thread_never_runs_out_of_work(run: Run) -> None:
    # Outcomes wait for trio to be about to sleep, but only so long: a trio side always busy cannot starve the loop.
    async def main() -> float:
        async with TrioRuntime.open(_nothing, name="busy") as (runtime, _):
            stop = threading.Event()

            async def busy() -> None:
                with trio.move_on_after(3):  # unbounded holding would deliver only once this ends
                    while not stop.is_set():
                        await trio.lowlevel.checkpoint()  # always runnable: trio never waits for I/O meanwhile

            async def start_busy() -> None:
                runtime.start_soon(busy, name="busy")

            started = time.monotonic()
            try:
                await runtime.run(start_busy)  # its outcome is ready while trio is busy already
                await runtime.run(trio.lowlevel.checkpoint)
                return time.monotonic() - started
            finally:
                stop.set()

    assert run(main()) < 1.0


def test_operations_asked_for_as_the_runtime_closes_each_get_an_outcome(run: Run) -> None:
    # Asked in the same loop step as the release: each runs, is refused, or is ended by the close; none is left waiting.
    async def main() -> list[str]:
        seen: list[str] = []
        for _ in range(20):
            async with TrioRuntime.open(_nothing, name="closing") as (runtime, _):
                asked = [asyncio.ensure_future(runtime.run(trio.lowlevel.checkpoint)) for _ in range(5)]
                releasing = asyncio.ensure_future(runtime.release())
                asked += [asyncio.ensure_future(runtime.run(trio.lowlevel.checkpoint)) for _ in range(5)]
                _, pending = await asyncio.wait([*asked, releasing], timeout=5)
                assert not pending, f"{len(pending)} operation(s) never got an outcome"
                for task in asked:
                    error = task.exception()
                    assert error is None or isinstance(error, WaveActorsError), error
                    seen.append("ran" if error is None else type(error).__name__)
        return seen

    seen = run(main())
    assert len(seen) == 200
