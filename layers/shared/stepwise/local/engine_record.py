"""Which engine serves a data folder: `engine.json` and the lock its owner holds for as long as it lives.

The owner of an engine (a supervisor shared by commands, or one process's own `DynamoDBLocal`) holds
`engine.lock` from before the engine starts until after it ended, and records the engine in `engine.json`.
A record whose owner no longer holds the lock is stale, whatever it says: the lock dies with its process,
even on `kill -9`, where a pid may already belong to another program and a port may be another server's.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ValidationError

from stepwise.local.engine_process import answers, serves_folder
from stepwise.local.port_owner import listens_on

ENGINE_FILE = "engine.json"
ENGINE_LOCK = "engine.lock"


class EngineRecord(BaseModel):
    """`engine.json`: the engine's process and endpoint, and who owns it.

    `shared` marks an engine a supervisor runs for every command (`shared_store`); one that is not
    shared belongs to a single process and ends with it. `version` is `engine_process.engine_version`.
    """

    pid: int
    owner_pid: int
    endpoint_url: str
    version: str = ""
    shared: bool = False

    @property
    def port(self) -> int:
        """The loopback port of `endpoint_url`."""
        return int(self.endpoint_url.rsplit(":", 1)[1])


def read_record(data_dir: Path) -> EngineRecord | None:
    """The folder's `engine.json`, or None when it is missing or not a record."""
    try:
        return EngineRecord.model_validate(json.loads((data_dir / ENGINE_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        return None


def write_record(data_dir: Path, record: EngineRecord) -> None:
    """Write `engine.json` whole (renamed into place, so a reader never sees half of it)."""
    staging = data_dir / f".{ENGINE_FILE}.{os.getpid()}"
    staging.write_text(record.model_dump_json(), encoding="utf-8")
    staging.replace(data_dir / ENGINE_FILE)


def remove_record(data_dir: Path, owner_pid: int | None = None) -> None:
    """Remove `engine.json` (only if `owner_pid` owns it, when given)."""
    if owner_pid is not None:
        record = read_record(data_dir)
        if record is None or record.owner_pid != owner_pid:
            return
    with contextlib.suppress(OSError):
        (data_dir / ENGINE_FILE).unlink()


def take_engine_lock(data_dir: Path) -> IO[str] | None:
    """The folder's engine lock, held until the returned file is closed; None when an owner holds it."""
    lock = (data_dir / ENGINE_LOCK).open("a+", encoding="utf-8")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        return None
    return lock


def owner_alive(data_dir: Path) -> bool:
    """Whether some process holds the folder's engine lock (tried, and released at once if free)."""
    lock = take_engine_lock(data_dir)
    if lock is None:
        return True
    lock.close()
    return False


def is_serving(record: EngineRecord, data_dir: Path) -> bool:
    """Whether the recorded engine is alive and answering: its pid is a DynamoDB Local of this folder, and
    that process holds the socket listening on the recorded port (probed over HTTP where /proc cannot tell)."""
    if serves_folder(record.pid, data_dir) is False:
        return False
    listening = listens_on(record.pid, record.port)
    return answers(record.endpoint_url) if listening is None else listening


def end_stale_engine(record: EngineRecord, data_dir: Path) -> None:
    """End the engine a dead owner left serving this folder (where the kernel could not end it for us); a
    pid that now belongs to any other process, or that /proc cannot name, is left alone."""
    if serves_folder(record.pid, data_dir):
        with contextlib.suppress(OSError):
            os.kill(record.pid, signal.SIGTERM)
