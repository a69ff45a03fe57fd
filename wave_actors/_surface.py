"""How public names present themselves: private constructors and public module names.

Both follow trio (``trio._util``): objects that only the library may build get
a metaclass that refuses ``Class(...)`` and offers ``Class._create(...)``
instead, and every name re-exported from :mod:`wave_actors` reports
``wave_actors`` as its module, so tracebacks and reprs say
``wave_actors.ServerUnavailable``, not the private module it lives in.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from typing import Any, NoReturn, TypeVar

import attrs

__all__ = ["NoPublicConstructor", "fixup_module_metadata"]

_T = TypeVar("_T")


class NoPublicConstructor(type):
    """Metaclass for classes whose instances only the library creates.

    ``Session(...)`` raises :class:`TypeError` naming the supported way;
    the library calls ``Session._create(...)``.
    """

    def __call__(cls, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(f"{cls.__module__}.{cls.__qualname__} has no public constructor; {_HOW.get(cls.__name__, '')}")

    def _create(cls: type[_T], *args: Any, **kwargs: Any) -> _T:
        return super().__call__(*args, **kwargs)  # type: ignore[misc]


_HOW: Mapping[str, str] = {
    "Session": "create one with Host.create_session() or open_session()",
    "Host": "open one with Host.open()",
    "LoginFlow": "start a login with Session.login() or Host.login()",
}


def fixup_module_metadata(module_name: str, namespace: Mapping[str, object]) -> None:
    """Set ``__module__`` of every public class and function in ``namespace`` to ``module_name``.

    Only objects defined inside the package are changed (never re-exported
    third-party names); nested classes and methods get their ``__qualname__``
    kept, as trio does.

    :param module_name: the public module, e.g. ``"wave_actors"``.
    :param namespace: that module's ``globals()``.
    """
    seen: set[int] = set()

    def fix(name: str, obj: object) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        module = getattr(obj, "__module__", None)
        if not isinstance(module, str) or not module.startswith(module_name + "."):
            return
        if isinstance(obj, type):
            _resolve_annotations(obj)
        try:
            obj.__module__ = module_name  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            return  # a type alias or a read-only object: leave it
        if isinstance(obj, type):
            for attribute_name, attribute in vars(obj).items():
                if not attribute_name.startswith("_") and callable(attribute):
                    fix(attribute_name, attribute)

    for name, obj in namespace.items():
        if not name.startswith("_"):
            fix(name, obj)


def _resolve_annotations(cls: type) -> None:
    """Resolve ``cls``'s string annotations where it is defined, before its ``__module__`` changes.

    ``typing.get_type_hints`` (and attrs, and cattrs) look names up in
    ``sys.modules[cls.__module__]``; once that says ``wave_actors``, names the
    defining module imported (``Mapping``, ``Path``, ...) would not be found.
    Annotations that cannot be resolved (imported only for type checking) are
    left as they are.
    """
    try:
        hints = typing.get_type_hints(cls)
    except Exception:
        return
    own = inspect.get_annotations(cls)
    cls.__annotations__ = {name: hints.get(name, annotation) for name, annotation in own.items()}
    if attrs.has(cls):
        attrs.resolve_types(cls)
