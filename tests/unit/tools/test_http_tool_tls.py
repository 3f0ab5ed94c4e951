"""HTTP tools over TLS: a connection opened and verified for one host never carries another host's request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stepwise.config.credentials import SecretResolver
from stepwise.config.http_api import ApiConfig
from stepwise.tools.http_clients import ClientsByOrigin
from stepwise.tools.http_tool import HttpTool
from tests.support.tls_server import TlsNameServer

HOSTS = ["a.test", "b.test"]


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[TlsNameServer]:
    """One HTTPS server on 127.0.0.1 holding a certificate for each of HOSTS."""
    with TlsNameServer(HOSTS, tmp_path) as server:
        yield server


def tool_for(host: str, server: TlsNameServer, clients: ClientsByOrigin) -> HttpTool:
    """A tool of the API at ``host``, which resolves to the server's loopback address (admitted as public)."""
    api = ApiConfig.model_validate(
        {
            "url": f"https://{host}:{server.port}",
            "apiKey": {"in": "bearer", "value": f"secret-for-{host}"},
            "tools": [{"toolName": f"get_{host[0]}", "path": "/x"}],
        }
    )
    return HttpTool(
        api,
        api.tools[0],
        http_clients=clients,
        secret_resolver=SecretResolver(),
        host_resolver=lambda name, port: ["127.0.0.1"],
        address_policy=lambda address: None,
    )


def test_two_apis_at_one_address_each_use_a_tls_connection_made_for_their_own_host(
    tls_server: TlsNameServer,
) -> None:
    # Given tools of two APIs whose host names resolve to the same address, sharing the registry's clients
    verify = tls_server.client_context()
    clients = ClientsByOrigin(lambda: httpx.Client(verify=verify, follow_redirects=False, trust_env=False))
    first, second = (tool_for(host, tls_server, clients) for host in HOSTS)

    # When each tool is called in turn
    answers = [json.loads(tool.call({}).content) for tool in (first, second)]
    clients.close()

    # Then each request arrived on a connection whose TLS server name is its own host
    assert [answer["sni"] for answer in answers] == HOSTS
    assert [answer["host"].split(":")[0] for answer in answers] == HOSTS
