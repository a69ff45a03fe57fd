"""How a server is spawned with its parent-death signal, both ways (R-KILL-7).

Through ``setpriv --pdeathsig`` (``vfork``, where util-linux has it) and
through a ``preexec_fn`` fork (elsewhere): either way the server runs with
SIGTERM as its parent-death signal, as a child of this process, with the
command line, ``PATH`` lookup, working directory and spawn errors it would
have without the signal. Linux only, like the signal.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from process_support import held_descriptors

from wave_actors import Graces
from wave_actors._family.parent_death import parent_death_signal_available
from wave_actors._family.registry import registry
from wave_actors._transport import spawn as spawn_module
from wave_actors.testing import FAMILY_VARIABLE

pytestmark = pytest.mark.skipif(not parent_death_signal_available(), reason="the parent-death signal is Linux only")

# Prints what the server sees of itself: its parent-death signal (PR_GET_PDEATHSIG), parent, argv[0], cwd.
REPORT = (
    "import ctypes, json, os\n"
    "signal = ctypes.c_int()\n"
    "ctypes.CDLL(None).prctl(2, ctypes.byref(signal), 0, 0, 0)\n"
    "argv0 = open('/proc/self/cmdline', 'rb').read().split(b'\\0')[0].decode()\n"
    "print(json.dumps({'signal': signal.value, 'ppid': os.getppid(), 'argv0': argv0, 'cwd': os.getcwd()}))\n"
)


@pytest.fixture(params=["setpriv", "fork"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh spawner that spawns through setpriv, or forks."""
    if request.param == "setpriv":
        if spawn_module.find_setpriv() is None:
            pytest.skip("no setpriv with --pdeathsig here")
    else:
        monkeypatch.setattr(spawn_module, "find_setpriv", lambda: None)
    monkeypatch.setattr(spawn_module, "_spawner", None)
    yield request.param


