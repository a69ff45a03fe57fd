"""Transports: one MCP connection per call to :func:`open_connection`, and process reclamation.

:mod:`.dial` opens connections (over :mod:`.stdio` or :mod:`.remote`),
:mod:`.connection` carries their requests, :mod:`.server_requests` answers
the servers' own, :mod:`.failures` is the one place where failures from
below become our errors. For stdio, :mod:`.spawn` starts
the server, :mod:`.framing` cuts its stdout into messages, and
:mod:`.reclamation` reclaims its process family, which :mod:`.proctree` finds;
what a family is (its tag, its graces, ``/proc``) is the leaf both this
package and the watchdog stand on, :mod:`wave_actors._family`.
"""

from wave_actors._family.graces import Graces as Graces
from wave_actors._transport.connection import Connection as Connection
from wave_actors._transport.dial import open_connection as open_connection
from wave_actors._transport.options import TransportOptions as TransportOptions
from wave_actors._transport.stderr import StderrLog as StderrLog
