"""The machinery under :mod:`wave_actors.asyncio`: a trio run in a thread of its own, and what crosses to asyncio.

:mod:`.runtime` runs the trio side and carries calls, results, cancellations
and callbacks between the two threads; :mod:`.mirror` keeps, on the asyncio
side, the latest snapshot of each session. Nothing here knows MCP: the trio
:class:`~wave_actors.Host` and :class:`~wave_actors.Session` do all of that.
"""
