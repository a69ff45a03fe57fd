"""host_death: from a host's SIGKILL to the last process of its server families gone, and what the watchdog costs (R-KILL-7).

Latency: each run starts a real host process (this module with ``--as-host``)
holding ``--sessions`` sessions of 3 fault servers, each server with a
grandchild and a ``setsid`` grandchild; records every family member by an
environment mark given to the entries; sends the host SIGKILL; and polls
those pids every few milliseconds until none is alive (dead or a zombie).
Cases: the watchdog on (the default), with a cgroup per family (R-KILL-10;
where this process may make cgroups) and with the tags alone
(``Host.open(cgroups=False)``); the same with every server also starting a
daemon that escapes every mark but its cgroup (a double fork, ``setsid``, an
empty environment), which only the cgroups end; the host stopped (SIGSTOP)
before the SIGKILL; and the watchdog off (only the parent-death signal acts:
the grandchildren survive, which is what the watchdog is for).

Replacement: the watchdog is killed first; how long until the host has
started another (its process exists, holding the socket: from then on the
families are guarded again), and the host is then killed too, to see that the
replacement reclaims everything.

Cost, in this process, hosts with and without the watchdog interleaved: the
watchdog's memory (RSS, and USS: what it alone holds), its CPU and the
host's while idle with connected servers, the time ``Host.open`` takes, and
the dial latency (``prepare_turn`` of one fault server in a new session).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import trio

from benchmarks.report import Headline, Progress, Table, at_most, info, median, ratio
from benchmarks.scenario import Option, Outcome, main
from wave_actors import Host, ServerState
from wave_actors.testing import escaped_processes, fault_server_entry, is_alive, kill_processes, process_census

NAME = "host_death"
MARK_VARIABLE = "WAVE_BENCH_HOST_DEATH"
ROOT = Path(__file__).resolve().parent.parent
SERVERS_PER_SESSION = 3
LIMIT_S = 2.0  # R-KILL-7

OPTIONS = (
    Option("runs", int, 20, 3, "SIGKILL runs with the watchdog on and a cgroup per family (the default way)"),
    Option("tag_runs", int, 10, 2, "SIGKILL runs with the watchdog on and the tags alone (the way without cgroups)"),
    Option("escaping_runs", int, 3, 1, "runs with an escaping daemon per server, per way of reclaiming"),
    Option("stopped_runs", int, 5, 1, "runs with the host stopped (SIGSTOP) before the SIGKILL"),
    Option("unguarded_runs", int, 3, 1, "runs with the watchdog off"),
    Option("replacement_runs", int, 10, 3, "runs killing the watchdog, then the host once it is replaced"),
    Option("sessions", int, 5, 2, "sessions per host (3 servers each, 2 grandchildren per server)"),
    Option("dial_rounds", int, 20, 5, "dials per side (watchdog on / off), interleaved"),
    Option("idle_seconds", float, 5.0, 2.0, "idle window for the CPU measurement, per side"),
)


# The host process.


async def _serve_as_host(home: str, mark: str, sessions: int, watchdog: bool, cgroups: bool, escaping: bool) -> None:
    entry = fault_server_entry(
        grandchild=True, setsid_grandchild=True, escaping_grandchild=_escape_label(mark) if escaping else None
    )
    entry["env"] = {MARK_VARIABLE: mark}
    async with Host.open(home=home, watchdog=watchdog, cgroups=cgroups) as host:
        async with trio.open_nursery() as nursery:
            for _ in range(sessions):
                session = await host.create_session(home, {f"s{i}": entry for i in range(SERVERS_PER_SESSION)})
                nursery.start_soon(session.prepare_turn)
        while watchdog and host.orphan_protection().watchdog_pid is None:
            await trio.sleep(0.005)
        protection = host.orphan_protection()
        print(json.dumps({"watchdog_pid": protection.watchdog_pid, "cgroups": protection.cgroups}), flush=True)
        await trio.sleep_forever()  # until killed


def _escape_label(mark: str) -> str:
    """The label of a host's escaping daemons: their only mark."""
    return f"escaping-{mark}"


def _start_host(
    home: Path, mark: str, sessions: int, *, watchdog: bool, cgroups: bool = True, escaping: bool = False
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.host_death",
            "--as-host",
            str(home),
            mark,
            str(sessions),
            str(int(watchdog)),
            str(int(cgroups)),
            str(int(escaping)),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"the host process exited ({process.wait()}) before it was ready")
    return process, json.loads(line)


