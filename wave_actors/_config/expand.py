"""``${VAR}`` and ``${VAR:-default}`` placeholders in file-source entries (R-CFG-5).

Only the project and user files are expanded, and only in ``command``,
``args``, ``env`` values, ``url`` and ``headers`` values; the caller decides
which strings those are. The rules follow the shell's ``:-`` operator:

* ``${VAR}`` becomes the variable's value. When it is not set the placeholder
  stays literal and is reported as missing, so the caller can warn.
* ``${VAR:-default}`` becomes the value when it is set *and not empty*, the
  default otherwise. It is never missing.

Defaults are literal text (no nested placeholders) and cannot contain ``}``.
Something that only looks like a placeholder (``${not a name}``, ``$VAR``) is
left alone without a warning. There is no ``$$`` escape.

Expansion takes time linear in the string's length, whatever it holds: a
project file is the repository's to write, and a regular expression that
rescans to the end of the string from every ``${X:-`` would hold the GIL for
minutes on a 1 MiB file (R-CFG-11).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

import attrs

__all__ = ["Expansion", "expand_variables", "has_placeholder"]

_PLACEHOLDER: Final = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}")


@attrs.frozen
class Expansion:
    """The result of expanding one string.

    :param text: the string with every resolvable placeholder replaced.
    :param missing: names of unset variables without a default, in order of
        appearance, each once; their placeholders are still in :attr:`text`.
    """

    text: str
    missing: tuple[str, ...] = ()


def expand_variables(text: str, environ: Mapping[str, str]) -> Expansion:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in ``text`` from ``environ`` (R-CFG-5).

    :param text: a string from a file-source entry.
    :param environ: the variables to expand from (usually ``os.environ``).
    :returns: the expanded text and the names that could not be resolved.
    """
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        default = match["default"]
        value = environ.get(name)
        if default is not None:
            return value if value else default
        if value is not None:
            return value
        if name not in missing:
            missing.append(name)
        return match[0]

    # After the last "}" no placeholder can end, and looking for one from every "${X:-" there would take
    # quadratic time; before it, every "${X:-" match succeeds at the next "}" and consumes what it scanned.
    end = text.rfind("}") + 1
    return Expansion(_PLACEHOLDER.sub(replace, text[:end]) + text[end:], tuple(missing))


def has_placeholder(text: str) -> bool:
    """Whether ``text`` holds a ``${VAR}`` or ``${VAR:-default}`` placeholder (R-CFG-5).

    Linear in the length of ``text``, like :func:`expand_variables`.
    """
    return _PLACEHOLDER.search(text, 0, text.rfind("}") + 1) is not None
