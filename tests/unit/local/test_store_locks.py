"""How the commands sharing a data folder's engine are counted: the supervisor stops it at 0, and
`stepwise serve` resumes open runs only when no other command is counted."""

from __future__ import annotations

from pathlib import Path

from stepwise.local.store_locks import CLIENTS_DIR, ClientLease, Gate, live_clients


def test_a_command_still_running_is_counted_and_one_that_ended_is_not(tmp_path: Path) -> None:
    # Given two commands that attached to the folder's engine, one of which has ended
    running, ended = ClientLease(tmp_path), ClientLease(tmp_path)
    ended.release(idle_timeout=60)
    # When the commands using the engine are counted
    # Then only the one still running is
    assert live_clients(tmp_path) == 1
    assert live_clients(tmp_path, excluding=running.path) == 0
    running.release(idle_timeout=60)


def test_the_lease_a_killed_command_left_is_not_counted_and_is_removed(tmp_path: Path) -> None:
    # Given a lease file nobody locks, as a command ended by kill -9 leaves it (the kernel dropped its lock)
    (tmp_path / CLIENTS_DIR).mkdir()
    left = tmp_path / CLIENTS_DIR / "4242-deadbeef.lock"
    left.touch()
    # When the commands using the engine are counted
    count = live_clients(tmp_path)
    # Then that command is not among them, and its file is gone
    assert count == 0
    assert not left.exists()


def test_the_gate_admits_one_holder_at_a_time(tmp_path: Path) -> None:
    # Given a command holding the folder's gate
    first, second = Gate(tmp_path), Gate(tmp_path)
    assert first.try_acquire()
    # When another tries to take it
    # Then it cannot until the first lets go
    assert not second.try_acquire()
    first.release()
    assert second.try_acquire()
    second.release()
