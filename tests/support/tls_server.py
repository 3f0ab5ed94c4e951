"""A loopback HTTPS server holding a certificate per host name, recording each request's TLS server name.

Certificates come from a throwaway CA made with `cryptography`; clients trust it through `client_context`.
"""

from __future__ import annotations

import datetime
import http.server
import json
import ssl
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_DAY = datetime.timedelta(days=1)
_CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)


class TlsNameServer:
    """Serves ``hosts`` on 127.0.0.1; each GET answers and records the SNI and Host header it arrived with."""

    def __init__(self, hosts: list[str], directory: Path) -> None:
        self.seen: list[dict[str, Any]] = []
        ca_key, ca_cert = _certificate("test CA", None, None)
        self.ca_file = directory / "ca.pem"
        self.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
        contexts = {host: _server_context(host, ca_key, ca_cert, directory) for host in hosts}
        default = _server_context(hosts[0], ca_key, ca_cert, directory)

        def choose(connection: ssl.SSLObject, name: str | None, _: ssl.SSLContext) -> None:
            connection.sni = name  # type: ignore[attr-defined]
            if name in contexts:
                connection.context = contexts[name]

        default.sni_callback = choose
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                seen = {"sni": getattr(self.connection, "sni", None), "host": self.headers["Host"]}
                server.seen.append(seen)
                body = json.dumps(seen).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.socket = default.wrap_socket(self._httpd.socket, server_side=True)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def client_context(self) -> ssl.SSLContext:
        """A client TLS context that trusts this server's CA."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def __enter__(self) -> TlsNameServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object | TracebackType) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _server_context(
    host: str, ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, directory: Path
) -> ssl.SSLContext:
    key, cert = _certificate(host, ca_key, ca_cert)
    key_file, cert_file = directory / f"{host}.key", directory / f"{host}.pem"
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context


def _certificate(
    name: str, issuer_key: ec.EllipticCurvePrivateKey | None, issuer: x509.Certificate | None
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A key and certificate for ``name``: a CA when there is no issuer, else a server certificate it signs."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.subject if issuer is not None else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + _DAY)
    )
    signer = issuer_key if issuer_key is not None else key
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        builder = builder.add_extension(_CA_KEY_USAGE, critical=True)
        builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), critical=False
        )
    return key, builder.sign(signer, hashes.SHA256())
