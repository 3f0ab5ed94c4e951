"""One DynamoDB Local per data folder, shared by every command on it and left running between them.

A command attaches: under the folder's gate it registers a lease, then reuses the engine `engine.json`
records if that engine is alive, serves this folder, answers on its port and is of the current version
(`engine_version`); otherwise it starts a supervisor (`engine_supervisor.py`) that starts one. Later
commands connect at once. Two commands starting together meet at the gate: the first starts the engine,
the second finds it. When its command ends the lease is released, and the supervisor stops the engine
once no command has used it for the idle timeout (`--store-idle-timeout`, default 10 minutes).

An engine of an older version is replaced by the first command that finds no other command using it
(until then it is shared as it is). A record whose owner is gone is stale and replaced, whatever its pid
and port now belong to; an engine one process owns by itself (`DynamoDBLocal`) is never shared.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import stepwise
from stepwise.local.dynamodb_local import in_use_message
from stepwise.local.engine_process import (
    START_TIMEOUT_SECONDS,
    STOP_TIMEOUT_SECONDS,
    LocalStoreUnavailable,
    compiled_launcher,
    engine_version,
    find_jar,
    find_java,
)
from stepwise.local.engine_record import (
    EngineRecord,
    end_stale_engine,
    is_serving,
    owner_alive,
    read_record,
    remove_record,
)
from stepwise.local.store_locks import ClientLease, Gate, last_use, live_clients, mark_used, request_stop

DEFAULT_IDLE_TIMEOUT_SECONDS = 600.0
SUPERVISOR_LOG = "supervisor.log"
SUPERVISOR_MODULE = "stepwise.local.engine_supervisor"
# How long a command waits at the gate: a start (up to its own timeout) or a stop ahead of it.
GATE_TIMEOUT_SECONDS = START_TIMEOUT_SECONDS + 2 * STOP_TIMEOUT_SECONDS


@dataclass
class StoreLease:
    """A command's use of the folder's engine: its endpoint, whether it was already running, and how many
    other commands used it when this one attached. Held until `release`."""

    record: EngineRecord
    reused: bool
    others: int
    idle_timeout: float
    _lease: ClientLease
    _gate: Gate

    @property
    def endpoint_url(self) -> str:
        """The engine's endpoint URL."""
        return self.record.endpoint_url

    def open_gate(self) -> None:
        """Let other commands attach (a lease taken with `hold_gate` keeps them waiting until this)."""
        self._gate.release()

    def release(self) -> None:
        """End this command's use; the idle timeout starts when the last command's use ends."""
        self._lease.release(self.idle_timeout)
        self._gate.release()


def attach(data_dir: Path, idle_timeout: float, *, hold_gate: bool = False) -> StoreLease:
    """Use the engine serving `data_dir`, starting it if none does; `LocalStoreUnavailable` says why not.

    With `hold_gate`, no other command can attach until `StoreLease.open_gate` (what `stepwise serve`
    holds while it resumes the runs no other command is running).
    """
    data_dir = data_dir.resolve()
    version = engine_version(find_jar())
    gate = Gate(data_dir)
    gate.acquire(GATE_TIMEOUT_SECONDS)
    lease: ClientLease | None = None
    try:
        lease = ClientLease(data_dir)
        others = live_clients(data_dir, excluding=lease.path)
        record = _running_engine(data_dir)
        if record is not None and record.version != version and others == 0:
            _stop_supervisor(record, data_dir)
            record = None
        reused = record is not None
        if record is None:
            record = _start_supervisor(data_dir, idle_timeout)
        mark_used(data_dir, idle_timeout)
    except BaseException:
        if lease is not None:
            lease.release(idle_timeout)
        gate.release()
        raise
    if not hold_gate:
        gate.release()
    return StoreLease(record, reused, others, idle_timeout, lease, gate)


def _running_engine(data_dir: Path) -> EngineRecord | None:
    """The shared engine serving the folder, or None when there is none (a stale record is cleared)."""
    record = read_record(data_dir)
    if not owner_alive(data_dir):
        if record is not None:
            end_stale_engine(record, data_dir)
            remove_record(data_dir)
        return None
    if record is None:
        # a supervisor whose idle timeout passed forgets its record first, then stops its engine, holding
        # the folder until the engine has gone: a command arriving between the two waits for the end
        if _owner_ended_within(STOP_TIMEOUT_SECONDS + 5, data_dir):
            return None
        raise LocalStoreUnavailable(in_use_message(data_dir))
    if not record.shared:
        raise LocalStoreUnavailable(in_use_message(data_dir))
    if is_serving(record, data_dir):
        return record
    # its owner lives but the engine does not answer: the supervisor is ending (its engine exited)
    _wait_for_owner_to_end(record, data_dir)
    remove_record(data_dir)
    return None


