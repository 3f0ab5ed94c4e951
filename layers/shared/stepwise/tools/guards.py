"""Where an HTTP tool may send a request: the configured origin only, and only to public addresses.

A model chooses the arguments of a call, and whoever controls a tool's server controls its redirects,
so neither may steer a request somewhere else: to another host, to the cloud metadata service at
169.254.169.254, or to a service on the Lambda's private network. APIs marked ``internal: true`` in
configuration skip the address check (the demo's loopback API, a VPC service); the origin check stays.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from stepwise.errors import ToolError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
HostResolver = Callable[[str, int], list[str]]
AddressPolicy = Callable[[IPAddress], str | None]

_DEFAULT_PORTS = {"http": 80, "https": 443}


class TargetRefused(ToolError):
    """A request was not sent because its target is not allowed."""


@dataclass(frozen=True)
class Origin:
    """Scheme, host and port: the part of a URL that decides which server is talked to."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: httpx.URL) -> Origin:
        """The origin of a URL, with the scheme's default port filled in."""
        scheme = url.scheme.lower()
        return cls(scheme, url.host.lower(), url.port or _DEFAULT_PORTS.get(scheme, 0))

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver returns for ``host``, in its order, without duplicates."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[str] = []
    for info in infos:
        # IPv6 link-local results may carry a zone ("fe80::1%eth0"), which ipaddress does not read.
        address = str(info[4][0]).split("%", 1)[0]
        if address not in addresses:
            addresses.append(address)
    return addresses


def refusal_reason(address: IPAddress) -> str | None:
    """Why a request to ``address`` is refused, or None for a public unicast address."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        reason = refusal_reason(embedded)
        return f"{reason} (inside an IPv6 address)" if reason else None
    checks = (
        (address.is_unspecified, "an unspecified address"),
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address (this includes the cloud metadata service)"),
        (address.is_multicast, "a multicast address"),
        (address.is_private, "a private address"),
        (address.is_reserved, "a reserved address"),
        (not address.is_global, "not a public address"),
    )
    for refused, reason in checks:
        if refused:
            return reason
    return None


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in ipaddress.IPv6Network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def checked_addresses(
    host: str, port: int, *, resolver: HostResolver, policy: AddressPolicy = refusal_reason
) -> list[IPAddress]:
    """The addresses to try for ``host``; `TargetRefused` unless ``policy`` allows every one of them.

    Every resolved address is checked, not only the first, because a name that resolves to both a
    public and a private address is exactly how a rebinding attack is staged.
    """
    literal = _ip_literal(host)
    addresses = [literal] if literal is not None else _resolve(host, port, resolver)
    for address in addresses:
        reason = policy(address)
        if reason is not None:
            raise TargetRefused(
                f"refused to call {host}: {address} is {reason}; only APIs marked internal: true "
                "may call non-public addresses"
            )
    return addresses


def is_loopback_name(host: str) -> bool:
    """``localhost`` or a name under it, which resolvers answer with a loopback address (RFC 6761)."""
    name = host.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


def refusal_without_resolving(host: str) -> str | None:
    """Why every call to ``host`` is refused whatever DNS answers, or None when only resolving can tell.

    An address literal is refused by `refusal_reason` alone; ``localhost`` (and names under it) always
    resolve to a loopback address. Any other name may resolve differently where the call is made.
    """
    literal = _ip_literal(host)
    if literal is not None:
        return refusal_reason(literal)
    return "a loopback name" if is_loopback_name(host) else None


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` is a loopback address literal (IPv4 inside IPv6 too) or a loopback name."""
    literal = _ip_literal(host)
    if literal is None:
        return is_loopback_name(host)
    embedded = _embedded_ipv4(literal)
    return (embedded or literal).is_loopback


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _resolve(host: str, port: int, resolver: HostResolver) -> list[IPAddress]:
    try:
        addresses = [ipaddress.ip_address(found) for found in resolver(host, port)]
    except (OSError, UnicodeError, ValueError):
        raise ToolError(f"could not resolve host {host}") from None
    if not addresses:
        raise ToolError(f"could not resolve host {host}")
    return addresses


def check_same_origin(target: httpx.URL, allowed: Origin, *, what: str) -> None:
    """`TargetRefused` unless ``target`` has the ``allowed`` origin; ``what`` names the request."""
    if target.scheme.lower() not in _DEFAULT_PORTS:
        raise TargetRefused(f"refused {what} to a non-HTTP URL")
    origin = Origin.of(target)
    if origin != allowed:
        raise TargetRefused(f"refused {what} to another origin ({origin}); only {allowed} is allowed")
