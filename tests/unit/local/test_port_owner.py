"""Telling whether a process is the one listening on a port, before anything is sent to that port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from stepwise.local.port_owner import listens_on


@pytest.fixture
def listening_socket() -> Iterator[socket.socket]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server


@pytest.fixture
def other_process_port() -> Iterator[tuple[int, int]]:
    """(pid, port) of a child process listening on a loopback port."""
    code = (
        "import socket, sys\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "print(s.getsockname()[1], flush=True); sys.stdin.read()\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    port = int(child.stdout.readline())
    yield child.pid, port
    child.kill()
    child.wait()


def test_a_process_listening_on_the_port_is_its_owner(listening_socket: socket.socket) -> None:
    # Given this process listening on a port
    port = listening_socket.getsockname()[1]
    # When asked whether it listens there
    owns = listens_on(os.getpid(), port)
    # Then it does
    assert owns is True


def test_a_port_another_process_listens_on_is_not_ours(other_process_port: tuple[int, int]) -> None:
    # Given another process listening on a port
    child_pid, port = other_process_port
    # When asked whether this process listens there, and whether the child does
    ours, theirs = listens_on(os.getpid(), port), listens_on(child_pid, port)
    # Then only the child does
    assert (ours, theirs) == (False, True)


def test_a_port_nobody_listens_on_has_no_owner() -> None:
    # Given a port that was picked free and released
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # When asked whether this process listens there
    owns = listens_on(os.getpid(), port)
    # Then it does not
    assert owns is False
