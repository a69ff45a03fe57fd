"""The servers one session sees, behind one interface: :class:`Roster`.

A session either owns its connections (``ownership="session"``,
:class:`~wave_actors._roster.owned.OwnedRoster`: its actors are tasks in the
session's nursery) or shares its project's (``ownership="project"``,
:class:`~wave_actors._roster.shared.SharedRoster`: a view onto a
:class:`~wave_actors._roster.project.ProjectScope`, whose nursery owns them).
The implementation is picked once, when the session is opened
(:func:`wave_actors._opening.open_owned_session`), and the session delegates
to it: :class:`~wave_actors.Session` never asks which one it has.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from trio_util import AsyncValue

    from wave_actors._actor.actor import ServerActor
    from wave_actors._cache import ToolCache
    from wave_actors._catalog import KnownTool
    from wave_actors._config import LoadedConfig
    from wave_actors._reconfigure import ReconfigureResult
    from wave_actors._status import SharedUse

__all__ = ["Roster"]


class Roster(Protocol):
    """The servers one session sees, and what the session may do with them as a set."""

    @property
    def ownership(self) -> Literal["session", "project"]:
        """Who owns the connections: the session, or its project (R-SCOPE-1)."""
        ...

    @property
    def version(self) -> AsyncValue[int]:
        """What to wait on for a change the session would see; current while :meth:`watching` is entered.

        Read the version itself with :meth:`current_version`: a shared
        connection's changes reach a session nobody is waiting on when it is read.
        """
        ...

    def current_version(self) -> int:
        """Grows with every change the session would see; drawn from the host's one sequence (R-HOST-2)."""
        ...

    def watching(self) -> AbstractContextManager[None]:
        """While entered, every change the session would see moves :attr:`version` at once, waking its waiters."""
        ...

    @property
    def actors(self) -> Mapping[str, ServerActor]:
        """The session's servers by name. After :meth:`close`, the ones it had, for its last snapshot."""
        ...

    @property
    def tool_cache(self) -> ToolCache:
        """The tool snapshots the statuses show for servers not dialed (R-CACHE-2)."""
        ...

    def sharing(self) -> Mapping[str, SharedUse] | None:
        """How each server's connection is shared now, or ``None`` for connections the session owns alone."""
        ...

    def waiting(self) -> AbstractContextManager[None]:
        """Bounds a caller's wait on an actor by the session's life (a shared actor outlives the session)."""
        ...

    def known_tool(self, name: str) -> KnownTool | None:
        """What is known of a model-visible tool name the current snapshot does not list (R-TOOL-1, R-CACHE-2)."""
        ...

    async def attach(self, loaded: LoadedConfig) -> None:
        """Take the session's first configuration: register (or attach to) its servers (R-DIAL-1).

        Nothing is dialed for the session; a project may rebuild a dead shared connection (R-SCOPE-2).
        """
        ...

    async def prepare_turn(self) -> None:
        """Dial every server that is due its lazy dial, and wait as the ownership says (R-DIAL-2, R-SCOPE-4)."""
        ...

    async def reconfigure(self) -> ReconfigureResult:
        """Load the session's sources again and apply them (R-STORE-5, R-SCOPE-3)."""
        ...

    def close(self) -> None:
        """The session closes: release its callers and let go of its servers; idempotent."""
        ...
