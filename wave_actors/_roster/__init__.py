"""The servers a session sees, behind one interface, owned by the session or shared by its project.

* :mod:`~wave_actors._roster.interface`: :class:`Roster`, what a session asks of its servers;
* :mod:`~wave_actors._roster.group`: :class:`ActorGroup`, the one place that builds actors and
  the cache writer, applies reconfigure plans, picks due dials and keeps retired servers' names;
* :mod:`~wave_actors._roster.owned`: :class:`OwnedRoster`, a session's own group in its nursery;
* :mod:`~wave_actors._roster.project`: :class:`ProjectScope`, a project's shared group;
* :mod:`~wave_actors._roster.slots`: which shared connection each session of a project uses (pure);
* :mod:`~wave_actors._roster.shared`: :class:`SharedRoster`, a session's view onto a scope;
* :mod:`~wave_actors._roster.projects`: :class:`ProjectScopes`, a host's scopes by workdir.
"""

from wave_actors._roster.group import ActorGroup as ActorGroup
from wave_actors._roster.interface import Roster as Roster
from wave_actors._roster.owned import OwnedRoster as OwnedRoster
from wave_actors._roster.project import ProjectScope as ProjectScope
from wave_actors._roster.projects import ProjectScopes as ProjectScopes
from wave_actors._roster.shared import SharedRoster as SharedRoster

__all__ = [
    "ActorGroup",
    "OwnedRoster",
    "ProjectScope",
    "ProjectScopes",
    "Roster",
    "SharedRoster",
]