def _owner_ended_within(seconds: float, data_dir: Path) -> bool:
    """Whether the process holding the folder's engine lock lets go of it within `seconds`."""
    deadline = time.monotonic() + seconds
    while owner_alive(data_dir):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _wait_for_owner_to_end(record: EngineRecord, data_dir: Path) -> None:
    if not _owner_ended_within(STOP_TIMEOUT_SECONDS + 5, data_dir):
        raise LocalStoreUnavailable(
            f"the engine of {data_dir} (supervisor pid {record.owner_pid}) does not answer and does not "
            f"stop: end that process, or pass --dynamodb-endpoint URL"
        )


def _stop_supervisor(record: EngineRecord, data_dir: Path) -> None:
    """Stop the folder's supervisor (and its engine) now, and wait until it let go of the folder."""
    if _is_other_program(record.owner_pid):
        raise LocalStoreUnavailable(
            f"{data_dir}: the engine's owner recorded as pid {record.owner_pid} is another program now; "
            "end the process holding engine.lock there, or pass --dynamodb-endpoint URL"
        )
    try:
        os.kill(record.owner_pid, signal.SIGTERM)
    except OSError:
        return
    _wait_for_owner_to_end(record, data_dir)


def _is_other_program(pid: int) -> bool:
    """Whether /proc names `pid` as something other than a supervisor (False where it cannot tell)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return SUPERVISOR_MODULE.encode() not in command


def _supervisor_environment() -> dict[str, str]:
    """The command's environment, with this package importable however the command found it."""
    package_root = str(Path(stepwise.__file__).resolve().parents[1])
    inherited = os.environ.get("PYTHONPATH")
    return os.environ | {"PYTHONPATH": os.pathsep.join([package_root, inherited] if inherited else [package_root])}


def _start_supervisor(data_dir: Path, idle_timeout: float) -> EngineRecord:
    """Start a detached supervisor for the folder and wait for the engine it starts to answer."""
    compiled_launcher(find_java(), find_jar())  # no Java, no compiler: said here, in the command
    command = [sys.executable, "-m", SUPERVISOR_MODULE, str(data_dir)]
    command += ["--idle-timeout", f"{idle_timeout:g}"]
    with (data_dir / SUPERVISOR_LOG).open("ab") as log:
        starter = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
            env=_supervisor_environment(),
            cwd="/",
        )
    assert starter.stdout is not None
    try:
        line = _read_line(starter.stdout, START_TIMEOUT_SECONDS + 10)
    finally:
        starter.stdout.close()
        starter.wait()
    try:
        said = json.loads(line)
    except ValueError:
        said = {"error": _log_tail(data_dir) or "the store's supervisor exited without a word"}
    if "error" in said:
        raise LocalStoreUnavailable(str(said["error"]))
    return EngineRecord.model_validate(said)


def _read_line(stream: object, timeout: float) -> str:
    """The first line the supervisor writes, or what it wrote before it closed or `timeout` passed."""
    selector = selectors.DefaultSelector()
    selector.register(stream, selectors.EVENT_READ)  # type: ignore[arg-type]
    fd = stream.fileno()  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    received = b""
    with selector:
        while b"\n" not in received:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            received += chunk
    return received.decode("utf-8", errors="replace").split("\n", 1)[0]


def _log_tail(data_dir: Path) -> str:
    try:
        lines = (data_dir / SUPERVISOR_LOG).read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


@dataclass(frozen=True)
class EngineStatus:
    """What `stepwise store status` shows: the engine (None when none runs), how many commands use it (None
    while one is attaching), and for how long it has been unused."""

    record: EngineRecord | None
    commands: int | None = None
    idle_seconds: float | None = None


def status(data_dir: Path) -> EngineStatus:
    """The folder's shared engine as it is now, read without starting or stopping anything."""
    data_dir = data_dir.resolve()
    record = read_record(data_dir)
    if record is None or not record.shared or not is_serving(record, data_dir):
        return EngineStatus(None)
    gate = Gate(data_dir)
    if not gate.try_acquire():
        return EngineStatus(record)
    try:
        commands = live_clients(data_dir)
    finally:
        gate.release()
    used = last_use(data_dir)
    idle = max(0.0, time.time() - used[0]) if used is not None and not commands else None
    return EngineStatus(record, commands, idle)


def stop(data_dir: Path) -> tuple[EngineRecord | None, int]:
    """Stop the folder's shared engine now if no command uses it, else once they end: the engine found
    (None if none ran) and how many commands still use it (0 when it stopped)."""
    data_dir = data_dir.resolve()
    if not data_dir.is_dir():
        return None, 0
    gate = Gate(data_dir)
    gate.acquire(GATE_TIMEOUT_SECONDS)
    try:
        record = read_record(data_dir)
        if record is None or not record.shared or not owner_alive(data_dir):
            return None, 0
        commands = live_clients(data_dir)
        if commands:
            request_stop(data_dir)
            return record, commands
        _stop_supervisor(record, data_dir)
        return record, 0
    finally:
        gate.release()
