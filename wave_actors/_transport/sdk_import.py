"""Importing the MCP SDK: only what a dial needs, off trio's thread, from the moment a host opens.

The SDK takes most of a second to import (pydantic builds a model for every
MCP type), several times what dialing a local server takes. Left to the first
dial, it would make the first user of a fresh host wait for both. So
:meth:`Host.open <wave_actors.Host.open>` and :func:`~wave_actors.open_session`
start the import at once in a thread of its own (:func:`start_preload`), and
a dial calls :func:`load_sdk`, which returns at once when the import is done
and otherwise waits for the rest of it: its own import, in a worker thread,
blocks on the module locks the preload holds.

Only what a dial of the entry's transport needs is imported. The ``mcp``
package's ``__init__`` imports the whole SDK: its HTTP clients, its servers and
their web framework (``httpx2``, ``starlette``, ...), some 250 modules that a
host with stdio servers never runs. So when nobody imported ``mcp`` yet, the
packages ``mcp`` and ``mcp.client`` are first placed in ``sys.modules`` as
*shells*: the real package modules, their ``__init__`` not run yet, enough for
Python to import their submodules. The first attribute a shell is asked for
and lacks runs its ``__init__`` (a module ``__getattr__``, PEP 562), so the
host's own ``import mcp; mcp.ClientSession`` still works, at the usual cost.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import threading
from collections.abc import Mapping
from typing import Final

import trio

from wave_actors._config import TransportType
from wave_actors._transport.options import TransportOptions, client_implementation

__all__ = ["DIAL_MODULES", "import_sdk", "load_sdk", "preloaded", "start_preload"]

logger = logging.getLogger(__name__)

# anyio finds its trio backend on first use, a module the SDK's first call would import on trio's thread.
_DIAL_CORE: Final = ("mcp.client.session", "mcp.shared.message", "mcp.shared.exceptions", "anyio._backends._trio")

# A remote connection's OAuth (the SDK's client, R-AUTH-1) and the login a host may start on it (R-AUTH-2).
_REMOTE_AUTH: Final = ("wave_actors._auth.provider", "wave_actors._auth.flow")

DIAL_MODULES: Final[Mapping[TransportType, tuple[str, ...]]] = {
    TransportType.STDIO: (*_DIAL_CORE, "wave_actors._transport.stdio"),
    TransportType.HTTP: (*_DIAL_CORE, "mcp.client.streamable_http", "httpx2", *_REMOTE_AUTH),
    TransportType.SSE: (*_DIAL_CORE, "mcp.shared._httpx_utils", "httpx2", *_REMOTE_AUTH),
}
"""What a dial of each transport imports: the client session, and the transport's own modules."""

_SHELLS: Final = ("mcp", "mcp.client")

_imported: set[TransportType] = set()
_shells_lock = threading.Lock()
_preload_lock = threading.Lock()
_preload_thread: threading.Thread | None = None

preloaded: Final = threading.Event()
"""Set once a preload finished importing (or failed to); for tests."""


async def load_sdk(transport: TransportType) -> None:
    """Make sure what a dial of ``transport`` needs is imported, without blocking trio.

    Returns at once when it is; otherwise imports it in a worker thread, which
    waits for whatever part a preload is importing already.

    :param transport: the transport about to be dialed.
    :raises ImportError: the SDK is missing or broken.
    """
    if transport not in _imported:
        await trio.to_thread.run_sync(import_sdk, transport)


def import_sdk(transport: TransportType) -> None:
    """Import what a dial of ``transport`` needs; blocking, so for worker threads.

    :param transport: the transport to be dialed.
    :raises ImportError: the SDK is missing or broken.
    """
    with _shells_lock:
        for name in _SHELLS:
            _open_shell(name)
    for module in DIAL_MODULES[transport]:
        importlib.import_module(module)
    _imported.add(transport)


def start_preload() -> None:
    """Start importing what a stdio dial needs in a daemon thread, unless it is imported or under way.

    One thread per process at most, whoever asks; it ends when the import
    does. Nothing waits for it: an import cannot be interrupted, so a host
    that closes first leaves it to finish, and the next dial, of this host or
    another, finds it done or waits for the rest. A failure is only logged:
    the dial imports again and reports it.
    """
    global _preload_thread
    with _preload_lock:
        if _preload_thread is not None or TransportType.STDIO in _imported:
            return
        _preload_thread = threading.Thread(target=_preload, name="wave-actors SDK import", daemon=True)
        _preload_thread.start()


def _preload() -> None:
    try:
        import_sdk(TransportType.STDIO)
        client_implementation(TransportOptions())  # reads the package metadata once, parser included
    except Exception as error:  # a thread's exception would only be printed
        logger.debug("preloading the MCP SDK failed: %r", error)
    finally:
        preloaded.set()


def _open_shell(name: str) -> None:
    """Put package ``name`` in ``sys.modules`` without running its ``__init__``, unless it is there already."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not an importable package: the import that follows says why
    loader = spec.loader
    module = importlib.util.module_from_spec(spec)
    completing = threading.Lock()
    completed = False

    def complete(attribute: str) -> object:
        # Runs the package's __init__ in the shell the first time an attribute
        # is missing; later callers wait for it. The __getattr__ goes first, so
        # what __init__ itself looks up is missing the ordinary way.
        nonlocal completed
        with completing:
            if not completed:
                completed = True
                del module.__dict__["__getattr__"]
                loader.exec_module(module)
        try:
            return module.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    module.__dict__["__getattr__"] = complete
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
