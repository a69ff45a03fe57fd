"""Transports: one MCP connection per call to :func:`open_connection`, and process reclamation."""

from wave_actors._transport.connection import (
    Connection as Connection,
    TransportOptions as TransportOptions,
    open_connection as open_connection,
)
from wave_actors._transport.proctree import Graces as Graces
from wave_actors._transport.stderr import StderrLog as StderrLog
