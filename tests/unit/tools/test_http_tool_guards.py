"""Where an HTTP tool refuses to go: other origins, loopback, private and metadata addresses."""

from __future__ import annotations

import ipaddress

import pytest

from stepwise.config.credentials import SecretResolver
from stepwise.config.tool_sources import ApiConfig
from stepwise.tools.guards import TargetRefused, refusal_reason
from stepwise.tools.http_clients import ClientsByOrigin
from stepwise.tools.http_tool import HttpTool
from tests.support.tool_server import Redirect, ScriptableToolServer
from tests.unit.tools.config_builders import MakeInvoker, api_entry, call, endpoint


def test_a_redirect_to_another_origin_is_refused_and_never_followed(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer, attacker_server: ScriptableToolServer
) -> None:
    # Given the API redirects to a server on another port
    tool_server.on("/api/resource", Redirect(f"{attacker_server.url}/steal"))
    invoker = make_invoker({"apis": [api_entry(f"{tool_server.url}/api", [endpoint("fetch", "/resource")])]})

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the redirect is refused and the other server received nothing
    assert not observation.ok
    assert observation.error is not None and "refused a redirect to another origin" in observation.error
    assert attacker_server.requests == []


def test_a_redirect_within_the_origin_is_followed(make_invoker: MakeInvoker, tool_server: ScriptableToolServer) -> None:
    # Given the API redirects to another path on itself
    tool_server.on("/api/old", Redirect("/api/new", status=301))
    invoker = make_invoker({"apis": [api_entry(f"{tool_server.url}/api", [endpoint("fetch", "/old")])]})

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the tool followed it and answers with the new location's body
    assert observation.ok
    assert [request.path for request in tool_server.requests] == ["/api/old", "/api/new"]


def test_a_redirect_loop_stops_after_three_redirects(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given the API redirects to itself forever
    tool_server.on("/api/loop", Redirect("/api/loop"))
    invoker = make_invoker({"apis": [api_entry(f"{tool_server.url}/api", [endpoint("fetch", "/loop")])]})

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then it gave up after the first request and three redirects
    assert observation.error == "refused to follow more than 3 redirects"
    assert len(tool_server.requests) == 4


def test_loopback_is_refused_unless_the_api_is_internal(
    make_invoker: MakeInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given an API on loopback that is not marked internal
    tools = [endpoint("fetch", "/resource")]
    invoker = make_invoker({"apis": [api_entry(tool_server.url, tools, internal=False)]})

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the call is refused before any connection is made
    assert not observation.ok
    assert observation.error is not None and "127.0.0.1 is a loopback address" in observation.error
    assert tool_server.requests == []


def test_the_cloud_metadata_address_is_refused(make_invoker: MakeInvoker) -> None:
    # Given an API pointing at the instance metadata service
    tools = [endpoint("credentials", "/latest/meta-data/iam/security-credentials/")]
    invoker = make_invoker({"apis": [api_entry("http://169.254.169.254", tools, internal=False)]})

    # When the tool is called
    observation = invoker.invoke(call("credentials"))

    # Then it is refused as link-local
    assert not observation.ok
    assert observation.error is not None and "169.254.169.254 is a link-local address" in observation.error


def test_a_name_that_also_resolves_to_a_private_address_is_refused(
    http_clients: ClientsByOrigin, tool_server: ScriptableToolServer
) -> None:
    # Given a host name whose DNS answer mixes a public and a private address
    api = ApiConfig.model_validate(api_entry("http://rebind.test/v1", [endpoint("fetch", "/resource")], internal=False))
    tool = HttpTool(
        api,
        api.tools[0],
        http_clients=http_clients,
        secret_resolver=SecretResolver(),
        host_resolver=lambda host, port: ["93.184.216.34", "10.0.0.7"],
    )

    # When the tool is called, then it is refused naming the private address
    with pytest.raises(TargetRefused, match=r"10\.0\.0\.7 is a private address"):
        tool.call({})


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "100.64.0.1",
        "::1",
        "::",
        "fe80::1",
        "fd00::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "2002:a00:1::1",
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    # Given an address that is not public unicast, when it is checked, then a reason is given
    assert refusal_reason(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address: str) -> None:
    # Given a public unicast address, when it is checked, then nothing stands in the way
    assert refusal_reason(ipaddress.ip_address(address)) is None
