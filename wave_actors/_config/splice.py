"""A configuration file's JSON document, edited by splicing its text (R-STORE-1).

:class:`SplicedDocument` holds one user or project file being edited: its
parsed content and its text, changed together. An edit replaces, inserts or
cuts only the bytes of the member it touches, so everything else stays byte
for byte: other entries, other top-level keys, their order, their formatting
and a byte-order mark. New text is written in the file's own style as far as
it can be told: indentation (spaces or tabs, how many), separators, line
endings, a final newline.

The splice works on text already parsed as valid JSON, so it locates members
with :class:`json.JSONDecoder` and never has to cope with a syntax error.
:meth:`SplicedDocument.encoded` checks the spliced text parses back to the
edited content and, if it ever did not, writes the whole document in the
file's style instead: a formatting loss, never a wrong file.

Its one caller is :class:`~wave_actors._config.store.ConfigStore`, which owns
versions, validation, locking and the atomic write; this module does no I/O.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Final, cast

import attrs

from wave_actors._config.sources import SERVERS_KEY, SERVERS_KEY_ALIAS, UnreadableFile, parse_json_document
from wave_actors._errors import ConfigError

__all__ = ["SplicedDocument"]

_INDENTED_LINE: Final = re.compile(r"\n([ \t]*)\S")
_WHITESPACE: Final = " \t\n\r"
_DECODER: Final = json.JSONDecoder()


@attrs.frozen
class _Style:
    """How a file writes its JSON: what new text is written like."""

    indent: str | None = "  "
    key_separator: str = ": "
    item_separator: str = ", "
    newline: str = "\n"

    @classmethod
    def of(cls, text: str) -> _Style:
        newline = "\r\n" if "\r\n" in text else "\n"
        key_separator = ": " if re.search(r'"\s*:\s', text) else ":"
        if "\n" in text.strip():
            indented = _INDENTED_LINE.search(text)
            return cls(indented.group(1) if indented else "", key_separator, ",", newline)
        if "," not in text:  # nothing to go by: spaced like the key separator
            return cls(None, key_separator, "," + key_separator[1:], newline)
        return cls(None, key_separator, ", " if re.search(r",\s", text) else ",", newline)

    def render(self, value: object, line_indent: str | None) -> str:
        """``value`` as JSON whose lines after the first start with ``line_indent``; one line when ``None``."""

        def dumps(ensure_ascii: bool) -> str:
            if self.indent is None or line_indent is None:
                separators = (self.item_separator, self.key_separator)
                return json.dumps(value, separators=separators, ensure_ascii=ensure_ascii)
            text = json.dumps(
                value, indent=self.indent, separators=(",", self.key_separator), ensure_ascii=ensure_ascii
            )
            return text.replace("\n", self.newline + line_indent)

        text = dumps(False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate in a name: kept, as an escape
            return dumps(True)
        return text


@attrs.frozen
class _Member:
    """Where one ``"key": value`` of an object is in a file's text."""

    key: str
    key_start: int
    value_start: int
    value_end: int


@attrs.frozen
class _Object:
    """Where an object and its members are in a file's text: ``{`` at ``open``, ``}`` at ``close``."""

    open: int
    close: int
    members: tuple[_Member, ...]

    def last(self, key: str) -> _Member | None:
        found = [member for member in self.members if member.key == key]
        return found[-1] if found else None


