#!/usr/bin/env python3
"""A mock of Apple's push service (APNs, token authentication) for tests and benchmarks.

Run it with the project venv (`scripts/python-venv` installs h2 and cryptography):

    VENV=$(scripts/python-venv)
    "$VENV/bin/python" Tests/Mocks/apns_mock.py --dir /tmp/apns-mock

At start it generates, into --dir:
  ca.pem            a self-signed CA (EC P-256); give it to the client as its CA file
  server.pem/.key   a server certificate for 127.0.0.1 and localhost signed by that CA
  AuthKey.p8        a provider signing key (PKCS#8 PEM, P-256) like Apple's .p8 download
  requests.jsonl    one JSON line per connection opened and per request answered
  mock.json         where everything is: ports, files, key id, team id, bundle ids, and a
                    ready-made `authorization` value for h2load calibration
and prints `mock.json`'s content as one line on stdout when it is ready.

Listeners (all 127.0.0.1): `productionPort` and `sandboxPort` speak HTTP/2 over TLS with
ALPN `h2` only; `http1Port` speaks TLS with ALPN `http/1.1` and answers every request 200
over HTTP/1.1 (for the client's "HTTP/2 required" check).

What it checks, like APNs (answers 400/403/404/405/413 with `{"reason": ...}`):
  - `POST /3/device/<hex token>`; `authorization: bearer <JWT>` whose header is
    `{"alg":"ES256","kid":<key id>}`, whose claims have `iss` = team id and an integer `iat`
    no more than an hour old (else ExpiredProviderToken) nor in the future; the raw 64-byte
    R||S signature is verified with the provider key's public half (else InvalidProviderToken)
  - a connection that changes its token sooner than 20 minutes (by `iat`) after the last one
    gets 429 TooManyProviderTokenUpdates
  - `apns-push-type` alert|background|complication|widgets, `apns-topic` = a bundle id with
    `.complication` / `.push-type.widgets` for those types (TopicDisallowed for an unknown
    bundle, BadTopic for a wrong suffix), `apns-priority` 10 or 5 (5 required for background
    and widgets: BadPriority), `apns-id` a UUID (BadMessageId), `apns-expiration` an integer
    (BadExpirationDate), `apns-collapse-id` at most 64 bytes (BadCollapseId)
  - the payload: at most 4096 bytes (413 PayloadTooLarge), a JSON object with an `aps`
    object (400 PayloadEmpty otherwise); background pushes carry `content-available: 1`.

Scripted answers by device-token prefix (tokens are hex):
  0bad   400 BadDeviceToken in both environments
  0bad5a 400 BadDeviceToken in production, 200 in sandbox
  0410   410 Unregistered with `timestamp` (now, milliseconds)
  0429   429 TooManyRequests        1429  429 the first time for that token, then 200
  0500   500 InternalServerError    1500  500 the first time for that token, then 200
  0503   503 ServiceUnavailable
  0e5e7  resets the connection (TCP close, no answer) the first time for that token, then 200
  0ba11NN  held until NN (two hex digits) such streams are open on the connection at once,
           then all are answered 200 (proves concurrent streams on one connection)

With --stale-floor F, every BadDeviceToken or Unregistered answer halves that connection's
SETTINGS_MAX_CONCURRENT_STREAMS, down to F — a model of APNs lowering a connection's
concurrency when it sees stale tokens (for benchmarks).
"""

import argparse
import asyncio
import base64
import datetime
import json
import os
import re
import ssl
import sys
import time
import uuid

import h2.config
import h2.connection
import h2.events
import h2.settings
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.x509.oid import NameOID
import ipaddress