def _family(mark: str) -> list[psutil.Process]:
    return process_census(MARK_VARIABLE, mark, descendants=False) + escaped_processes(_escape_label(mark))


async def _host_with_families(
    home: Path, sessions: int, *, watchdog: bool = True, cgroups: bool = True, escaping: bool = False
) -> tuple[subprocess.Popen[bytes], dict[str, Any], list[psutil.Process]]:
    """A host process, what it said when ready, and every process of its families once they all run."""
    mark = uuid.uuid4().hex
    process, ready = await trio.to_thread.run_sync(
        lambda: _start_host(home, mark, sessions, watchdog=watchdog, cgroups=cgroups, escaping=escaping)
    )
    expected = sessions * SERVERS_PER_SESSION * (4 if escaping else 3)
    family: list[psutil.Process] = []
    with trio.move_on_after(5.0):
        while len(family := _family(mark)) < expected:
            await trio.sleep(0.01)
    return process, ready, family


async def _collect(process: subprocess.Popen[bytes], family: list[psutil.Process]) -> int:
    """Wait for the killed host; kill what is left of its families; how many were left."""
    await trio.to_thread.run_sync(process.wait)
    assert process.stdout is not None
    process.stdout.close()
    left = [member for member in family if is_alive(member)]
    if left:
        kill_processes(left)
    return len(left)


async def _one_death(
    home: Path, sessions: int, *, watchdog: bool, stop_first: bool, cgroups: bool = True, escaping: bool = False
) -> dict[str, float]:
    """One host, killed; how long until its families were gone (NaN: not within 10 s) and how many outlived 2 s."""
    process, ready, family = await _host_with_families(
        home, sessions, watchdog=watchdog, cgroups=cgroups, escaping=escaping
    )
    watchdog_pid = ready["watchdog_pid"]
    if stop_first:
        os.kill(process.pid, signal.SIGSTOP)
    killed = time.perf_counter()
    os.kill(process.pid, signal.SIGKILL)
    gone_s = float("nan")
    alive_after_limit = 0
    remaining = family
    while remaining:
        remaining = [member for member in remaining if is_alive(member)]
        elapsed = time.perf_counter() - killed
        if not remaining:
            gone_s = elapsed
        elif elapsed >= LIMIT_S and not alive_after_limit:
            alive_after_limit = len(remaining)
        if remaining and elapsed > (10.0 if watchdog and (ready["cgroups"] or not escaping) else LIMIT_S):
            break  # without a watchdog, or a cgroup for an escaping daemon, some never go: counted, then killed
        await trio.sleep(0.002)
    await _collect(process, family)
    watchdog_exit_s = float("nan")
    if watchdog_pid is not None:
        with trio.move_on_after(5.0):
            while is_alive(watchdog_pid):
                await trio.sleep(0.005)
            watchdog_exit_s = time.perf_counter() - killed
    return {
        "family": float(len(family)),
        "gone_s": gone_s,
        "alive_after_2s": float(alive_after_limit),
        "watchdog_exit_s": watchdog_exit_s,
        "cgroups": float(ready["cgroups"]),
    }


def _replacement_started(host: int, first: int | None) -> bool:
    """Whether ``host`` has a watchdog process other than ``first`` as its child (the replacement's first process)."""
    try:
        children = psutil.Process(host).children()
    except psutil.Error:
        return False
    for child in children:
        try:
            if child.pid != first and any(part.endswith("program.py") for part in child.cmdline()):
                return True
        except psutil.Error:
            continue
    return False


async def _one_replacement(home: Path, sessions: int) -> dict[str, float]:
    """Kill the watchdog; time until the host has started another; then kill the host and time its families' end."""
    process, ready, family = await _host_with_families(home, sessions)
    watchdog_pid = ready["watchdog_pid"]
    assert watchdog_pid is not None
    killed = time.perf_counter()
    os.kill(watchdog_pid, signal.SIGKILL)
    unguarded_s = float("nan")
    while time.perf_counter() - killed < 5.0:
        if _replacement_started(process.pid, watchdog_pid):
            unguarded_s = time.perf_counter() - killed
            break
        time.sleep(0.0002)  # the event loop has nothing else to do: poll as finely as we can
    host_killed = time.perf_counter()
    os.kill(process.pid, signal.SIGKILL)
    gone_s = float("nan")
    remaining = family
    while remaining and time.perf_counter() - host_killed < 10.0:
        remaining = [member for member in remaining if is_alive(member)]
        if not remaining:
            gone_s = time.perf_counter() - host_killed
        await trio.sleep(0.002)
    left = await _collect(process, family)
    return {"family": float(len(family)), "unguarded_s": unguarded_s, "gone_s": gone_s, "left": float(left)}


