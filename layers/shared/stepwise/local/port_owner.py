"""Whether a child process is the one listening on a loopback port, read from Linux's /proc.

A port picked free and handed to a child (DynamoDB Local takes `-port N`) stays free until the child
binds it, and in that window any other program may take it. Probing the port before the child listens
would then talk to that program (a stray request it never asked for) and might take its answer for the
child's. So the probe waits until the child's own socket listens there.
"""

from __future__ import annotations

import os
from pathlib import Path

_LISTEN = "0A"
_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))


def _listening_inodes(port: int) -> set[str]:
    """Inodes of the sockets listening on `port`, on any address."""
    inodes: set[str] = set()
    suffix = f":{port:04X}"
    for table in _TABLES:
        try:
            rows = table.read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[1].endswith(suffix) and fields[3] == _LISTEN:
                inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    """Inodes of the sockets process `pid` holds open."""
    inodes: set[str] = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(fd_dir / name)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def listens_on(pid: int, port: int) -> bool | None:
    """True when process `pid` holds the socket listening on `port`, False when it does not (yet), and
    None where /proc cannot tell (not Linux), so the caller falls back to probing."""
    if not _TABLES[0].exists():
        return None
    return bool(_listening_inodes(port) & _socket_inodes(pid))