UUID_RE = re.compile(r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$")
HEX_RE = re.compile(r"^[0-9a-fA-F]{1,200}$")
PUSH_TYPES = {"alert": "", "background": "", "complication": ".complication", "widgets": ".push-type.widgets"}


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def write_pem(path, data, private=False):
    with open(path, "wb") as f:
        f.write(data)
    if private:
        os.chmod(path, 0o600)


def make_pki(directory):
    """A CA, a server certificate for 127.0.0.1/localhost, and a provider key."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Suplash APNs mock CA")])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                            content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False,
                                            encipher_only=False, decipher_only=False), critical=True)
               .sign(ca_key, hashes.SHA256()))
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
                   .issuer_name(ca_name).public_key(server_key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=2))
                   .add_extension(x509.SubjectAlternativeName([
                       x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                   .sign(ca_key, hashes.SHA256()))
    write_pem(os.path.join(directory, "ca.pem"), ca_cert.public_bytes(serialization.Encoding.PEM))
    write_pem(os.path.join(directory, "server.pem"), server_cert.public_bytes(serialization.Encoding.PEM))
    write_pem(os.path.join(directory, "server.key"), server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), private=True)
    provider_key = ec.generate_private_key(ec.SECP256R1())
    write_pem(os.path.join(directory, "AuthKey.p8"), provider_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), private=True)
    return provider_key


def sign_jwt(private_key, key_id, team_id, iat):
    header = b64url(json.dumps({"alg": "ES256", "kid": key_id}, separators=(",", ":")).encode())
    claims = b64url(json.dumps({"iss": team_id, "iat": iat}, separators=(",", ":")).encode())
    der = private_key.sign(f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    r, s = decode_dss_signature(der)
    return f"{header}.{claims}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


class Mock:
    def __init__(self, args, provider_key):
        self.args = args
        self.public_key = provider_key.public_key()
        self.bundle_ids = set(args.bundle_id)
        self.verified = {}  # JWT text -> (ok reason or None, iat)
        self.connections = 0
        self.once = set()  # (prefix, token) answered specially once
        self.log = open(os.path.join(args.dir, "requests.jsonl"), "a", buffering=1)

    def record(self, entry):
        self.log.write(json.dumps(entry, separators=(",", ":")) + "\n")

    def check_jwt(self, authorization):
        """None when the token is good, else the APNs reason. Returns (reason, iat)."""
        if not authorization or not authorization.lower().startswith("bearer "):
            return "MissingProviderToken", None
        token = authorization[7:].strip()
        cached = self.verified.get(token)
        if cached is None:
            cached = self.verify_jwt(token)
            if len(self.verified) > 10000:
                self.verified.clear()
            self.verified[token] = cached
        reason, iat = cached
        if reason is None and iat < time.time() - 3600:
            return "ExpiredProviderToken", iat
        return reason, iat

    def verify_jwt(self, token):
        try:
            header_b64, claims_b64, signature_b64 = token.split(".")
            header = json.loads(b64url_decode(header_b64))
            claims = json.loads(b64url_decode(claims_b64))
            signature = b64url_decode(signature_b64)
        except (ValueError, TypeError):
            return "InvalidProviderToken", None
        if header.get("alg") != "ES256" or header.get("kid") != self.args.key_id or len(signature) != 64:
            return "InvalidProviderToken", None
        try:
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            self.public_key.verify(der, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return "InvalidProviderToken", None
        iat = claims.get("iat")
        if claims.get("iss") != self.args.team_id or not isinstance(iat, int) or isinstance(iat, bool):
            return "InvalidProviderToken", None
        if iat > time.time() + 60:
            return "InvalidProviderToken", iat
        return None, iat


class H2Protocol(asyncio.Protocol):
    """One HTTP/2 connection (one TLS connection) on a production or sandbox listener."""

    def __init__(self, mock, environment):
        self.mock = mock
        self.environment = environment
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=config)
        self.streams = {}  # stream id -> {"headers": dict, "body": bytearray}
        self.held = {}  # barrier prefix -> list of (stream id, entry)
        self.last_iat = None
        self.current_iat = None
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        self.mock.connections += 1
        self.number = self.mock.connections
        self.mock.record({"event": "connection", "connection": self.number, "environment": self.environment})
        self.conn.initiate_connection()
        self.conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: self.mock.args.max_streams})
        self.transport.write(self.conn.data_to_send())

    def data_received(self, data):
        try:
            events = self.conn.receive_data(data)
        except Exception:  # protocol error from the peer: drop the connection
            self.transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.streams[event.stream_id] = {"headers": dict(event.headers), "body": bytearray()}
            elif isinstance(event, h2.events.DataReceived):
                stream = self.streams.get(event.stream_id)
                if stream is not None:
                    stream["body"] += event.data
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                stream = self.streams.pop(event.stream_id, None)
                if stream is not None and self.handle(event.stream_id, stream) == "reset":
                    return
            elif isinstance(event, h2.events.StreamReset):
                self.streams.pop(event.stream_id, None)
        data = self.conn.data_to_send()
        if data:
            self.transport.write(data)

    def connection_lost(self, exc):
        self.mock.record({"event": "closed", "connection": self.number})

    def respond(self, stream_id, status, apns_id, reason=None, extra=None):
        body = b""
        if reason is not None:
            payload = {"reason": reason}
            payload.update(extra or {})
            body = json.dumps(payload).encode()
        headers = [(":status", str(status)), ("apns-id", apns_id)]
        if body:
            headers += [("content-type", "application/json"), ("content-length", str(len(body)))]
        try:
            self.conn.send_headers(stream_id, headers, end_stream=not body)
            if body:
                self.conn.send_data(stream_id, body, end_stream=True)
        except Exception:  # the stream was reset by the client meanwhile
            pass

    def handle(self, stream_id, stream):
        h = stream["headers"]
        body = bytes(stream["body"])
        path = h.get(":path", "")
        token = path[len("/3/device/"):] if path.startswith("/3/device/") else ""
        apns_id = h.get("apns-id") or str(uuid.uuid4()).upper()
        entry = {"event": "request", "connection": self.number, "environment": self.environment,
                 "apnsId": h.get("apns-id"), "token": token, "pushType": h.get("apns-push-type"),
                 "topic": h.get("apns-topic"), "priority": h.get("apns-priority"),
                 "expiration": h.get("apns-expiration"), "collapseId": h.get("apns-collapse-id"),
                 "payloadBytes": len(body), "activeStreams": len(self.streams) + 1}
        self.current_iat = None
        status, reason, extra = self.decide(h, body, token, apns_id)
        entry["iat"] = self.current_iat
        if status == "reset":
            entry.update(status=0, reason="ConnectionReset")
            self.mock.record(entry)
            self.transport.abort()
            return "reset"
        if status == "hold":
            prefix = token[:7]
            held = self.held.setdefault(prefix, [])
            held.append((stream_id, apns_id, entry))
            self.mock.record({"event": "held", "connection": self.number, "apnsId": h.get("apns-id")})
            needed = int(token[5:7], 16)
            if len(held) >= needed:
                for sid, aid, e in held:
                    e.update(status=200, reason=None, heldTogether=len(held))
                    self.mock.record(e)
                    self.respond(sid, 200, aid)
                self.held.pop(prefix)
            return None
        entry.update(status=status, reason=reason)
        self.mock.record(entry)
        self.respond(stream_id, status, apns_id, reason, extra)
        if reason in ("BadDeviceToken", "Unregistered") and self.mock.args.stale_floor > 0:
            self.lower_streams()
        return None

    def lower_streams(self):
        """Like APNs after rejected pushes: halve this connection's stream limit (to a floor)."""
        current = self.conn.local_settings.max_concurrent_streams
        lowered = max(self.mock.args.stale_floor, current // 2)
        if lowered < current:
            self.conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: lowered})
            self.mock.record({"event": "settings", "connection": self.number, "maxConcurrentStreams": lowered})

    def decide(self, h, body, token, apns_id):
        """(status, reason, extra) like APNs, in APNs's order of checks."""
        if h.get(":method") != "POST":
            return 405, "MethodNotAllowed", None
        if not h.get(":path", "").startswith("/3/device/"):
            return 404, "BadPath", None
        if not token:
            return 400, "MissingDeviceToken", None
        if not HEX_RE.match(token):
            return 400, "BadDeviceToken", None
        reason, iat = self.mock.check_jwt(h.get("authorization"))
        self.current_iat = iat
        if reason is not None:
            return 403, reason, None
        if self.last_iat is not None and iat != self.last_iat:
            if iat < self.last_iat + 20 * 60:
                return 429, "TooManyProviderTokenUpdates", None
        self.last_iat = iat if self.last_iat is None else max(self.last_iat, iat)
        if "apns-id" in h and not UUID_RE.match(h["apns-id"]):
            return 400, "BadMessageId", None
        push_type = h.get("apns-push-type")
        if push_type not in PUSH_TYPES:
            return 400, "InvalidPushType", None
        topic = h.get("apns-topic", "")
        suffix = PUSH_TYPES[push_type]
        base = next((b for b in self.mock.bundle_ids if topic == b + suffix), None)
        if base is None:
            known = any(topic.startswith(b) for b in self.mock.bundle_ids)
            return 400, ("BadTopic" if known else "TopicDisallowed"), None
        priority = h.get("apns-priority", "10")
        if priority not in ("5", "10") or (push_type in ("background", "widgets") and priority != "5"):
            return 400, "BadPriority", None
        if "apns-expiration" in h and not re.match(r"^[0-9]{1,12}$", h["apns-expiration"]):
            return 400, "BadExpirationDate", None
        if len(h.get("apns-collapse-id", "").encode()) > 64:
            return 400, "BadCollapseId", None
        if len(body) > 4096:
            return 413, "PayloadTooLarge", None
        try:
            payload = json.loads(body)
        except ValueError:
            return 400, "PayloadEmpty", None
        if not isinstance(payload, dict) or not isinstance(payload.get("aps"), dict):
            return 400, "PayloadEmpty", None
        if push_type == "background" and payload["aps"].get("content-available") != 1:
            return 400, "PayloadEmpty", None
        return self.scripted(token.lower())

    def scripted(self, token):
        def once(prefix):
            key = (prefix, token)
            if key in self.mock.once:
                return False
            self.mock.once.add(key)
            return True
        if token.startswith("0bad5a"):
            return (400, "BadDeviceToken", None) if self.environment == "production" else (200, None, None)
        if token.startswith("0bad"):
            return 400, "BadDeviceToken", None
        if token.startswith("0410"):
            return 410, "Unregistered", {"timestamp": int(time.time() * 1000)}
        if token.startswith("0429") or (token.startswith("1429") and once("1429")):
            return 429, "TooManyRequests", None
        if token.startswith("0500") or (token.startswith("1500") and once("1500")):
            return 500, "InternalServerError", None
        if token.startswith("0503"):
            return 503, "ServiceUnavailable", None
        if token.startswith("0e5e7") and once("0e5e7"):
            return "reset", None, None
        if token.startswith("0ba11") and len(token) >= 7:
            return "hold", None, None
        return 200, None, None