# The cost, in this process.


async def _dial_once(host: Host, workdir: Path) -> float:
    session = await host.create_session(workdir, {"echo": fault_server_entry()})
    started = time.perf_counter()
    await session.prepare_turn()
    elapsed = time.perf_counter() - started
    if session.server("echo").state is not ServerState.CONNECTED:
        raise RuntimeError(f"the dial failed: {session.server('echo').error}")
    await host.destroy_session(session.id)
    return elapsed


def _cpu(times: Any) -> float:
    """User + system seconds, rounded to the clock tick they are counted in (no float noise)."""
    return round(float(times.user) + float(times.system), 2)


async def _cost(arguments: argparse.Namespace, workdir: Path, progress: Progress) -> dict[str, Any]:
    me = psutil.Process()
    samples: dict[str, dict[str, list[float]]] = {
        side: {"open_s": [], "close_s": [], "dial_s": [], "host_cpu_idle_s": [], "watchdog_cpu_idle_s": []}
        for side in ("on", "off")
    }
    memory: dict[str, float] = {}
    rounds = arguments.dial_rounds
    for index in range(rounds):
        for side in ("on", "off") if index % 2 == 0 else ("off", "on"):
            progress.update("cost", f"dial {index + 1}/{rounds}, watchdog {side}")
            started = time.perf_counter()
            async with Host.open(home=workdir / "home", watchdog=side == "on") as host:
                samples[side]["open_s"].append(time.perf_counter() - started)
                samples[side]["dial_s"].append(await _dial_once(host, workdir))
                closing = time.perf_counter()
            samples[side]["close_s"].append(time.perf_counter() - closing)
    for side in ("on", "off"):
        progress.update("cost", f"idle {arguments.idle_seconds:g} s, watchdog {side}")
        async with Host.open(home=workdir / "home", watchdog=side == "on") as host:
            session = await host.create_session(workdir, {f"s{i}": fault_server_entry() for i in range(3)})
            await session.prepare_turn()
            while side == "on" and host.orphan_protection().watchdog_pid is None:
                await trio.sleep(0.005)
            watchdog_pid = host.orphan_protection().watchdog_pid
            watchdog = psutil.Process(watchdog_pid) if watchdog_pid is not None else None
            if watchdog is not None:
                full = watchdog.memory_full_info()
                memory = {"rss_mb": full.rss / 2**20, "uss_mb": full.uss / 2**20, "pss_mb": full.pss / 2**20}
            host_before, watchdog_before = me.cpu_times(), watchdog.cpu_times() if watchdog else None
            await trio.sleep(arguments.idle_seconds)  # the idle window being measured
            host_after, watchdog_after = me.cpu_times(), watchdog.cpu_times() if watchdog else None
            samples[side]["host_cpu_idle_s"].append(_cpu(host_after) - _cpu(host_before))
            if watchdog_before is not None and watchdog_after is not None:
                samples[side]["watchdog_cpu_idle_s"].append(_cpu(watchdog_after) - _cpu(watchdog_before))
    return {"samples": samples, "memory": memory, "host_rss_mb": me.memory_info().rss / 2**20}


async def _cgroup_cost(
    arguments: argparse.Namespace, workdir: Path, progress: Progress
) -> dict[str, dict[str, list[float]]]:
    """``Host.open``, a dial and a destroy with a cgroup per family and with the tags alone, interleaved."""
    samples: dict[str, dict[str, list[float]]] = {
        side: {"open_s": [], "dial_s": [], "destroy_s": []} for side in ("cgroup", "tag")
    }
    rounds = arguments.dial_rounds
    for index in range(rounds):
        for side in ("cgroup", "tag") if index % 2 == 0 else ("tag", "cgroup"):
            progress.update("cost", f"round {index + 1}/{rounds}, reclaimed by {side}")
            started = time.perf_counter()
            async with Host.open(home=workdir / "home", watchdog=False, cgroups=side == "cgroup") as host:
                samples[side]["open_s"].append(time.perf_counter() - started)
                session = await host.create_session(workdir, {"echo": fault_server_entry(grandchild=True)})
                started = time.perf_counter()
                await session.prepare_turn()
                samples[side]["dial_s"].append(time.perf_counter() - started)
                started = time.perf_counter()
                await host.destroy_session(session.id)
                samples[side]["destroy_s"].append(time.perf_counter() - started)
    return samples


