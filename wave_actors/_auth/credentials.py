"""The OAuth credentials of one machine user: where they live, and how processes agree on them (R-AUTH-3).

:class:`Credentials` pairs a :class:`~wave_actors._auth.store.CredentialStore`
(the secrets) with a directory of owner-only records under the host's home,
``<home>/oauth`` (no secret in them), and is the only writer of both. Per
server name:

- ``<key>.lock``: an ``flock`` held for every read-modify-write, so the
  processes of one machine take turns (the kernel drops it when its holder
  dies);
- ``<key>.record.json``: the :class:`~wave_actors._auth.records.LoginRecord`,
  whose version every commit raises.

The rules, each a compare-and-set under the lock:

- a refresh commits only over the version it refreshed: a logout, a login or
  another process's refresh in between wins, and the refreshed tokens are
  dropped (a late answer can never bring removed credentials back);
- a login takes a number when it starts and commits only while that number
  is still the newest: a newer login, or a logout, wins over it;
- a logout raises both, writing the record before removing the secret, so
  a secret left behind by a failed removal is already unusable;
- a stored login is used only when its version is the record's, so a
  secret written by a process that died before committing its record is
  never used.

A failed login or exchange writes nothing: what was stored stays.

It also keeps, for this process, what the servers last said when they asked
for a login (:class:`~wave_actors._auth.challenge.Challenge`), and who waits
for a login to complete (a server that asked connects by itself afterwards).

The blocking methods (``*_blocking``) run in worker threads; the async ones
wrap them.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import time
import weakref
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Final, Literal, ParamSpec, TypeVar, final

import attrs
import trio

from wave_actors._auth.challenge import Challenge
from wave_actors._auth.records import LoginRecord, RecordInvalid, StoredLogin
from wave_actors._auth.status import LoginStatus, login_status
from wave_actors._auth.store import CredentialStore, FileCredentialStore, KeyringCredentialStore, private_directory
from wave_actors._config.atomic import LockTimeout, exclusive_lock, replace_atomically
from wave_actors._config.sources import default_home
from wave_actors._errors import CredentialStoreError, LoginSuperseded

__all__ = ["RECORDS_DIRECTORY", "Credentials", "StoreChoice", "Vault", "credentials_for", "vault_of"]

logger = logging.getLogger(__name__)

RECORDS_DIRECTORY: Final = "oauth"
"""The directory under the home that holds the records (and the file store's secrets)."""

StoreChoice = Literal["keyring", "file"]
"""``"keyring"``: the system keyring (the default); ``"file"``: owner-only files in ``<home>/oauth``."""

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")


def credential_key(name: str) -> str:
    """The key a server's records and secret are filed under: readable, file-name safe, one per name."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    readable = _UNSAFE.sub("_", name).strip("._")[:40] or "server"
    return f"{readable}-{digest}"


@final
class Vault:
    """The machinery behind a :class:`Credentials`: the records, the store, the lock, this process's memory.

    :param home: the host's home; the records go in ``<home>/oauth``.
    :param store: where the secrets live.
    :param lock_timeout: seconds to wait for another process holding a record's lock.
    """

    def __init__(self, home: Path, store: CredentialStore, *, lock_timeout: float) -> None:
        self._home = home
        self._records = home / RECORDS_DIRECTORY
        self._store = store
        self._lock_timeout = lock_timeout
        self._challenges: dict[str, Challenge] = {}
        self._waiting: dict[str, list[weakref.WeakMethod[Callable[[], None]]]] = {}

    @property
    def store(self) -> CredentialStore:
        """Where the secrets live."""
        return self._store

    # Paths.

    def record_path(self, name: str) -> Path:
        """The record of server ``name``."""
        return self._records / f"{credential_key(name)}.record.json"

    def _lock_path(self, name: str) -> Path:
        return self._records / f"{credential_key(name)}.lock"

    # Reading (blocking).

    def record_blocking(self, name: str) -> LoginRecord | None:
        """Server ``name``'s record; ``None`` when it has none (or an unreadable one, which counts as none)."""
        try:
            text = self.record_path(name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            logger.debug("server %r: the login record could not be read: %s", name, error)
            return None
        try:
            return LoginRecord.from_json(text)
        except RecordInvalid as error:
            logger.debug("server %r: the login record is unusable (%s); it counts as none", name, error)
            return None

    def read_blocking(self, name: str) -> tuple[LoginRecord, StoredLogin] | None:
        """Server ``name``'s committed login, with its record; ``None`` when there is none.

        The store is read only when the record says a login is committed; a
        stored login of another version than the record's (uncommitted, or
        replaced) is not accepted.

        :raises CredentialStoreError: the store cannot be read (a missing or locked keyring).
        """
        record = self.record_blocking(name)
        if record is None or not record.present:
            return None
        text = self._store.read(credential_key(name))
        if text is None:
            logger.debug("server %r: the record names a login the store does not have", name)
            return None
        try:
            login = StoredLogin.from_json(text)
        except RecordInvalid as error:
            logger.debug("server %r: the stored login is unusable (%s)", name, error)
            return None
        if login.version != record.version:
            logger.debug("server %r: the stored login is not the committed one; not used", name)
            return None
        return record, login

    def record_stamp(self, name: str) -> tuple[int, int, int] | None:
        """What changes whenever the record is written (inode, size, mtime): a cheap ``stat``, fine on the event loop."""
        try:
            info = os.stat(self.record_path(name))
        except OSError:
            return None
        return info.st_ino, info.st_size, info.st_mtime_ns

    # Writing (blocking), each under the record's lock.

    def begin_login_blocking(self, name: str) -> int:
        """Take the number of a new login of ``name``: every login started before it can no longer commit."""
        with self._locked(name):
            record = self.record_blocking(name) or LoginRecord()
            record = attrs.evolve(record, login=record.login + 1, updated_at=time.time())
            self._write_record(name, record)
            return record.login

    def commit_login_blocking(self, name: str, ticket: int, login: StoredLogin) -> StoredLogin:
        """Store ``login`` as ``name``'s, if the login numbered ``ticket`` is still the newest.

        :returns: the login as stored (with its version).
        :raises LoginSuperseded: a newer login, or a logout, came after it started; nothing was written.
        :raises CredentialStoreError: the store cannot be written; the record is unchanged.
        """
        with self._locked(name):
            record = self.record_blocking(name) or LoginRecord()
            if record.login != ticket:
                raise LoginSuperseded(
                    f"server {name!r}: a newer login or a logout came after this login started; this one was not saved"
                )
            return self._commit(name, record, login)

    def commit_refresh_blocking(self, name: str, version: int, login: StoredLogin) -> StoredLogin | None:
        """Store refreshed tokens as ``name``'s, if the stored login is still the one of ``version``.

        :returns: the login as stored; ``None`` when something else was
            committed since (a logout, a login, another refresh), and nothing was written.
        """
        with self._locked(name):
            record = self.record_blocking(name)
            if record is None or not record.present or record.version != version:
                return None
            return self._commit(name, record, login)

    def remove_blocking(self, name: str) -> bool:
        """Log ``name`` out: every earlier login and refresh can no longer commit; the stored login goes.

        :returns: whether a login was stored.
        :raises CredentialStoreError: the secret could not be removed (the record already disowns it).
        """
        with self._locked(name):
            record = self.record_blocking(name) or LoginRecord()
            self._write_record(name, record.removed())
            self._store.delete(credential_key(name))
            return record.present

    def note_needs_login_blocking(self, name: str, reason: str) -> None:
        """Record that ``name`` asked for a login (for status lines in every process) until one is committed."""
        with self._locked(name):
            record = self.record_blocking(name) or LoginRecord()
            if record.needs_login != reason:
                self._write_record(name, attrs.evolve(record, needs_login=reason, updated_at=time.time()))

    def _commit(self, name: str, record: LoginRecord, login: StoredLogin) -> StoredLogin:
        committed = record.committed(login)
        stored = attrs.evolve(login, version=committed.version, saved_at=committed.updated_at)
        # The secret first: until the record says its version, it is not used by anyone.
        self._store.write(credential_key(name), stored.to_json())
        self._write_record(name, committed)
        return stored

    @contextlib.contextmanager
    def _locked(self, name: str) -> Generator[None]:
        private_directory(self._records)
        path = self._lock_path(name)
        try:
            lock = exclusive_lock(path, timeout=self._lock_timeout)
            lock.__enter__()
        except LockTimeout:
            raise CredentialStoreError(
                f"server {name!r}: another process held the login lock {path} for over {self._lock_timeout:g} s"
            ) from None
        except OSError as error:
            raise CredentialStoreError(f"cannot lock {path}: {error.strerror or error}") from None
        try:
            yield
        finally:
            lock.__exit__(None, None, None)

    def _write_record(self, name: str, record: LoginRecord) -> None:
        try:
            replace_atomically(self.record_path(name), record.to_json().encode(), mode=0o600)
        except OSError as error:
            raise CredentialStoreError(f"cannot write {self.record_path(name)}: {error.strerror or error}") from None

    # The same, from the event loop.

    async def read(self, name: str) -> tuple[LoginRecord, StoredLogin] | None:
        """:meth:`read_blocking` in a worker thread."""
        return await _in_thread(self.read_blocking, name)

    async def record(self, name: str) -> LoginRecord | None:
        """:meth:`record_blocking` in a worker thread."""
        return await _in_thread(self.record_blocking, name)

    async def begin_login(self, name: str) -> int:
        """:meth:`begin_login_blocking` in a worker thread."""
        return await _in_thread(self.begin_login_blocking, name)

    async def commit_login(self, name: str, ticket: int, login: StoredLogin) -> StoredLogin:
        """:meth:`commit_login_blocking` in a worker thread; then whoever waits for ``name``'s login is told."""
        stored = await _in_thread(self.commit_login_blocking, name, ticket, login)
        self._challenges.pop(name, None)
        self._logged_in(name)
        return stored

    async def commit_refresh(self, name: str, version: int, login: StoredLogin) -> StoredLogin | None:
        """:meth:`commit_refresh_blocking` in a worker thread."""
        return await _in_thread(self.commit_refresh_blocking, name, version, login)

    async def note_needs_login(self, name: str, reason: str) -> None:
        """:meth:`note_needs_login_blocking` in a worker thread; a failure to write it is only logged."""
        try:
            await _in_thread(self.note_needs_login_blocking, name, reason)
        except (CredentialStoreError, OSError) as error:
            logger.debug("server %r: could not record that it needs a login: %s", name, error)

    async def logout(self, name: str) -> bool:
        """:meth:`remove_blocking` in a worker thread; this process forgets the server's challenge."""
        removed = await _in_thread(self.remove_blocking, name)
        self._challenges.pop(name, None)
        return removed

    # This process's memory: challenges, and who waits for a login.

    def note_challenge(self, name: str, challenge: Challenge) -> None:
        """Keep what server ``name`` said when it last asked for a login; a login starts from it."""
        self._challenges[name] = challenge

    def challenge(self, name: str) -> Challenge | None:
        """What server ``name`` last said when it asked for a login in this process, if it did."""
        return self._challenges.get(name)

    def when_logged_in(self, name: str, callback: Callable[[], None]) -> None:
        """Call ``callback`` (a bound method, held weakly) once, after the next login of ``name`` in this process."""
        self._waiting.setdefault(name, []).append(weakref.WeakMethod(callback))  # pyright: ignore[reportArgumentType]

    def _logged_in(self, name: str) -> None:
        for reference in self._waiting.pop(name, ()):
            callback = reference()
            if callback is not None:
                try:
                    callback()
                except Exception:  # one waiter's failure must not keep the others from hearing
                    logger.exception("server %r: a callback after its login raised; ignored", name)


@final
class Credentials:
    """Where a host keeps the OAuth logins of its remote servers, shared by every process of the user (R-AUTH-3).

    Build one per home and hand it to :meth:`Host.open <wave_actors.Host.open>`
    or :func:`~wave_actors.open_session` (``credentials=``), or let them build
    it from ``credentials="keyring"`` (the default) or ``"file"``. Every
    session of a host shares it: a login made in one is used by all. The
    secrets go to the store; owner-only records under ``<home>/oauth``, which
    hold no secret, let the processes of the machine agree on them.

    :param home: the host's home (default ``~/.wave``).
    :param store: ``"keyring"`` (the system keyring, through the optional
        ``keyring`` package: ``pip install 'wave-actors[keyring]'``), ``"file"``
        (owner-only files in ``<home>/oauth``), or a :class:`CredentialStore`
        of the host's.
    :param lock_timeout: seconds to wait for another process holding a record's lock.
    :raises TypeError: ``store`` is none of those.
    """

    def __init__(
        self,
        home: Path | str | None = None,
        store: StoreChoice | CredentialStore = "keyring",
        *,
        lock_timeout: float = 10.0,
    ) -> None:
        self._home = default_home() if home is None else Path(home).expanduser()
        if store == "keyring":
            chosen: CredentialStore = KeyringCredentialStore()
        elif store == "file":
            chosen = FileCredentialStore(self._home / RECORDS_DIRECTORY)
        elif isinstance(store, CredentialStore):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers are untyped too
            chosen = store
        else:
            raise TypeError(f'store must be "keyring", "file" or a CredentialStore, not {store!r}')
        self._vault = Vault(self._home, chosen, lock_timeout=lock_timeout)

    def __repr__(self) -> str:
        return f"Credentials(home={str(self._home)!r}, store={self._vault.store!r})"

    @property
    def home(self) -> Path:
        """The host's home."""
        return self._home

    @property
    def records_directory(self) -> Path:
        """``<home>/oauth``: the records and their locks (and the file store's secrets)."""
        return self._home / RECORDS_DIRECTORY

    @property
    def store(self) -> CredentialStore:
        """Where the secrets live."""
        return self._vault.store

    async def status(self, name: str, url: str | None) -> LoginStatus:
        """Server ``name``'s login, for an entry with ``url``: read from its record, never the store, never a token.

        :param name: the server's name.
        :param url: the entry's URL; ``None`` (a stdio server) has no login.
        """
        return login_status(await self._vault.record(name), url)

    def status_blocking(self, name: str, url: str | None) -> LoginStatus:
        """:meth:`status`, blocking: for a worker thread or a command line."""
        return login_status(self._vault.record_blocking(name), url)

    async def logout(self, name: str) -> bool:
        """Remove server ``name``'s login, in every process of this machine (R-AUTH-3).

        Logins started before it can no longer be saved, and a refresh in
        flight (here or in another process) is dropped when it answers. A
        connection that still holds the old tokens stops sending them at its
        next request. The configuration is untouched.

        :returns: whether a login was stored.
        :raises CredentialStoreError: the store could not be written.
        """
        return await self._vault.logout(name)


def vault_of(credentials: Credentials) -> Vault:
    """The machinery of ``credentials``, for the connections and logins of the library."""
    return credentials._vault  # pyright: ignore[reportPrivateUsage]  # the library's own access


_Arguments = ParamSpec("_Arguments")
_Result = TypeVar("_Result")


async def _in_thread(
    function: Callable[_Arguments, _Result], *args: _Arguments.args, **kwargs: _Arguments.kwargs
) -> _Result:
    return await trio.to_thread.run_sync(lambda: function(*args, **kwargs))


def credentials_for(home: Path | str | None, choice: Credentials | StoreChoice | CredentialStore | None) -> Credentials:
    """The :class:`Credentials` a host's ``credentials=`` argument means, under its ``home``.

    :param home: the host's home (default ``~/.wave``).
    :param choice: a :class:`Credentials` (taken as it is), a store, ``"keyring"``
        or ``"file"``; ``None`` is the system keyring.
    :raises TypeError: ``choice`` is none of those.
    """
    if isinstance(choice, Credentials):
        return choice
    return Credentials(home, "keyring" if choice is None else choice)
