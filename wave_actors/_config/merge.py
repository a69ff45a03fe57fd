"""Which definition of a name wins: source precedence (R-CFG-1).

constructor > project > user > plugins. The winner is taken *whole*: no field
of a lower definition survives, so what runs is always exactly one entry as
written somewhere. Names never interact: the outcome for one name depends only
on that name's definitions.

Two plugins may define the same name (they share a precedence); the plugin
listed first wins, and the loader warns about the other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

from wave_actors._config.model import Source

__all__ = ["Ranked", "pick_winners"]


class Ranked(Protocol):
    """Anything that is one definition of a name from one source."""

    @property
    def name(self) -> str:
        """The server name it defines."""
        ...

    @property
    def source(self) -> Source:
        """The source it comes from."""
        ...


_R = TypeVar("_R", bound=Ranked)


def pick_winners(definitions: Iterable[_R]) -> dict[str, _R]:
    """Per name, the definition from the highest-precedence source (R-CFG-1).

    :param definitions: in any order; among definitions of equal precedence
        the first one wins.
    :returns: the winners, keyed by name, in order of each name's first
        appearance in ``definitions``.
    """
    winners: dict[str, _R] = {}
    for definition in definitions:
        current = winners.get(definition.name)
        if current is None or definition.source.precedence < current.source.precedence:
            winners[definition.name] = definition
    return winners
