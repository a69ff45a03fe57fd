"""wave-actors: supervised, leak-proof MCP server connections for multi-session agent hosts.

Everything public is re-exported here, and :mod:`wave_actors.testing` offers
MCP servers and process checks for host authors' test suites; every other
module (their names start with ``_``) is private and may change. Importing
this package does not import the MCP SDK: a :class:`Host` (or :func:`open_session`)
starts that in a thread of its own when it opens, and a dial waits for what it needs.
"""

# First: run as ``python -m wave_actors`` by an interpreter without the dependencies, say what to install.
from wave_actors import _requirements as _requirements  # noqa: I001

from wave_actors._auth import (
    Credentials as Credentials,
    CredentialStore as CredentialStore,
    FileCredentialStore as FileCredentialStore,
    KeyringCredentialStore as KeyringCredentialStore,
    LoginState as LoginState,
    LoginStatus as LoginStatus,
    StoreChoice as StoreChoice,
)
from wave_actors._auth.login import LoginFlow as LoginFlow
from wave_actors._config import (
    ApprovalState as ApprovalState,
    ConfigError as ConfigError,
    Diagnostic as Diagnostic,
    LoadedConfig as LoadedConfig,
    OAuthGrant as OAuthGrant,
    OAuthSettings as OAuthSettings,
    ProjectTrust as ProjectTrust,
    ServerConfig as ServerConfig,
    ServerTrust as ServerTrust,
    Severity as Severity,
    ShutdownGraces as ShutdownGraces,
    Source as Source,
    ToolOverride as ToolOverride,
    TransportType as TransportType,
    TrustMode as TrustMode,
    TrustStore as TrustStore,
    load_config as load_config,
)
from wave_actors._config.store import (
    ConfigChanged as ConfigChanged,
    ConfigFile as ConfigFile,
    ConfigStore as ConfigStore,
)
from wave_actors._errors import (
    CredentialStoreError as CredentialStoreError,
    DialError as DialError,
    EntryChanged as EntryChanged,
    LoginExpired as LoginExpired,
    LoginFailed as LoginFailed,
    LoginRequired as LoginRequired,
    LoginSuperseded as LoginSuperseded,
    ServerDisabled as ServerDisabled,
    ServerUnavailable as ServerUnavailable,
    ToolCallError as ToolCallError,
    ToolTimeout as ToolTimeout,
    UnknownServer as UnknownServer,
    UnknownTool as UnknownTool,
    WaveActorsError as WaveActorsError,
)
from wave_actors._failure_notices import (
    FailureNotice as FailureNotice,
    FailureWording as FailureWording,
    failure_notices as failure_notices,
)
from wave_actors._family.descriptors import FileDescriptors as FileDescriptors
from wave_actors._host import DestroyHook as DestroyHook, Host as Host, PendingDestroy as PendingDestroy
from wave_actors._instructions import (
    DEFAULT_WORDING as DEFAULT_WORDING,
    INSTRUCTIONS_LIMIT as INSTRUCTIONS_LIMIT,
    MARKER_KEY as MARKER_KEY,
    InstructionKind as InstructionKind,
    InstructionMessage as InstructionMessage,
    InstructionWording as InstructionWording,
    instruction_updates as instruction_updates,
    restore_instruction_meta as restore_instruction_meta,
    server_available as server_available,
)
from wave_actors._observation import (
    EffectKind as EffectKind,
    MessageKind as MessageKind,
    Transition as Transition,
)
from wave_actors._opening import open_session as open_session
from wave_actors._options import ProjectOptions as ProjectOptions, SessionOptions as SessionOptions
from wave_actors._parameters import ServerEntries as ServerEntries
from wave_actors._reconfigure import ReconfigureResult as ReconfigureResult
from wave_actors._session import Session as Session
from wave_actors._status import (
    ConnectionInfo as ConnectionInfo,
    ServerState as ServerState,
    ServerStatus as ServerStatus,
    SessionSnapshot as SessionSnapshot,
    SharedUse as SharedUse,
    ToolInfo as ToolInfo,
)
from wave_actors._surface import fixup_module_metadata as _fixup_module_metadata
from wave_actors._tools import (
    ApprovalDecision as ApprovalDecision,
    ApprovalLevel as ApprovalLevel,
    LoadMode as LoadMode,
    LoadModeResolver as LoadModeResolver,
    ToolDeclaration as ToolDeclaration,
    WorkingSet as WorkingSet,
    WorkingSetServer as WorkingSetServer,
    WorkingSetTemplate as WorkingSetTemplate,
    WorkingSetTool as WorkingSetTool,
    approval_decision as approval_decision,
)
from wave_actors._transport import Graces as Graces, TransportOptions as TransportOptions
from wave_actors._watchdog.guard import OrphanProtection as OrphanProtection
from wave_actors._watchdog.signals import reclaim_on_signals as reclaim_on_signals

_fixup_module_metadata(__name__, globals())
del _fixup_module_metadata
