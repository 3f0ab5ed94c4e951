"""The files through which commands and the supervisor of a data folder's shared engine agree.

- `store.lock` (the gate): held while a command finds or starts the engine and registers itself, while
  the supervisor decides to stop it, and while `stepwise serve` resumes open runs; so no command attaches
  to an engine being stopped, and two commands starting at once start one engine.
- `clients/<pid>-<token>.lock`: one file per command using the engine, locked by it for as long as it
  runs. The kernel drops a lock when its process ends, even by `kill -9`, so a file nobody locks is a
  command that is gone (and is removed by whoever finds it).
- `last-use`: rewritten by each command when it ends; its time starts the idle timeout, its content is
  the timeout in seconds that command asked for.
- `stop-requested`: `stepwise store stop` while commands still use the engine: it stops when they end.

flock is used because its locks belong to an open file and end with the process, on Linux and macOS.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import uuid
from pathlib import Path
from typing import IO

from stepwise.local.engine_process import LocalStoreUnavailable

GATE_FILE = "store.lock"
CLIENTS_DIR = "clients"
LAST_USE_FILE = "last-use"
STOP_REQUEST_FILE = "stop-requested"
_GATE_POLL_SECONDS = 0.05


class Gate:
    """The folder's gate lock (`store.lock`), taken and released explicitly: a command may hold it across
    several steps (`stepwise serve` holds it until its recovery scan is done)."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / GATE_FILE
        self._file: IO[str] | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the gate now."""
        return self._file is not None

    def try_acquire(self) -> bool:
        """Take the gate if it is free; False at once if another holds it."""
        handle = self._path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._file = handle
        return True

    def acquire(self, timeout: float) -> None:
        """Wait for the gate; `LocalStoreUnavailable` naming the folder after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self.try_acquire():
            if time.monotonic() > deadline:
                raise LocalStoreUnavailable(
                    f"{self._path.parent}: another stepwise process has been starting or stopping its store "
                    f"for {timeout:.0f} s; try again, or `stepwise store stop --data-dir {self._path.parent}`"
                )
            time.sleep(_GATE_POLL_SECONDS)

    def release(self) -> None:
        """Release the gate (nothing if not held)."""
        handle, self._file = self._file, None
        if handle is not None:
            handle.close()


class ClientLease:
    """One command's registration as a user of the folder's engine, held until `release`."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        folder = data_dir / CLIENTS_DIR
        folder.mkdir(exist_ok=True)
        self.path = folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.lock"
        self._file: IO[str] | None = self.path.open("w", encoding="utf-8")
        fcntl.flock(self._file, fcntl.LOCK_EX)

    def release(self, idle_timeout: float) -> None:
        """End the registration: `last-use` records now and `idle_timeout`, then the lease file goes."""
        if self._file is None:
            return
        mark_used(self._data_dir, idle_timeout)
        with contextlib.suppress(OSError):
            self.path.unlink()
        self._file.close()
        self._file = None


def live_clients(data_dir: Path, *, excluding: Path | None = None) -> int:
    """How many commands use the folder's engine now (besides `excluding`); lease files of commands that
    are gone are removed on the way. Exact while the gate is held, since commands register under it."""
    folder = data_dir / CLIENTS_DIR
    try:
        paths = [path for path in folder.iterdir() if path != excluding]
    except OSError:
        return 0
    live = 0
    for path in paths:
        try:
            handle = path.open("a", encoding="utf-8")
        except OSError:
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                live += 1
                continue
            with contextlib.suppress(OSError):
                path.unlink()
    return live


def mark_used(data_dir: Path, idle_timeout: float) -> None:
    """Record that a command used the engine now, and the idle timeout it asks for after it."""
    staging = data_dir / f".{LAST_USE_FILE}.{os.getpid()}.{uuid.uuid4().hex[:6]}"
    staging.write_text(f"{idle_timeout:g}\n", encoding="utf-8")
    staging.replace(data_dir / LAST_USE_FILE)


def last_use(data_dir: Path) -> tuple[float, float] | None:
    """When a command last used the engine (epoch seconds) and the idle timeout it asked for, or None."""
    path = data_dir / LAST_USE_FILE
    try:
        return path.stat().st_mtime, float(path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def request_stop(data_dir: Path) -> None:
    """Ask the supervisor to stop the engine as soon as no command uses it."""
    (data_dir / STOP_REQUEST_FILE).touch()


def stop_requested(data_dir: Path) -> bool:
    """Whether `stepwise store stop` asked for the engine to stop once unused."""
    return (data_dir / STOP_REQUEST_FILE).exists()


def clear_stop_request(data_dir: Path) -> None:
    """Forget a stop request (an engine that stopped, or one starting anew)."""
    with contextlib.suppress(OSError):
        (data_dir / STOP_REQUEST_FILE).unlink()
