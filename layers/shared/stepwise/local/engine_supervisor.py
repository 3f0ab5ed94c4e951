"""The process that owns a data folder's shared DynamoDB Local: `python -m stepwise.local.engine_supervisor`.

A command that finds no engine serving its folder starts this supervisor (`shared_store.py`), which
detaches (a session of its own, and a second fork so it is nobody's child), takes the folder's engine
lock, starts the engine as its own child, records it in `engine.json`, and writes one JSON line on its
stdout: the record, or `{"error": …}`. The command reads that line and goes on; the supervisor stays.

It is the watchdog that stops the engine. Idleness is measured by the commands, not by the engine's
traffic: a `stepwise run` waiting minutes on a model sends the store nothing, and a `stepwise serve`
nobody calls is still using it. So each command holds a lease file while it runs (`store_locks.py`) and
records its end in `last-use`; every tick the supervisor takes the gate, counts live leases, and once
none is left for the idle timeout the last command asked for, stops the engine and exits.
The engine cannot outlive the supervisor either: on Linux it is killed when the supervisor ends, even by
`kill -9`, and the next command ends one left behind elsewhere. SIGTERM stops it at once
(`stepwise store stop` sends it when no command uses the engine). Its tick also checkpoints the engine's
write-ahead log, which the engine never does, and empties it once it has grown large
(`checkpoint_write_ahead_log`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from subprocess import Popen
from typing import IO

from stepwise.local.engine_process import (
    DATABASE_FILE,
    LOG_CHECKPOINT_BYTES,
    LocalStoreUnavailable,
    checkpoint_write_ahead_log,
    end_engine,
    engine_version,
    find_jar,
    start_engine,
)
from stepwise.local.engine_record import EngineRecord, remove_record, take_engine_lock, write_record
from stepwise.local.store_locks import Gate, clear_stop_request, last_use, live_clients, stop_requested

# The slowest tick (a 10-minute timeout is checked every 5 s) and the fastest (a timeout of 0 in tests).
_MAX_TICK_SECONDS = 5.0
_MIN_TICK_SECONDS = 0.2


class Watchdog:
    """Stops the engine once no command has used it for the idle timeout, or when told to; meanwhile checkpoints its
    write-ahead log on every tick, and empties it once it has grown past `log_checkpoint_bytes`."""

    def __init__(
        self,
        data_dir: Path,
        process: Popen[bytes],
        engine_lock: IO[str],
        idle_timeout: float,
        *,
        log_checkpoint_bytes: int = LOG_CHECKPOINT_BYTES,
    ) -> None:
        self._data_dir = data_dir
        self._process = process
        self._engine_lock = engine_lock
        self._default_timeout = idle_timeout
        self._log_checkpoint_bytes = log_checkpoint_bytes
        self._busy_at = time.time()
        self.stopping = threading.Event()

    def idle_timeout(self) -> float:
        """The timeout the last command asked for (0 once a stop was requested)."""
        if stop_requested(self._data_dir):
            return 0.0
        used = last_use(self._data_dir)
        return used[1] if used is not None else self._default_timeout

    def run(self) -> None:
        """Tick until the engine should stop (or ended by itself), then stop it."""
        try:
            while not self.stopping.wait(min(_MAX_TICK_SECONDS, max(_MIN_TICK_SECONDS, self.idle_timeout() / 5))):
                if not self.tick():
                    return
        finally:
            self.shutdown()

    def tick(self) -> bool:
        """One check of the engine: False once it should stop (it ended by itself, its folder is gone, or no
        command has used it for the idle timeout); otherwise its log is checkpointed, and emptied if it has grown
        too large."""
        if self._process.poll() is not None:
            print(f"the engine exited with code {self._process.returncode}", file=sys.stderr, flush=True)
            return False
        if not self._data_dir.is_dir() or self._idle_over():
            return False
        checkpoint_write_ahead_log(self._data_dir / DATABASE_FILE, above_bytes=self._log_checkpoint_bytes)
        return True

    def _idle_over(self) -> bool:
        gate = Gate(self._data_dir)
        if not gate.try_acquire():
            return False  # a command is attaching or serve is recovering: it is in use
        try:
            now = time.time()
            if live_clients(self._data_dir):
                self._busy_at = now
                return False
            used = last_use(self._data_dir)
            idle_since = max(self._busy_at, used[0] if used is not None else 0.0)
            if now - idle_since < self.idle_timeout():
                return False
            # still under the gate: the record goes before the gate opens, so no command attaches to an
            # engine that is about to stop
            remove_record(self._data_dir, owner_pid=os.getpid())
            return True
        finally:
            gate.release()

    def shutdown(self) -> None:
        """End the engine, forget its record and the stop request, and release the folder."""
        remove_record(self._data_dir, owner_pid=os.getpid())
        end_engine(self._process)
        clear_stop_request(self._data_dir)
        self._engine_lock.close()


def _report(line: dict[str, object]) -> None:
    """Tell the command that started us how the start went, then let go of its pipe."""
    # a broken pipe: the command gave up waiting (Ctrl-C), and the engine serves the next one
    with contextlib.suppress(BrokenPipeError):
        print(json.dumps(line), flush=True)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def serve_folder(data_dir: Path, idle_timeout: float) -> int:
    """Own `data_dir`'s engine until it stops; the exit code is 0 once it stopped as asked."""
    engine_lock = take_engine_lock(data_dir)
    if engine_lock is None:
        _report({"error": f"another process already owns the engine of {data_dir}"})
        return 1
    clear_stop_request(data_dir)
    try:
        version = engine_version(find_jar())
        process, endpoint_url = start_engine(data_dir)
    except LocalStoreUnavailable as exc:
        engine_lock.close()
        _report({"error": str(exc)})
        return 1
    record = EngineRecord(
        pid=process.pid, owner_pid=os.getpid(), endpoint_url=endpoint_url, version=version, shared=True
    )
    watchdog = Watchdog(data_dir, process, engine_lock, idle_timeout)
    signal.signal(signal.SIGTERM, lambda *_: watchdog.stopping.set())
    write_record(data_dir, record)
    _report(record.model_dump())
    watchdog.run()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Detach, then own the folder's engine until it stops."""
    parser = argparse.ArgumentParser(prog="python -m stepwise.local.engine_supervisor")
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--idle-timeout", type=float, required=True)
    args = parser.parse_args(argv)
    # The command started us in a session of our own; a second fork leaves us nobody's child, so the
    # command never waits for us and we never linger as its zombie.
    if os.fork() > 0:
        os._exit(0)
    for ignored in (signal.SIGINT, signal.SIGHUP):
        signal.signal(ignored, signal.SIG_IGN)
    return serve_folder(args.data_dir.resolve(), args.idle_timeout)


if __name__ == "__main__":
    sys.exit(main())
