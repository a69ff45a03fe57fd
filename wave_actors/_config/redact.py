"""Keeping configured secrets out of everything printed or logged (R-CFG-12).

The values of ``env`` and ``headers`` and the query string of a ``url`` are
where tokens live (``Authorization: Bearer ...``, ``API_KEY=...``,
``?api_key=...``). Diagnostics, ``repr()``, status displays, the command line
and log records show their *names* only; these functions make that easy to do
everywhere the same way. They never raise, whatever the input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, cast

from wave_actors._config.expand import has_placeholder

__all__ = ["MASK", "describe_secret", "literal_secrets", "redact_mapping", "redact_url"]

MASK: Final = "***"
"""What stands in for a secret value."""


def redact_url(url: str) -> str:
    """``url`` with the secrets taken out: query values, the fragment and a password (R-CFG-12).

    ``https://user:pw@example.com/mcp?api_key=abc&v=2#tok`` becomes
    ``https://user:***@example.com/mcp?api_key=***&v=***#***``: the parameter
    names stay (they say what is configured), every value goes, whatever it
    is. A parameter without ``=`` could be a bare token and is masked whole.
    Scheme, host, port and path are kept. Not a URL parser: anything that is
    not a well-formed URL is redacted by the same rules, never rejected.

    :param url: any string.
    :returns: the string with every secret part replaced by :data:`MASK`.
    """
    rest, hash_, fragment = url.partition("#")
    rest, question, query = rest.partition("?")
    scheme, separator, after_scheme = rest.partition("://")
    if separator:
        authority, slash, path = after_scheme.partition("/")
        userinfo, at, host = authority.rpartition("@")
        if at:
            user, colon, _ = userinfo.partition(":")
            userinfo = user + (colon + MASK if colon else "")
        rest = scheme + separator + userinfo + at + host + slash + path
    if question:
        parameters = [_redact_parameter(parameter) for parameter in query.split("&")]
        rest += "?" + "&".join(parameters)
    if hash_:
        rest += "#" + (MASK if fragment else "")
    return rest


def _redact_parameter(parameter: str) -> str:
    if not parameter:
        return parameter
    name, equals, _ = parameter.partition("=")
    return f"{name}={MASK}" if equals else MASK


def redact_mapping(values: Mapping[str, object]) -> dict[str, str]:
    """``{name: "***"}`` for each name of ``values``: what an ``env`` or ``headers`` may show (R-CFG-12).

    :param values: an ``env`` or ``headers`` mapping.
    :returns: the same names, every value masked.
    """
    return dict.fromkeys(values, MASK)


def describe_secret(value: object) -> str:
    """Name a value that may be a secret by its JSON type only, never its content (R-CFG-12).

    For diagnostics about an ``env``, ``headers`` or ``url`` of the wrong type:
    ``"headers": "Authorization: Bearer ..."`` is "a string", ``"env":
    {"TOKEN": 123456}`` is "a number".

    :param value: a parsed JSON value (or anything a host passed instead).
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def _literal(value: object) -> bool:
    return isinstance(value, str) and bool(value) and not has_placeholder(value)


def literal_secrets(entry: Mapping[str, object]) -> list[str]:
    """Where an entry holds a secret as written, not as a ``${VAR}`` placeholder: names only (R-CFG-12).

    Every ``env`` value, ``headers`` value, URL password and URL query value
    that is not empty and holds no placeholder: ``env TOKEN``,
    ``header Authorization``, ``url password``, ``url query api_key``. A
    project file is shared with everyone who has the repository; these are
    what should be ``${VAR}`` there.

    :param entry: a raw server entry, as it would be written to a file.
    :returns: one description per literal value, in the entry's order; never a value.
    """
    found: list[str] = []
    for field, label in (("env", "env"), ("headers", "header")):
        values = entry.get(field)
        if isinstance(values, Mapping):
            named = cast(Mapping[object, object], values)
            found += [f"{label} {name}" for name, value in named.items() if _literal(value)]
    url = entry.get("url")
    if isinstance(url, str):
        rest, _, query = url.partition("#")[0].partition("?")
        authority = rest.partition("://")[2].partition("/")[0]
        userinfo, at, _ = authority.rpartition("@")
        if at and _literal(userinfo.partition(":")[2]):
            found.append("url password")
        for parameter in query.split("&") if query else ():
            name, equals, value = parameter.partition("=")
            if _literal(value if equals else name):
                found.append(f"url query {name if equals else 'value'}")
    return found
