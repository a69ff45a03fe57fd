"""The asyncio face has the trio API's shapes (R-AIO-1): the same public names on Host and Session, each documented."""

from __future__ import annotations

import inspect

import wave_actors
import wave_actors.asyncio as face


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


# A login is a trio object (an async context manager yielding a flow whose methods are trio's),
# and so is the host's credential store: for now they are reached through the trio face.
TRIO_ONLY = {"login", "credentials"}


def test_host_and_session_have_the_trio_faces_names_and_no_others() -> None:
    assert _public(face.Session) == _public(wave_actors.Session) - TRIO_ONLY
    assert _public(face.Host) == _public(wave_actors.Host) - TRIO_ONLY


def test_the_openers_take_the_trio_openers_parameters() -> None:
    def parameters(function: object) -> dict[str, object]:
        return {name: p.default for name, p in inspect.signature(function).parameters.items()}  # type: ignore[arg-type]

    assert parameters(face.Host.open) == parameters(wave_actors.Host.open)
    assert parameters(face.open_session) == parameters(wave_actors.open_session)


def test_every_public_name_of_the_face_is_documented() -> None:
    for cls in (face.Host, face.Session):
        assert inspect.getdoc(cls)
        undocumented = [name for name in _public(cls) if not inspect.getdoc(getattr(cls, name))]
        assert undocumented == [], f"{cls.__name__}: {undocumented}"
    for function in (face.open_session, face.reclaim_on_signals):
        assert inspect.getdoc(function)
    assert face.__doc__ is not None and "guest" in face.__doc__  # the measured choice, with its figures


def test_awaited_methods_stay_awaited_and_getters_stay_plain() -> None:
    for cls, trio_cls in ((face.Session, wave_actors.Session), (face.Host, wave_actors.Host)):
        for name in _public(cls):
            ours, theirs = inspect.getattr_static(cls, name), inspect.getattr_static(trio_cls, name)
            if callable(theirs) and not isinstance(theirs, (classmethod, staticmethod)):
                assert inspect.iscoroutinefunction(ours) == inspect.iscoroutinefunction(theirs), name