class H1Protocol(asyncio.Protocol):
    """HTTP/1.1 over TLS: records and answers every request 200 with a tiny body, then closes."""

    def __init__(self, mock):
        self.mock = mock

    def connection_made(self, transport):
        self.transport = transport
        self.buffer = b""

    def data_received(self, data):
        self.buffer += data
        if b"\r\n\r\n" in self.buffer:
            self.mock.record({"event": "http1-request"})
            self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
            self.transport.close()


def tls_context(directory, alpn):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(os.path.join(directory, "server.pem"), os.path.join(directory, "server.key"))
    context.set_alpn_protocols([alpn])
    return context


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="where certificates, keys and the request log go")
    parser.add_argument("--key-id", default="MOCKKEY123")
    parser.add_argument("--team-id", default="MOCKTEAM12")
    parser.add_argument("--bundle-id", action="append", default=None)
    parser.add_argument("--max-streams", type=int, default=1000, help="SETTINGS_MAX_CONCURRENT_STREAMS")
    parser.add_argument("--port", type=int, default=0, help="production listener port (0: any free port)")
    parser.add_argument("--stale-floor", type=int, default=0,
                        help="halve a connection's stream limit after each BadDeviceToken/Unregistered, down to this (0: off)")
    args = parser.parse_args()
    args.bundle_id = args.bundle_id or ["app.suplash.Suplash"]
    os.makedirs(args.dir, exist_ok=True)
    provider_key = make_pki(args.dir)
    mock = Mock(args, provider_key)
    loop = asyncio.get_running_loop()
    h2_context = tls_context(args.dir, "h2")
    production = await loop.create_server(lambda: H2Protocol(mock, "production"), "127.0.0.1", args.port,
                                          ssl=h2_context, backlog=128)
    sandbox = await loop.create_server(lambda: H2Protocol(mock, "sandbox"), "127.0.0.1", 0, ssl=h2_context)
    http1 = await loop.create_server(lambda: H1Protocol(mock), "127.0.0.1", 0, ssl=tls_context(args.dir, "http/1.1"))
    info = {
        "productionPort": production.sockets[0].getsockname()[1],
        "sandboxPort": sandbox.sockets[0].getsockname()[1],
        "http1Port": http1.sockets[0].getsockname()[1],
        "caFile": os.path.join(args.dir, "ca.pem"),
        "keyFile": os.path.join(args.dir, "AuthKey.p8"),
        "keyId": args.key_id,
        "teamId": args.team_id,
        "bundleIds": args.bundle_id,
        "requestLog": os.path.join(args.dir, "requests.jsonl"),
        "pid": os.getpid(),
        "authorization": "bearer " + sign_jwt(provider_key, args.key_id, args.team_id, int(time.time())),
    }
    with open(os.path.join(args.dir, "mock.json.tmp"), "w") as f:
        json.dump(info, f)
    os.replace(os.path.join(args.dir, "mock.json.tmp"), os.path.join(args.dir, "mock.json"))
    print(json.dumps(info), flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
