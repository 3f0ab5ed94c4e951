"""The HTTP clients of the HTTP tools: one per origin, so a connection never serves two hosts.

A tool that is not ``internal`` connects to the address it checked and names the host only in the
Host header and the TLS server name. httpx pools connections by (scheme, address, port), so with one
shared client a request for host B could reuse a TLS connection opened and verified for host A at the
same address, sending B's API key to a server only A's certificate was checked for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx

from stepwise.tools.guards import Origin

ClientFactory = Callable[[], httpx.Client]


def default_http_client() -> httpx.Client:
    """The client HTTP tools use when no factory is given.

    Redirects are followed by the tool itself, after its origin check. Proxy settings from the
    environment are ignored because the tool connects to the address it has checked.
    """
    return httpx.Client(follow_redirects=False, trust_env=False)


class ClientsByOrigin:
    """One client per origin (scheme, host, port), made by ``factory`` on first use; `close` closes all."""

    def __init__(self, factory: ClientFactory = default_http_client) -> None:
        self._factory = factory
        self._clients: dict[Origin, httpx.Client] = {}
        self._lock = threading.Lock()

    def client_for(self, origin: Origin) -> httpx.Client:
        """The client whose connections only ever serve ``origin``."""
        with self._lock:
            if origin not in self._clients:
                self._clients[origin] = self._factory()
            return self._clients[origin]

    def close(self) -> None:
        """Close every client made so far."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