async def run(arguments: argparse.Namespace, progress: Progress) -> Outcome:
    outcome = Outcome(data={"cases": {}})
    latency = Table(
        f"host_death: host SIGKILL -> last family process gone ({arguments.sessions} sessions x "
        f"{SERVERS_PER_SESSION} servers, each with a grandchild and a setsid grandchild, and in the escaping "
        "cases a daemon)",
        ["case", "runs", "processes", "median ms", "max ms", "alive after 2 s (total)", "watchdog exit median ms"],
    )
    cases = (
        # label, runs, watchdog, SIGSTOP first, cgroups, escaping daemons
        ("SIGKILL, watchdog on, a cgroup per family", arguments.runs, True, False, True, False),
        ("SIGKILL, watchdog on, tags alone", arguments.tag_runs, True, False, False, False),
        ("SIGKILL, escaping daemons too, a cgroup per family", arguments.escaping_runs, True, False, True, True),
        ("SIGKILL, escaping daemons too, tags alone", arguments.escaping_runs, True, False, False, True),
        ("SIGSTOP then SIGKILL, watchdog on", arguments.stopped_runs, True, True, True, False),
        ("SIGKILL, watchdog off (parent-death signal only)", arguments.unguarded_runs, False, False, True, False),
    )
    guarded_alive = 0
    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory:
        workdir = Path(directory)
        (workdir / "home").mkdir()
        for label, runs, watchdog, stop_first, cgroups, escaping in cases:
            results: list[dict[str, float]] = []
            for index in range(runs):
                progress.update("host death", f"{label}: run {index + 1}/{runs}")
                results.append(
                    await _one_death(
                        workdir,
                        arguments.sessions,
                        watchdog=watchdog,
                        stop_first=stop_first,
                        cgroups=cgroups,
                        escaping=escaping,
                    )
                )
            outcome.data["cases"][label] = results
            if not results:
                continue
            if cgroups and not all(result["cgroups"] for result in results):
                label += " (no cgroup could be made: tags)"
            gone = [result["gone_s"] * 1000 for result in results]
            complete = all(value == value for value in gone)  # no NaN: every run ended with nothing left
            alive = int(sum(result["alive_after_2s"] for result in results))
            latency.add(
                label,
                runs,
                int(median(result["family"] for result in results)),
                median(gone) if complete else float("nan"),
                max(gone) if complete else float("nan"),
                alive,
                median(result["watchdog_exit_s"] * 1000 for result in results) if watchdog else float("nan"),
            )
            by_design = escaping and not all(result["cgroups"] for result in results)
            if watchdog and by_design:
                outcome.headlines.append(info(f"processes alive 2 s after, {label}", float(alive)))
            elif watchdog:
                guarded_alive += alive
                outcome.headlines.append(
                    at_most(f"median, {label}", median(gone) if complete else float("nan"), LIMIT_S * 1000, "ms")
                )
                outcome.headlines.append(
                    at_most(f"max, {label}", max(gone) if complete else float("nan"), LIMIT_S * 1000, "ms")
                )
            else:
                outcome.headlines.append(info(f"processes alive 2 s after, {label}", float(alive)))
        latency.notes += [
            "gone = dead or a zombie; polled every ~2 ms from just before the SIGKILL.",
            "'-': members were still alive when the benchmark stopped waiting (10 s; 2 s without a watchdog, or",
            "  for escaping daemons without cgroups) and were killed by it. Without a watchdog the parent-death",
            "  signal ends the servers, not their grandchildren; without a cgroup, nothing finds a daemon that",
            "  left the tree, the session and the environment (found here by the label on its command line).",
        ]
        outcome.tables.append(latency)
        replacements: list[dict[str, float]] = []
        for index in range(arguments.replacement_runs):
            progress.update("watchdog replacement", f"run {index + 1}/{arguments.replacement_runs}")
            replacements.append(await _one_replacement(workdir, arguments.sessions))
        outcome.data["replacements"] = replacements
        if replacements:
            window = [result["unguarded_s"] * 1000 for result in replacements]
            after = [result["gone_s"] * 1000 for result in replacements]
            left = int(sum(result["left"] for result in replacements))
            guarded_alive += left
            replacement = Table(
                "host_death: the watchdog killed, then the host as soon as the watchdog is replaced",
                ["metric", "runs", "median ms", "max ms"],
            )
            replacement.add(
                "watchdog SIGKILL -> replacement started (unguarded)", len(window), median(window), max(window)
            )
            replacement.add("then host SIGKILL -> last family process gone", len(after), median(after), max(after))
            replacement.notes.append(
                f"family processes left after the host's death: {left} (the replacement reclaims them all)."
            )
            outcome.tables.append(replacement)
            outcome.headlines.append(info("watchdog killed -> replacement started, max", max(window), "ms"))
        outcome.headlines.append(
            at_most(
                "family processes alive 2 s after the host's death, watchdog on",
                float(guarded_alive),
                0,
                invariant=True,
            )
        )
        cost = await _cost(arguments, workdir, progress)
    samples = cost["samples"]
    on, off = samples["on"], samples["off"]
    table = Table(
        "host_death: what the watchdog costs (hosts with and without it, interleaved)",
        ["metric", "watchdog on", "watchdog off", "on - off"],
    )

    def row(metric: str, name: str, scale: float = 1000.0) -> None:
        with_it, without = median(on[name]) * scale, median(off[name]) * scale
        table.add(metric, with_it, without, with_it - without)

    row("Host.open, median ms", "open_s")
    row("Host close (block exit), median ms", "close_s")
    row("dial (prepare_turn, 1 server), median ms", "dial_s")
    row(f"host CPU over {arguments.idle_seconds:g} s idle, ms", "host_cpu_idle_s")
    table.add(
        f"watchdog CPU over {arguments.idle_seconds:g} s idle, ms",
        median(on["watchdog_cpu_idle_s"]) * 1000,
        float("nan"),
        float("nan"),
    )
    memory = cost["memory"]
    table.add("watchdog RSS, MB", memory.get("rss_mb", float("nan")), float("nan"), float("nan"))
    table.add("watchdog USS (its own pages), MB", memory.get("uss_mb", float("nan")), float("nan"), float("nan"))
    table.notes.append(f"for scale: this host process's RSS is {cost['host_rss_mb']:.0f} MB.")
    outcome.tables.append(table)
    outcome.headlines += [
        Headline("dial latency, watchdog on / off", ratio(median(on["dial_s"]), median(off["dial_s"])), "x"),
        info("watchdog RSS", memory.get("rss_mb", float("nan")), "MB"),
        info("watchdog CPU while idle", median(on["watchdog_cpu_idle_s"]) * 1000, f"ms / {arguments.idle_seconds:g} s"),
    ]
    outcome.data["cost"] = cost
    with tempfile.TemporaryDirectory(prefix="wave-bench-") as directory:
        (Path(directory) / "home").mkdir()
        contained = await _cgroup_cost(arguments, Path(directory), progress)
    cgroups = Table(
        "host_death: what a cgroup per family costs (hosts without a watchdog, interleaved)",
        ["metric", "a cgroup per family", "tags alone", "cgroup - tag"],
    )
    for metric, name in (
        ("Host.open (the probe), median ms", "open_s"),
        ("dial (prepare_turn, 1 server + grandchild), median ms", "dial_s"),
        ("destroy_session (reclaim), median ms", "destroy_s"),
    ):
        with_it, without = median(contained["cgroup"][name]) * 1000, median(contained["tag"][name]) * 1000
        cgroups.add(metric, with_it, without, with_it - without)
    outcome.tables.append(cgroups)
    outcome.data["cgroup_cost"] = contained
    outcome.data["cpus"] = os.cpu_count()
    return outcome


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--as-host":
        home, mark, sessions, watchdog, cgroups, escaping = sys.argv[2:8]
        trio.run(_serve_as_host, home, mark, int(sessions), watchdog == "1", cgroups == "1", escaping == "1")
    else:
        main(NAME, sys.modules[__name__].__doc__ or NAME, OPTIONS, run)
