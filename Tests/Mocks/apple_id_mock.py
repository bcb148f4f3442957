#!/usr/bin/env python3
"""A mock of Sign in with Apple's REST API (token, revoke, keys) for tests.

Run it with the project venv (`scripts/python-venv` installs h2 and cryptography):

    VENV=$(scripts/python-venv)
    "$VENV/bin/python" Tests/Mocks/apple_id_mock.py --dir /tmp/apple-mock

At start it generates, into --dir:
  ca.pem            a self-signed CA (EC P-256); the server's `apple.caFile`
  server.pem/.key   a server certificate for 127.0.0.1 and localhost signed by that CA
  AuthKey.p8        the Sign in with Apple key (PKCS#8 PEM, P-256): `apple.privateKeyFile`
  requests.jsonl    one JSON line per request answered (never a token's value)
  mock.json         ports, files, key id, team id, client ids; printed as one line when ready

Listeners (127.0.0.1):
  `tlsPort`   HTTP/2 over TLS (ALPN h2), like appleid.apple.com:
    POST /auth/token   (form) client_id, client_secret, code, grant_type=authorization_code
    POST /auth/revoke  (form) client_id, client_secret, token, token_type_hint=refresh_token
  `httpPort`  plain HTTP/1.1, for what the server fetches without the libcurl client and for
              the tests:
    GET  /auth/keys    the JWKS (RSA, kid `mock-rsa-1`) Apple signs identity tokens and
                       account events with
    POST /test/sign    body {"claims": {...}, "forge": false}: a compact RS256 JWS of the claims
                       signed with the key set's key (`forge`: with another key, same kid)
    GET  /test/state   {"revoked": [...], "revokedTags": [...], "revokeAttempts": {tag: n},
                       "tokens": n}: SHA-256 hex and code tag of each revoked refresh token, and
                       revoke attempts per tag (the mock never logs a token)

The client secret is checked as Apple does (400 {"error": "invalid_client"} otherwise): an
ES256 JWT whose header is {"alg":"ES256","kid":<key id>}, whose raw 64-byte R||S signature
verifies with AuthKey.p8's public key, with `iss` = team id, `sub` = client_id (one of
--client-id), `aud` = https://appleid.apple.com, integer `iat` not in the future (60 s
leeway), `exp` after now and at most 15,777,000 s after `iat`.

Scripted answers:
  code `bad…` or a code used before   400 {"error": "invalid_grant"}
  code `c500…`                         500 (Apple down)
  other codes                          200 with a new refresh token `rt.<code tag>.<random>`,
                                       where the tag is the code up to its first `.`, and an
                                       `id_token` (RS256, the key set's key) whose `sub` is
                                       what follows `~` in the code (none without `~`)
  revoke of a token whose tag is `fail<N>x…` (e.g. code `fail2xab.1`): 500 for the first N
                                       attempts, then 200
  revoke of a token whose tag is `gone`: 400 {"error": "invalid_grant"}
  revoke of any other token            200 (recorded as revoked)
"""

import argparse
import asyncio
import base64
import hashlib
import json
import os
import re
import secrets
import sys
import time
import urllib.parse

import h2.config
import h2.connection
import h2.events
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apns_mock import b64url, b64url_decode, make_pki, tls_context  # noqa: E402

AUDIENCE = "https://appleid.apple.com"
MAX_LIFETIME = 15_777_000


