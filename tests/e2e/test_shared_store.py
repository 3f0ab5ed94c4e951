"""The store commands share: one DynamoDB Local per data folder, left running after a command, stopped when idle.

Each test starts one engine (a JVM start costs seconds); commands run as users run them, in processes of
their own, so an engine that outlives its command is seen to.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepwise.cli import main
from stepwise.local.engine_process import engine_version, find_jar, serves_folder
from stepwise.local.engine_record import EngineRecord, owner_alive, read_record, take_engine_lock, write_record
from stepwise.local.shared_store import stop
from tests.conftest import PROJECT_ROOT
from tests.support.tool_server import ScriptableToolServer

# a bounded wait for an idle engine to stop: its timeout, a watchdog tick, and a loaded machine's slack
STOPS_WITHIN_SECONDS = 60.0


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data folder of the test's own; the engine the test leaves running there is stopped after it."""
    folder = tmp_path / "data"
    yield folder
    stop(folder)


def _store_start(data_dir: Path, *, idle_timeout: str = "120") -> subprocess.Popen[str]:
    """`stepwise store start` on `data_dir`, in a process of its own."""
    command = [sys.executable, "-m", "stepwise.cli", "store", "start", "--data-dir", str(data_dir)]
    command += ["--store-idle-timeout", idle_timeout]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT_ROOT)


def _finished(command: subprocess.Popen[str]) -> str:
    """What the command printed, once it ended well."""
    out, err = command.communicate(timeout=240)
    assert command.returncode == 0, err
    return out


def _engines_serving(data_dir: Path) -> list[int]:
    """Every DynamoDB Local process on this machine serving `data_dir`."""
    pids = (int(name) for name in os.listdir("/proc") if name.isdigit())
    return sorted(pid for pid in pids if serves_folder(pid, data_dir))


def test_a_command_after_another_uses_the_engine_the_first_left_running(data_dir: Path) -> None:
    # Given a command that started the folder's engine, and has ended
    _finished(_store_start(data_dir))
    engine = read_record(data_dir)
    assert engine is not None
    # When a question is run on the same folder
    out = io.StringIO()
    code = main(["demo", "--json", "--data-dir", str(data_dir), "--store-idle-timeout", "120"], out=out)
    # Then it ran on that engine: the same process at the same endpoint, the only one serving the folder
    assert code == 0
    assert read_record(data_dir) == engine
    assert _engines_serving(data_dir) == [engine.pid]


def test_two_commands_started_at_once_share_one_engine(data_dir: Path) -> None:
    # Given no engine serving the folder
    # When two commands start on it at once
    said = [_finished(command) for command in [_store_start(data_dir), _store_start(data_dir)]]
    # Then one started the engine and the other found it, and one engine serves the folder
    engine = read_record(data_dir)
    assert engine is not None
    starts = sorted(text.split(":", 1)[0] for text in said)
    assert starts == ["DynamoDB Local already running", "DynamoDB Local started"]
    assert all(engine.endpoint_url in text for text in said)
    assert _engines_serving(data_dir) == [engine.pid]


def test_an_engine_unused_for_its_idle_timeout_stops(data_dir: Path) -> None:
    # Given a command that started an engine with a 1-second idle timeout, and has ended (on a loaded machine the
    # engine may already have stopped by then: what the command said is the evidence that it started)
    said = _finished(_store_start(data_dir, idle_timeout="1"))
    assert said.startswith("DynamoDB Local started")
    # When nothing uses the engine for longer than that
    deadline = time.monotonic() + STOPS_WITHIN_SECONDS
    while (_engines_serving(data_dir) or owner_alive(data_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    # Then the engine and its supervisor have ended, and the folder records no engine
    assert _engines_serving(data_dir) == []
    assert not owner_alive(data_dir)
    assert read_record(data_dir) is None


def _ended_pid() -> int:
    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid


def test_a_record_whose_owner_is_gone_is_replaced_and_its_port_left_alone(data_dir: Path) -> None:
    with ScriptableToolServer() as taker:
        # Given a record whose owner has ended, naming a pid that is now another process (this one) and a
        # port another server now listens on
        data_dir.mkdir()
        stale = EngineRecord(
            pid=os.getpid(),
            owner_pid=_ended_pid(),
            endpoint_url=f"http://127.0.0.1:{taker.port}",
            version=engine_version(find_jar()),
            shared=True,
        )
        write_record(data_dir, stale)
        # When a command starts on the folder
        said = _finished(_store_start(data_dir))
        # Then it started an engine of its own on another port, and the server on the old one got nothing
        engine = read_record(data_dir)
        assert said.startswith("DynamoDB Local started")
        assert engine is not None and engine.port != taker.port
        assert _engines_serving(data_dir) == [engine.pid]
        assert taker.requests == []


def test_a_command_arriving_while_an_idle_engine_stops_waits_and_starts_its_own(data_dir: Path) -> None:
    # Given a supervisor past its idle timeout: its record is gone, but it still holds the folder while its
    # engine stops (here: the lock held for a second by this process)
    data_dir.mkdir()
    stopping = take_engine_lock(data_dir)
    assert stopping is not None
    threading.Timer(1.0, stopping.close).start()
    # When a command starts on the folder meanwhile
    said = _finished(_store_start(data_dir))
    # Then it waited for the folder and started an engine of its own, rather than calling the folder in use
    engine = read_record(data_dir)
    assert said.startswith("DynamoDB Local started")
    assert engine is not None and _engines_serving(data_dir) == [engine.pid]