def _skip_whitespace(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _object_at(text: str, index: int) -> _Object:
    """The object whose ``{`` is at ``index`` in text already parsed as valid JSON."""
    members: list[_Member] = []
    position = _skip_whitespace(text, index + 1)
    while text[position] != "}":
        key, after_key = cast(tuple[str, int], _DECODER.raw_decode(text, position))
        value_start = _skip_whitespace(text, _skip_whitespace(text, after_key) + 1)  # past the ":"
        _, value_end = _DECODER.raw_decode(text, value_start)
        members.append(_Member(key, position, value_start, value_end))
        position = _skip_whitespace(text, value_end)
        if text[position] == ",":
            position = _skip_whitespace(text, position + 1)
    return _Object(index, position, tuple(members))


def _line_indent(text: str, index: int) -> str | None:
    """The whitespace before ``index`` on its line, or ``None`` when something else precedes it there."""
    prefix = text[text.rfind("\n", 0, index) + 1 : index]
    return prefix if not prefix.strip(_WHITESPACE) else None


def _leading_whitespace(text: str, index: int) -> str:
    line = text[text.rfind("\n", 0, index) + 1 : index]
    return line[: len(line) - len(line.lstrip(" \t"))]


class SplicedDocument:
    """A configuration file being edited: its parsed content and its text, changed together.

    Edits are spliced into the text, so everything the edit does not touch
    stays byte for byte (other entries, other keys, their formatting and
    order, a byte-order mark). :meth:`encoded` checks the spliced text parses
    back to the edited content and falls back to writing the whole document
    in the file's style if it ever does not.

    :param data: the file's content, ``None`` when it does not exist (an
        empty document, written whole).
    :param path: the file, named in errors.
    :raises ConfigError: ``data`` is not a JSON document, its top level is
        not an object, or its servers (``mcpServers`` or ``mcp_servers``) are
        not an object; the file must be fixed by hand.
    """

    def __init__(self, data: bytes | None, path: Path) -> None:
        self.bom = False
        self.text: str | None = None
        self.style = _Style()
        self.root: dict[str, object] = {}
        self.key = SERVERS_KEY
        self.servers: dict[str, object] = {}
        if data is None:
            return
        try:
            parsed = parse_json_document(data)
        except UnreadableFile as error:
            raise ConfigError(f"cannot edit {path}: it is {error}; fix it by hand first") from None
        if not isinstance(parsed, dict):
            raise ConfigError(
                f'cannot edit {path}: the top level is not a JSON object like {{"{SERVERS_KEY}": {{}}}}; '
                "fix it by hand first"
            )
        self.root = cast(dict[str, object], parsed)
        if SERVERS_KEY_ALIAS in self.root and SERVERS_KEY not in self.root:
            self.key = SERVERS_KEY_ALIAS
        servers = self.root.get(self.key, {})
        if not isinstance(servers, dict):
            raise ConfigError(
                f'cannot edit {path}: "{self.key}" is not an object of {{name: entry}}; fix it by hand first'
            )
        self.servers = cast(dict[str, object], servers)
        text = data.decode("utf-8")
        self.bom = text.startswith("\ufeff")
        self.text = text.removeprefix("\ufeff")
        self.style = _Style.of(self.text)

    def _top(self, text: str) -> _Object:
        return _object_at(text, _skip_whitespace(text, 0))

    def _servers_object(self, text: str) -> _Object | None:
        member = self._top(text).last(self.key)
        return None if member is None else _object_at(text, member.value_start)

    def remove(self, name: str) -> None:
        """Remove every member ``name`` of the servers object."""
        del self.servers[name]
        while self.text is not None:
            servers = self._servers_object(self.text)
            members = servers.members if servers is not None else ()
            index = next((i for i, member in enumerate(members) if member.key == name), None)
            if servers is None or index is None:
                return
            if index + 1 < len(members):  # up to the next key: it takes this one's place and indentation
                start, end = members[index].key_start, members[index + 1].key_start
            elif index > 0:  # the last one: from the end of the one before
                start, end = members[index - 1].value_end, members[index].value_end
            else:  # the only one
                start, end = servers.open + 1, servers.close
            self.text = self.text[:start] + self.text[end:]

    def set(self, name: str, entry: object) -> None:
        """Replace the entry of ``name``, or add it after the last server."""
        replacing = name in self.servers
        self.servers[name] = entry
        if self.key not in self.root:
            self.root[self.key] = self.servers
            if self.text is not None:
                self.text = self._add_member(self.text, self._top(self.text), self.key, {name: entry})
            return
        if self.text is None:
            return
        servers = self._servers_object(self.text)
        if servers is None:
            return
        member = servers.last(name) if replacing else None
        if member is None:
            self.text = self._add_member(self.text, servers, name, entry)
            return
        rendered = self.style.render(entry, _line_indent(self.text, member.key_start))
        self.text = self.text[: member.value_start] + rendered + self.text[member.value_end :]

    def _add_member(self, text: str, target: _Object, key: str, value: object) -> str:
        style = self.style
        if target.members:
            last = target.members[-1]
            indent = _line_indent(text, last.key_start)
            lead = style.item_separator if indent is None else "," + style.newline + indent
            piece = lead + json.dumps(key) + style.key_separator + style.render(value, indent)
            return text[: last.value_end] + piece + text[last.value_end :]
        if style.indent is None:
            piece = json.dumps(key) + style.key_separator + style.render(value, None)
        else:
            outer = _leading_whitespace(text, target.open)
            inner = outer + style.indent
            member = json.dumps(key) + style.key_separator + style.render(value, inner)
            piece = style.newline + inner + member + style.newline + outer
        return text[: target.open + 1] + piece + text[target.close :]

    def encoded(self) -> bytes:
        """The file's new content."""
        expected = json.dumps(self.root)
        text = self.text
        if text is not None:
            try:
                if json.dumps(json.loads(text)) != expected:
                    text = None
            except ValueError:
                text = None
        if text is None:  # a new file, or a splice that went wrong: the whole document, in the file's style
            text = self.style.render(self.root, "") + self.style.newline
        return (("\ufeff" if self.bom else "") + text).encode("utf-8", "backslashreplace")