def rsa_jwk(public_key, kid):
    numbers = public_key.public_numbers()
    n = numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")
    e = numbers.e.to_bytes((numbers.e.bit_length() + 7) // 8, "big")
    return {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": b64url(n), "e": b64url(e)}


def sign_rs256(private_key, kid, claims):
    header = b64url(json.dumps({"alg": "RS256", "kid": kid}, separators=(",", ":")).encode())
    payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
    signature = private_key.sign(f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{payload}.{b64url(signature)}"


class Mock:
    def __init__(self, args, apple_key):
        self.args = args
        self.public_key = apple_key.public_key()
        self.client_ids = set(args.client_id)
        self.used_codes = set()
        self.tokens = {}  # refresh token -> revoke attempts so far
        self.revoked = []  # sha256 hex of revoked tokens
        self.revoked_tags = []  # their code tags (test-chosen, not secret)
        self.rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.forger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.log = open(os.path.join(args.dir, "requests.jsonl"), "a", buffering=1)

    def record(self, entry):
        self.log.write(json.dumps(entry, separators=(",", ":")) + "\n")

    def check_secret(self, client_id, secret):
        """None when the client secret is Apple-valid for client_id, else a reason."""
        if client_id not in self.client_ids:
            return "unknown client_id"
        try:
            header_b64, claims_b64, signature_b64 = secret.split(".")
            header = json.loads(b64url_decode(header_b64))
            claims = json.loads(b64url_decode(claims_b64))
            signature = b64url_decode(signature_b64)
        except (ValueError, TypeError):
            return "malformed secret"
        if header.get("alg") != "ES256" or header.get("kid") != self.args.key_id or len(signature) != 64:
            return "header"
        try:
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            self.public_key.verify(der, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return "signature"
        iat, exp, now = claims.get("iat"), claims.get("exp"), time.time()
        if claims.get("iss") != self.args.team_id:
            return "iss"
        if claims.get("sub") != client_id:
            return "sub"
        if claims.get("aud") != AUDIENCE:
            return "aud"
        if not isinstance(iat, int) or isinstance(iat, bool) or iat > now + 60:
            return "iat"
        if not isinstance(exp, int) or isinstance(exp, bool) or exp <= now or exp - iat > MAX_LIFETIME:
            return "exp"
        return None

    def token(self, form):
        secret_problem = self.check_secret(form.get("client_id", ""), form.get("client_secret", ""))
        if secret_problem:
            return 400, {"error": "invalid_client"}, {"secretProblem": secret_problem}
        if form.get("grant_type") != "authorization_code":
            return 400, {"error": "unsupported_grant_type"}, {}
        code = form.get("code", "")
        if not code:
            return 400, {"error": "invalid_request"}, {}
        if code.startswith("c500"):
            return 500, {}, {}
        if code.startswith("bad") or code in self.used_codes:
            return 400, {"error": "invalid_grant"}, {}
        self.used_codes.add(code)
        refresh = f"rt.{code.split('.')[0]}.{secrets.token_hex(16)}"
        self.tokens[refresh] = 0
        # The identity token of the Apple user the code was issued to: `sub` is what follows `~`
        # in the code (the tests name it); without one, a token that names no user.
        now = int(time.time())
        claims = {"iss": AUDIENCE, "aud": form.get("client_id", ""), "iat": now, "exp": now + 600}
        if "~" in code:
            claims["sub"] = code.split("~", 1)[1]
        id_token = sign_rs256(self.rsa_key, "mock-rsa-1", claims)
        return 200, {"access_token": secrets.token_hex(16), "token_type": "Bearer", "expires_in": 3600,
                     "refresh_token": refresh, "id_token": id_token}, {}

    def revoke(self, form):
        secret_problem = self.check_secret(form.get("client_id", ""), form.get("client_secret", ""))
        if secret_problem:
            return 400, {"error": "invalid_client"}, {"secretProblem": secret_problem}
        if form.get("token_type_hint") != "refresh_token" or not form.get("token"):
            return 400, {"error": "invalid_request"}, {}
        token = form["token"]
        attempts = self.tokens.get(token, 0) + 1
        self.tokens[token] = attempts
        tag = token.split(".")[1] if token.count(".") >= 2 else ""
        if tag == "gone":
            return 400, {"error": "invalid_grant"}, {"attempt": attempts}
        failures = re.match(r"fail(\d+)x", tag)
        if failures and attempts <= int(failures.group(1)):
            return 500, {}, {"attempt": attempts}
        self.revoked.append(hashlib.sha256(token.encode()).hexdigest())
        self.revoked_tags.append(tag)
        return 200, {}, {"attempt": attempts}

    def answer(self, method, path, body):
        """(status, JSON object) for one request on either listener."""
        entry = {"event": "request", "method": method, "path": path}
        if method == "POST" and path in ("/auth/token", "/auth/revoke"):
            form = dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
            status, payload, extra = (self.token if path == "/auth/token" else self.revoke)(form)
            entry.update(clientId=form.get("client_id"), **extra)
        elif method == "GET" and path == "/auth/keys":
            status, payload = 200, {"keys": [rsa_jwk(self.rsa_key.public_key(), "mock-rsa-1")]}
        elif method == "POST" and path == "/test/sign":
            request = json.loads(body or b"{}")
            key = self.forger if request.get("forge") else self.rsa_key
            status, payload = 200, {"jws": sign_rs256(key, "mock-rsa-1", request.get("claims", {}))}
        elif method == "GET" and path == "/test/state":
            attempts = {}
            for token, n in self.tokens.items():
                if n == 0:
                    continue
                tag = token.split(".")[1] if token.count(".") >= 2 else ""
                attempts[tag] = attempts.get(tag, 0) + n
            status, payload = 200, {"revoked": self.revoked, "revokedTags": self.revoked_tags,
                                    "revokeAttempts": attempts, "tokens": len(self.tokens)}
        else:
            status, payload = 404, {"error": "not_found"}
        entry["status"] = status
        self.record(entry)
        return status, payload


class H2Protocol(asyncio.Protocol):
    def __init__(self, mock):
        self.mock = mock
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.streams = {}

    def connection_made(self, transport):
        self.transport = transport
        self.conn.initiate_connection()
        transport.write(self.conn.data_to_send())

    def data_received(self, data):
        try:
            events = self.conn.receive_data(data)
        except Exception:
            self.transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.streams[event.stream_id] = (dict(event.headers), bytearray())
            elif isinstance(event, h2.events.DataReceived):
                if event.stream_id in self.streams:
                    self.streams[event.stream_id][1].extend(event.data)
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                headers, body = self.streams.pop(event.stream_id, ({}, bytearray()))
                status, payload = self.mock.answer(headers.get(":method"), headers.get(":path"), bytes(body))
                content = json.dumps(payload).encode()
                self.conn.send_headers(event.stream_id, [(":status", str(status)), ("content-type", "application/json"),
                                                         ("content-length", str(len(content)))])
                self.conn.send_data(event.stream_id, content, end_stream=True)
        out = self.conn.data_to_send()
        if out:
            self.transport.write(out)


async def plain_http(mock, reader, writer):
    """Minimal HTTP/1.1 (Connection: close) for the keys and the test helpers."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        length = 0
        for line in lines[1:]:
            if line.lower().startswith("content-length:"):
                length = int(line.split(":", 1)[1])
        body = await reader.readexactly(length) if length else b""
        status, payload = mock.answer(method, target.split("?")[0], body)
        content = json.dumps(payload).encode()
        writer.write(f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(content)}\r\n"
                     f"connection: close\r\n\r\n".encode() + content)
        await writer.drain()
    except (asyncio.IncompleteReadError, ValueError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--key-id", default="MOCKSIWA12")
    parser.add_argument("--team-id", default="MOCKTEAM12")
    parser.add_argument("--client-id", action="append", default=None)
    args = parser.parse_args()
    args.client_id = args.client_id or ["app.suplash.ios"]
    os.makedirs(args.dir, exist_ok=True)
    apple_key = make_pki(args.dir)
    mock = Mock(args, apple_key)
    loop = asyncio.get_running_loop()
    tls = await loop.create_server(lambda: H2Protocol(mock), "127.0.0.1", 0, ssl=tls_context(args.dir, "h2"))
    http = await asyncio.start_server(lambda r, w: plain_http(mock, r, w), "127.0.0.1", 0)
    info = {
        "tlsPort": tls.sockets[0].getsockname()[1],
        "httpPort": http.sockets[0].getsockname()[1],
        "caFile": os.path.join(args.dir, "ca.pem"),
        "keyFile": os.path.join(args.dir, "AuthKey.p8"),
        "keyId": args.key_id,
        "teamId": args.team_id,
        "clientIds": args.client_id,
        "requestLog": os.path.join(args.dir, "requests.jsonl"),
        "pid": os.getpid(),
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
