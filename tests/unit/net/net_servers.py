"""Real HTTP servers on 127.0.0.1 that record what they receive, for the network tests."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class RecordingServer:
    """An HTTP server on 127.0.0.1 that records every request it receives.

    Routes: ``/redirect?to=<url>[&status=302]`` answers with a redirect, ``/big?n=<bytes>[&length=0]``
    sends ``n`` bytes (without Content-Length when ``length=0``), ``/json`` sends ``{"ok": true}``,
    anything else sends ``hello from <port>``.
    """

    httpd: ThreadingHTTPServer
    thread: threading.Thread
    seen: list[SeenRequest] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


def _handler_for(seen: list[SeenRequest]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _respond(self) -> None:
            seen.append(SeenRequest(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path == "/redirect":
                self.send_response(int(query.get("status", "302")))
                self.send_header("Location", query["to"])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if parts.path == "/big":
                size = int(query["n"])
                self.send_response(200)
                if query.get("length", "1") == "1":
                    self.send_header("Content-Length", str(size))
                self.end_headers()
                for start in range(0, size, 4096):
                    self.wfile.write(b"x" * min(4096, size - start))
                return
            if parts.path == "/json":
                body = json.dumps({"ok": True}).encode()
                content_type = "application/json"
            else:
                body = f"hello from {self.connection.getsockname()[1]}".encode()
                content_type = "text/plain; charset=utf-8"
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._respond()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            self._respond()

    return Handler


def start_server() -> RecordingServer:
    seen: list[SeenRequest] = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(seen))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    return RecordingServer(httpd=httpd, thread=thread, seen=seen)


def stop_server(server: RecordingServer) -> None:
    server.httpd.shutdown()
    server.httpd.server_close()
    server.thread.join()


@dataclass(frozen=True)
class ServerCertificates:
    """A throwaway CA and a server certificate for one name, as PEM files."""

    ca_file: str
    cert_file: str
    key_file: str


def make_certificates(directory: str, *, name: str) -> ServerCertificates:
    """Create a CA and a server certificate valid only for ``name``."""
    import datetime
    from pathlib import Path

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "notochord test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    base = Path(directory)
    files = ServerCertificates(
        ca_file=str(base / "ca.pem"), cert_file=str(base / "server.pem"), key_file=str(base / "server.key")
    )
    Path(files.ca_file).write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    Path(files.cert_file).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    Path(files.key_file).write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return files


def start_tls_server(certificates: ServerCertificates) -> RecordingServer:
    """Like :func:`start_server`, speaking TLS with the given server certificate."""
    import ssl

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates.cert_file, certificates.key_file)
    seen: list[SeenRequest] = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(seen))
    httpd.daemon_threads = True
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    return RecordingServer(httpd=httpd, thread=thread, seen=seen)
