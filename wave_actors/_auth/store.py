"""Where the secret half of a login lives: the system keyring, or owner-only files the host chooses (R-AUTH-3).

A :class:`CredentialStore` keeps one text per key and nothing else: what the
text is (:class:`~wave_actors._auth.records.StoredLogin`), which version of
it is current and who may write it are decided by
:class:`~wave_actors._auth.credentials.Credentials`, under its lock. Two
stores ship:

- :class:`KeyringCredentialStore`, the default: the ``keyring`` package
  (macOS Keychain, the Secret Service of a Linux desktop session, Windows
  Credential Manager). ``keyring`` is an optional dependency
  (``pip install 'wave-actors[keyring]'``), imported the first time a secret
  is read or written. When it is missing, has no usable backend, or the
  backend fails (a locked keyring, no session D-Bus), the store says so with
  :class:`~wave_actors.CredentialStoreError`; it never falls back to files.
- :class:`FileCredentialStore`, which a host must choose explicitly (daemons,
  CI, tests): one file per key, mode ``0600``, in a directory of mode
  ``0700``, each written atomically.

Every method blocks: call them from a worker thread.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from types import ModuleType
from typing import Final, Protocol, final, runtime_checkable

from wave_actors._config.atomic import replace_atomically
from wave_actors._errors import CredentialStoreError

__all__ = ["SERVICE", "CredentialStore", "FileCredentialStore", "KeyringCredentialStore", "private_directory"]

SERVICE: Final = "wave-actors"
"""The keyring service name the default store files its secrets under."""

_FILE_HINT: Final = 'or choose the file store (credentials="file"): owner-only files under the home directory'


@runtime_checkable
class CredentialStore(Protocol):
    """Keeps one secret text per key. Every method blocks (it is called from a worker thread).

    Implement it to keep logins in a vault of the host's own; a store holds
    secrets only, and never decides anything about them.
    """

    @property
    def description(self) -> str:
        """What the store is, for messages: ``"the system keyring"``, ``"files in /home/me/.wave/oauth"``."""
        ...

    def read(self, key: str) -> str | None:
        """The secret filed under ``key``, or ``None`` when there is none.

        :raises CredentialStoreError: the store cannot be read.
        """
        ...

    def write(self, key: str, secret: str) -> None:
        """File ``secret`` under ``key``, replacing what was there.

        :raises CredentialStoreError: the store cannot be written.
        """
        ...

    def delete(self, key: str) -> None:
        """Remove what is filed under ``key``; nothing there is fine.

        :raises CredentialStoreError: the store cannot be written.
        """
        ...


@final
class KeyringCredentialStore:
    """The system keyring, through the optional ``keyring`` package: the default store.

    :param service: the service name secrets are filed under.
    """

    def __init__(self, service: str = SERVICE) -> None:
        self._service = service

    @property
    def description(self) -> str:
        return "the system keyring"

    def __repr__(self) -> str:
        return f"KeyringCredentialStore(service={self._service!r})"

    def read(self, key: str) -> str | None:
        keyring = self._keyring()
        try:
            return keyring.get_password(self._service, key)
        except Exception as error:
            raise self._failed("read", error) from None

    def write(self, key: str, secret: str) -> None:
        keyring = self._keyring()
        try:
            keyring.set_password(self._service, key, secret)
        except Exception as error:
            raise self._failed("write to", error) from None

    def delete(self, key: str) -> None:
        keyring = self._keyring()
        try:
            if keyring.get_password(self._service, key) is not None:
                keyring.delete_password(self._service, key)
        except Exception as error:
            raise self._failed("write to", error) from None

    def _keyring(self) -> ModuleType:
        try:
            import keyring  # pyright: ignore[reportMissingModuleSource]  # optional: wave-actors[keyring]
        except ImportError:
            raise CredentialStoreError(
                "OAuth credentials are kept in the system keyring, but the keyring package is not installed; "
                f"install it with: pip install 'wave-actors[keyring]', {_FILE_HINT}"
            ) from None
        backend = keyring.get_keyring()
        if type(backend).__module__.startswith("keyring.backends.fail"):
            raise CredentialStoreError(
                "OAuth credentials are kept in the system keyring, but no keyring is available here "
                "(on Linux it needs a session D-Bus and an unlocked Secret Service keyring such as GNOME Keyring); "
                f"start one, {_FILE_HINT}"
            )
        return keyring

    @staticmethod
    def _failed(what: str, error: Exception) -> CredentialStoreError:
        # The backend's own words name the keyring and why (locked, no D-Bus); never a secret.
        return CredentialStoreError(
            f"could not {what} the system keyring: {type(error).__name__}: {error}; it was not replaced by a file"
        )


def private_directory(directory: Path) -> Path:
    """``directory``, created with mode ``0700`` when missing; an existing one of ours is narrowed to ``0700``.

    :raises CredentialStoreError: it cannot be created, is not a directory, or belongs to someone else.
    """
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
        if not stat.S_ISDIR(info.st_mode):
            raise CredentialStoreError(f"{directory} is not a directory")
        if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
            raise CredentialStoreError(f"{directory} belongs to another user; OAuth credentials are not kept there")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(directory, 0o700)
    except OSError as error:
        raise CredentialStoreError(f"cannot use {directory} for OAuth credentials: {error.strerror or error}") from None
    return directory


@final
class FileCredentialStore:
    """Owner-only files in ``directory``: ``<key>.secret.json``, mode ``0600``, written atomically.

    For hosts without a keyring (daemons, CI, tests); choose it explicitly
    (``credentials="file"`` keeps them in ``<home>/oauth``). Anyone who can
    read the files as this user can use the logins: keep the directory on a
    disk only its user reads.

    :param directory: where the files go; created with mode ``0700``.
    """

    def __init__(self, directory: Path | str) -> None:
        self._directory = Path(directory).expanduser()

    @property
    def directory(self) -> Path:
        """Where the files are."""
        return self._directory

    @property
    def description(self) -> str:
        return f"files in {self._directory}"

    def __repr__(self) -> str:
        return f"FileCredentialStore({str(self._directory)!r})"

    def path(self, key: str) -> Path:
        """The file of ``key``."""
        return self._directory / f"{key}.secret.json"

    def read(self, key: str) -> str | None:
        try:
            return self.path(key).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            raise CredentialStoreError(f"cannot read {self.path(key)}: {error}") from None

    def write(self, key: str, secret: str) -> None:
        private_directory(self._directory)
        try:
            replace_atomically(self.path(key), secret.encode("utf-8"), mode=0o600)
        except OSError as error:
            raise CredentialStoreError(f"cannot write {self.path(key)}: {error.strerror or error}") from None

    def delete(self, key: str) -> None:
        try:
            self.path(key).unlink(missing_ok=True)
        except OSError as error:
            raise CredentialStoreError(f"cannot remove {self.path(key)}: {error.strerror or error}") from None
