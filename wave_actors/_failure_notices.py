"""Failure notices: a server that failed is told to the model once, with the history as the only memory (R-WS-8).

A server that fails to connect (or gives up reconnecting) stays listed in the
working set as ``unavailable: {reason}``, and in full mode its tools are
simply gone. Either way the model should hear *that* it failed, and why, once:
a short notice at the end of the turn's context, not the same words again
every turn. :func:`failure_notices` decides, per turn, which notices a host
appends to its conversation before the next model call:

* a **failure notice** for each enabled server in ``error`` whose failure
  the history does not hold: its name, and the reason the working set gives
  (the first line of its error, never the stderr under it, R-WS-5);
* nothing otherwise: a failure already told is not told again, a server
  that is connecting, reconnecting, disconnected on purpose or disabled is not
  a failure, and no message is ever empty.

It keeps no state, as :func:`~wave_actors._instructions.instruction_updates`
keeps none. A notice's ``meta`` holds a marker (under
:data:`~wave_actors._instructions.MARKER_KEY`, kind ``"failed"``) recording
which failure it told: the SHA-256 of the server's entry fingerprint, the
generation that failed and the reason. The last such marker of each server is
what the history remembers, so:

* a failure stays told, turn after turn, while the server stays in ``error``;
* an explicit connect that fails again is a new generation, so a new failure:
  told again; so is a changed entry that fails;
* compaction that drops the marker tells the failure again (repeating beats
  losing it);
* only markers the library made count (R-INS-6), so a server's tool result
  cannot hide another server's failure; a host that stores its history as JSON
  restores the ``meta`` of its own notices with
  :func:`~wave_actors._instructions.restore_instruction_meta`, as it does for
  instruction messages.

Nothing a server chose forges the notice's structure: its name is a JSON
string with line breaks, invisible characters and ``<``, ``>`` escaped, and
the reason one line with every control and invisible character escaped.

The session calls this through :meth:`wave_actors.Session.failure_notices`;
nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final

import attrs

from wave_actors._escaping import quoted
from wave_actors._instructions import check_template, library_markers, library_meta, text_sha256
from wave_actors._status import ServerState, ServerStatus, SessionSnapshot
from wave_actors._tools.working_set import unavailable_reason

__all__ = ["DEFAULT_FAILURE_WORDING", "FAILED", "FailureNotice", "FailureWording", "failure_notices"]

FAILED: Final = "failed"
"""The ``kind`` of a failure notice's marker."""

_FAILED: Final = (
    "The MCP server {server} failed and is unavailable: {reason}. Do not call its tools; "
    "it stays unavailable until it is connected again."
)


def _check_template(instance: FailureWording, attribute: attrs.Attribute[str], value: str) -> None:
    check_template(f"FailureWording.{attribute.name}", value, frozenset({"server", "reason"}), frozenset({"server"}))


@attrs.frozen
class FailureWording:
    """The text of a failure notice, as a :meth:`str.format` template; the default is English.

    Placeholders: ``{server}`` is the server's name as a JSON string literal,
    quotes included, with every line break, control and invisible character
    and ``<``, ``>`` escaped; ``{reason}`` why it failed, as the working set
    says it: one line, at most 300 characters, controls and invisible
    characters written as Python escapes. Values are substituted, never
    parsed as templates.

    :param failed: a server failed; needs ``{server}``, may use ``{reason}``.
    :raises ValueError: the template is not a format string, uses a placeholder
        it cannot have, lacks ``{server}``, or is blank.
    """

    failed: str = attrs.field(default=_FAILED, validator=_check_template)


DEFAULT_FAILURE_WORDING: Final = FailureWording()
"""The English wording :func:`failure_notices` uses unless told otherwise."""


@attrs.frozen
class FailureNotice:
    """One notice to append to the conversation before the next model call: a server failed (R-WS-8).

    Append it as the instruction messages are appended (a persistent message
    the user interface hides, at the end of the conversation), with
    :attr:`meta`: the marker in it is the only record that this failure was told.

    :param server: the server's name.
    :param text: the rendered notice.
    :param reason: why the server failed, as the text says it.
    :param sha256: which failure: the hex SHA-256 of the server's entry
        fingerprint, the failed generation and the reason.
    """

    server: str
    text: str
    reason: str
    sha256: str

    @property
    def meta(self) -> dict[str, dict[str, object]]:
        """``{MARKER_KEY: marker}``, a fresh JSON-ready dict: store it with the notice.

        As for :attr:`InstructionMessage.meta <wave_actors.InstructionMessage.meta>`,
        the marker is of the library's own type (R-INS-6); a host that stores its
        history as JSON passes it through :func:`~wave_actors.restore_instruction_meta`
        when it reloads it.
        """
        return library_meta(FAILED, self.server, self.sha256)


def failure_notices(
    history: Iterable[object], snapshot: SessionSnapshot, *, wording: FailureWording = DEFAULT_FAILURE_WORDING
) -> list[FailureNotice]:
    """The failure notices to append before the next model call (R-WS-8).

    Reads the markers in ``history`` as :func:`~wave_actors.instruction_updates`
    does (only each item's ``meta``, only markers the library made, R-INS-6);
    the last ``failed`` marker of each server says which of its failures was told.

    Returns a notice for each enabled server of ``snapshot`` in ``error``
    whose current failure is not the one its last marker records, sorted by
    server name: the same inputs give the same notices, byte for byte.

    :param history: the conversation so far, oldest first; never modified.
    :param snapshot: the session's servers now, e.g. ``session.snapshot()``.
    :param wording: the notice's template.
    :returns: the notices, possibly none; never an empty one.
    """
    told = _told(history)
    notices: list[FailureNotice] = []
    for status in sorted(snapshot.servers, key=lambda status: status.name):
        if not status.enabled or status.state is not ServerState.ERROR:
            continue
        reason = unavailable_reason(status) or ""
        digest = _failure_sha256(status, reason)
        if told.get(status.name) == digest:
            continue
        text = wording.failed.format(server=quoted(status.name), reason=reason)
        notices.append(FailureNotice(server=status.name, text=text, reason=reason, sha256=digest))
    return notices


def _failure_sha256(status: ServerStatus, reason: str) -> str:
    return text_sha256(json.dumps([status.fingerprint, status.generation, reason]))


def _told(history: Iterable[object]) -> dict[str, str]:
    """Each server's last told failure, by its digest."""
    told: dict[str, str] = {}
    for marker in library_markers(history):
        server, digest = marker.get("server"), marker.get("sha256")
        if marker.get("kind") == FAILED and isinstance(server, str) and isinstance(digest, str):
            told[server] = digest
    return told
