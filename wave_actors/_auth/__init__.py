"""OAuth for remote servers: the credential store, the connection's tokens, and the login a host drives (R-AUTH).

- :mod:`.store`: where the secrets live (:class:`KeyringCredentialStore`,
  :class:`FileCredentialStore`, or a host's own :class:`CredentialStore`);
- :mod:`.records` and :mod:`.credentials`: what is kept of a login and how
  the processes of one machine agree on it (:class:`Credentials`);
- :mod:`.status`: how a login stands, for status lines (:class:`LoginStatus`);
- :mod:`.challenge`: what a server said when it asked for a login;
- :mod:`.provider`: a connection's OAuth, on the MCP SDK's client (imports the SDK);
- :mod:`.flow` and :mod:`.listener`: the login itself (imports the SDK).

Importing this package imports neither the SDK nor ``httpx``: the transports
and the login import :mod:`.provider` and :mod:`.flow` when they need them.
"""

from wave_actors._auth.credentials import Credentials as Credentials, StoreChoice as StoreChoice
from wave_actors._auth.status import LoginState as LoginState, LoginStatus as LoginStatus
from wave_actors._auth.store import (
    CredentialStore as CredentialStore,
    FileCredentialStore as FileCredentialStore,
    KeyringCredentialStore as KeyringCredentialStore,
)
