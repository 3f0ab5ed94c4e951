"""Loopback ports for tests that need a connection refused."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections for as long as the block runs.

    The port stays bound (without listening) rather than being released: a released port can be taken at
    once by a server of a test running in parallel, which would then receive the connection meant to fail.
    """
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        yield int(holder.getsockname()[1])


def free_port() -> int:
    """A loopback port free when asked (released again: a server of a parallel test may take it first)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
