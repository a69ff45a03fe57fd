"""``wave-actors serve``: one MCP server that fronts a project's servers, for hosts in any language (R-SERVE).

Built on the library's public API only (``tests/test_layering.py`` holds it to
that): a :class:`~wave_actors.Host` with project-shared connections, one
:class:`~wave_actors.Session` per client connection. The configuration,
trust, ``${VAR}`` expansion, cache and host-death defences are the host's
own; nothing here has a second copy of them.

* :mod:`~wave_actors._serve.front`: the MCP server (the SDK's low-level
  ``Server``), what a client sees, and a connection's lifetime;
* :mod:`~wave_actors._serve.stdio`: one client on stdin and stdout;
* :mod:`~wave_actors._serve.http`: streamable HTTP, many clients, each
  MCP session a session of the host.
"""
