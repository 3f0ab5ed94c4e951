"""DynamoDB Local owned by one Python object: started on entry, stopped on exit (tests, benchmarks, and
`stepwise invoke --seed-run`'s throwaway folder).

Commands share one engine per data folder instead (`shared_store.py`). An owned engine holds the folder's
engine lock for its whole life, so a second owner on the same folder, or a command, is refused with the
endpoint to share. On Linux the engine dies with the thread that started it, so a `kill -9` of its owner
leaves no Java process holding the folder, and the next start ends one an owner left behind otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from subprocess import Popen
from types import TracebackType
from typing import IO

from stepwise.local.engine_process import (
    DATABASE_FILE,
    PACKAGE_DIR,
    LocalStoreUnavailable,
    end_engine,
    free_port,
    start_engine,
)
from stepwise.local.engine_record import (
    EngineRecord,
    end_stale_engine,
    read_record,
    remove_record,
    take_engine_lock,
    write_record,
)

__all__ = ["DATABASE_FILE", "DynamoDBLocal", "LocalStoreUnavailable", "in_use_message"]


def in_use_message(data_dir: Path) -> str:
    """Why a folder whose engine another process owns cannot be taken, and the endpoint to share instead."""
    record = read_record(data_dir)
    owner = record.owner_pid if record is not None else "?"
    endpoint = record.endpoint_url if record is not None else "URL"
    return (
        f"{data_dir} is in use by another stepwise process (pid {owner}); "
        f"stop it, or share its store with --dynamodb-endpoint {endpoint}"
    )


class DynamoDBLocal:
    """DynamoDB Local serving `data_dir` on a free loopback port, for as long as this object is started.

    `free_port` picks the port of each start attempt (a new free one by default).
    """

    def __init__(
        self, data_dir: Path, *, package_dir: Path = PACKAGE_DIR, free_port: Callable[[], int] = free_port
    ) -> None:
        self.data_dir = Path(data_dir)
        self.endpoint_url = ""
        self._package_dir = package_dir
        self._free_port = free_port
        self._process: Popen[bytes] | None = None
        self._lock: IO[str] | None = None

    @property
    def pid(self) -> int | None:
        """The engine's process id while it runs (the benchmarks read its CPU time)."""
        return self._process.pid if self._process is not None else None

    @property
    def process(self) -> Popen[bytes] | None:
        """The engine's process while it runs (a supervisor's watchdog watches one in the tests)."""
        return self._process

    def start(self) -> DynamoDBLocal:
        """Start the engine and wait until it answers; `endpoint_url` is then set."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock = take_engine_lock(self.data_dir)
        if self._lock is None:
            raise LocalStoreUnavailable(in_use_message(self.data_dir))
        try:
            stale = read_record(self.data_dir)
            if stale is not None:
                end_stale_engine(stale, self.data_dir)
            self._process, self.endpoint_url = start_engine(
                self.data_dir, package_dir=self._package_dir, pick_port=self._free_port
            )
            record = EngineRecord(pid=self._process.pid, owner_pid=os.getpid(), endpoint_url=self.endpoint_url)
            write_record(self.data_dir, record)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the engine (its data stays on disk) and release the folder."""
        process, self._process = self._process, None
        if process is not None:
            end_engine(process)
        if self._lock is not None:
            remove_record(self.data_dir, owner_pid=os.getpid())
            self._lock.close()
            self._lock = None

    def __enter__(self) -> DynamoDBLocal:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