async def run_to_end(process: trio.Process) -> bytes:
    """Everything ``process`` writes on stdout, once it has exited; its pipes closed."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    await process.stdin.aclose()
    output = b""
    with trio.fail_after(20):
        while chunk := await process.stdout.receive_some():
            output += chunk
        await process.wait()
    await process.stdout.aclose()
    await process.stderr.aclose()
    return output


def python_named(directory: Path, name: str) -> str:
    """A link to this Python named ``name`` in ``directory``; returns its path."""
    directory.mkdir(exist_ok=True)
    link = directory / name
    link.symlink_to(sys.executable)
    return str(link)


def open_descriptors() -> int:
    """Descriptors open now, but for the cgroup files another thread (the cgroup primer) reads for a moment."""
    return len(held_descriptors())


async def test_a_server_found_on_its_path_runs_with_the_signal_as_our_child(tmp_path: Path, way: str) -> None:
    # R-KILL-7: SIGTERM on the host's death; argv[0] as written, looked up in the entry's own PATH.
    python_named(tmp_path / "bin", "server-python")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    process = await spawn_module.open_server_process(["server-python", "-I", "-c", REPORT], env=env, cwd=None)
    report = json.loads(await run_to_end(process))
    assert process.returncode == 0
    assert report == {"signal": signal.SIGTERM, "ppid": os.getpid(), "argv0": "server-python", "cwd": os.getcwd()}


async def test_a_relative_command_is_run_from_the_entrys_working_directory(tmp_path: Path, way: str) -> None:
    python_named(tmp_path / "bin", "server-python")
    process = await spawn_module.open_server_process(
        ["bin/server-python", "-I", "-c", REPORT], env=dict(os.environ), cwd=str(tmp_path)
    )
    report = json.loads(await run_to_end(process))
    assert report["signal"] == signal.SIGTERM and report["argv0"] == "bin/server-python"
    assert report["cwd"] == str(tmp_path)


@pytest.mark.parametrize("command", ["no-such-server-xyz", "/no/such/dir/server", "./no-such-server"])
async def test_a_missing_command_fails_to_spawn_with_file_not_found(tmp_path: Path, way: str, command: str) -> None:
    # Through setpriv too: an OSError from the spawn, not an exit status of setpriv's.
    before = open_descriptors()
    with pytest.raises(FileNotFoundError) as caught:
        await spawn_module.open_server_process([command], env={"PATH": str(tmp_path)}, cwd=str(tmp_path))
    assert caught.value.errno == errno.ENOENT and caught.value.filename == command
    assert open_descriptors() == before  # the pipes were closed


async def test_a_command_that_is_no_executable_fails_to_spawn_with_permission_denied(tmp_path: Path, way: str) -> None:
    (tmp_path / "notes.txt").write_text("not a program\n")
    (tmp_path / "a-directory").mkdir()
    for command in ["notes.txt", "a-directory", str(tmp_path / "notes.txt")]:
        with pytest.raises(PermissionError) as caught:
            await spawn_module.open_server_process([command], env={"PATH": str(tmp_path)}, cwd=None)
        assert caught.value.errno == errno.EACCES and caught.value.filename == command


async def test_a_missing_working_directory_fails_to_spawn(tmp_path: Path, way: str) -> None:
    with pytest.raises(FileNotFoundError):
        await spawn_module.open_server_process(
            [sys.executable, "-c", "pass"], env=dict(os.environ), cwd=str(tmp_path / "gone")
        )


async def test_concurrent_spawns_share_a_few_threads_that_never_end(way: str) -> None:
    # The signal follows the spawning thread: every spawner thread must live as long as the process.
    processes: list[trio.Process] = []

    async def spawn() -> None:
        processes.append(
            await spawn_module.open_server_process([sys.executable, "-I", "-c", REPORT], env=dict(os.environ), cwd=None)
        )

    async with trio.open_nursery() as nursery:
        for _ in range(12):
            nursery.start_soon(spawn)
    reports = [json.loads(await run_to_end(process)) for process in processes]
    assert [report["signal"] for report in reports] == [signal.SIGTERM] * 12
    spawner = spawn_module._spawner  # pyright: ignore[reportPrivateUsage]
    assert spawner is not None
    assert 1 <= len(spawner.threads) <= spawn_module._SPAWNER_THREADS  # pyright: ignore[reportPrivateUsage]
    assert all(thread.daemon and thread.is_alive() for thread in spawner.threads)


def test_check_command_follows_the_lookup_of_exec(tmp_path: Path) -> None:
    program = python_named(tmp_path / "bin", "server-python")
    env = {"PATH": f"{tmp_path / 'empty'}{os.pathsep}{tmp_path / 'bin'}"}
    spawn_module.check_command("server-python", env, None)  # found on the entry's PATH
    spawn_module.check_command(program, {}, None)
    spawn_module.check_command("bin/server-python", {}, str(tmp_path))
    with pytest.raises(FileNotFoundError):
        spawn_module.check_command("server-python", {"PATH": str(tmp_path)}, None)  # a bare name is not cwd-relative
    with pytest.raises(FileNotFoundError):
        spawn_module.check_command("bin/server-python", {}, str(tmp_path / "bin"))


class Lines:
    """A registry listener that keeps every line it is told."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def send(self, data: bytes) -> None:
        self.lines += data.decode().splitlines()


async def test_the_spawner_tells_the_registry_the_servers_pid_and_a_second_report_says_nothing(way: str) -> None:
    # R-KILL-7: the watchdog learns the root from the spawner thread, before the event loop resumes.
    lines = Lines()
    tag = f"test-{uuid.uuid4().hex}"
    registry.attach(lines)
    try:
        registry.begin(tag, Graces())
        process = await spawn_module.open_server_process(
            [sys.executable, "-I", "-c", "pass"],
            env={**os.environ, FAMILY_VARIABLE: tag},
            cwd=None,
            on_spawned=functools.partial(registry.started, tag),  # as the stdio transport hands it
        )
        [family] = [family for family in registry.families() if family.tag == tag]
        assert family.root == process.pid
        registry.started(tag, process.pid)  # what the transport says next
        await run_to_end(process)
        registry.end(tag)
    finally:
        registry.end(tag)
        registry.detach(lines)
    assert [line.split()[0] for line in lines.lines if tag in line] == ["begin", "root", "end"]
