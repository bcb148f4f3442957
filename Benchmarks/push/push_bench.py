#!/usr/bin/env python3
"""Push delivery through the real server: a queued backlog drained to the mock APNs server.

By hand only (never in tests or CI). Run under scripts/with-apns-mock, which starts the mock
and exports SUPLASH_TEST_APNS_MOCK:

    swift build -c release --product suplash-server
    scripts/with-apns-mock python3 Benchmarks/push/push_bench.py --pushes 100000
    # stale tokens in the mix, the mock lowering a connection's streams after each rejection:
    SUPLASH_APNS_MOCK_ARGS="--stale-floor 10" scripts/with-apns-mock \\
        python3 Benchmarks/push/push_bench.py --pushes 100000 --stale 0.05
    # the mock alone (h2load, Debian nghttp2-client), for calibration:
    scripts/with-apns-mock python3 Benchmarks/push/push_bench.py --calibrate 20000

What it does (SQLite store, one server instance): starts `suplash-server` with `apns.*`
pointed at the mock, signs one user up, stops it; seeds, with SQL, one device per push
(platform ios, the mock's bundle id, production) holding a background token, and one pending
`background` row per device in `push_outbox`, not yet due; starts the server again, makes
every row due at once (one UPDATE) and waits until the queue is empty. The UPDATE comes from
outside the server, so nothing wakes the sender: its first claim waits up to `--poll-ms`
(counted in the figures; small against a 100,000-row drain, not against a small one). A `--stale` fraction of
the tokens are stale: half `0bad…` (the mock answers BadDeviceToken in both environments, so
the sender also tries sandbox once), half `0410…` (Unregistered).

Prints: pushes/s (rows finished / seconds from the release to the last row finished),
queue-to-sent p50 / p99 / max (`delivered_at - due_at` of sent rows: for a backlog released at
once this is mostly waiting in the queue), rows sent / failed by reason, the mock's
connections and stream-limit changes, and the server's peak and final RSS.
"""

import argparse
import http.client
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "Benchmarks"))
from run import PASSWORD, Conn, status_kib  # noqa: E402  (the benchmark harness's helpers)


def mock_info():
    directory = os.environ.get("SUPLASH_TEST_APNS_MOCK")
    if not directory:
        sys.exit("run under scripts/with-apns-mock (SUPLASH_TEST_APNS_MOCK is not set)")
    with open(os.path.join(directory, "mock.json")) as f:
        info = json.load(f)
    info["dir"] = directory
    return info


class Server:
    def __init__(self, binary, data_dir, info, args):
        self.binary, self.data_dir = binary, data_dir
        self.env = dict(
            os.environ, SUPLASH_RATELIMIT_ENABLED="false", SUPLASH_LOG_LEVEL="warning",
            SUPLASH_APNS_KEY_FILE=info["keyFile"], SUPLASH_APNS_KEY_ID=info.get("keyId") or info["keyID"],
            SUPLASH_APNS_TEAM_ID=info["teamId"], SUPLASH_APNS_CA_FILE=info["caFile"],
            SUPLASH_APNS_PRODUCTION_URL=f"https://127.0.0.1:{info['productionPort']}",
            SUPLASH_APNS_SANDBOX_URL=f"https://localhost:{info['sandboxPort']}",
            SUPLASH_APNS_BUNDLE_IDS=info["bundleIds"][0],
            SUPLASH_APNS_MAX_CONCURRENT_PUSHES=str(args.in_flight),
            SUPLASH_APNS_POLL_INTERVAL_MS=str(args.poll_ms))
        # Push tokens are kept sealed: the server needs a sealing key, and seals the
        # clear-text tokens `seed` writes when it starts again (before it listens).
        key = os.path.join(os.path.dirname(data_dir.rstrip("/")), os.path.basename(data_dir.rstrip("/")) + ".sealing-key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(os.urandom(32))
        self.env["SUPLASH_SECURITY_SEALING_KEY_FILE"] = key

    def start(self):
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", self.data_dir],
            stdout=subprocess.PIPE, stderr=open(os.path.join(self.data_dir, "server.stderr"), "a"),
            env=self.env, text=True, cwd=ROOT)
        line = self.proc.stdout.readline()
        m = re.search(r":(\d+)\s*$", line.strip())
        if not m:
            sys.exit(f"suplash-server did not start: {line!r} (see {self.data_dir}/server.stderr)")
        self.port = int(m.group(1))

    def metric(self, name):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


def seed(db_path, user_id, bundle_id, pushes, stale):
    """Devices, tokens and pending rows (not due: next_attempt_at far ahead)."""
    now = int(time.time() * 1000)
    far = now + 86_400_000
    stale_every = int(round(1 / stale)) if stale > 0 else 0
    payload = json.dumps({"aps": {"content-available": 1}, "suplash": {"changedAt": now}}, separators=(",", ":"))
    devices, tokens, rows = [], [], []
    for i in range(pushes):
        device = str(uuid.UUID(int=i + 1))
        token = bytes.fromhex("f0" + f"{i:062x}")
        if stale_every and i % stale_every == 0:
            prefix = "0bad" if (i // stale_every) % 2 == 0 else "0410"
            token = bytes.fromhex(prefix + token.hex()[4:])
        devices.append((user_id, device, "ios", bundle_id, "production", now, now, now))
        tokens.append((user_id, device, "background", token, now))
        rows.append((uuid.uuid4().hex, user_id, device, "background", payload, "suplash-sync", far,
                     far + 7_200_000, far, far))
    db = sqlite3.connect(db_path, timeout=60)
    with db:
        db.executemany(
            "INSERT INTO devices (user_id, id, platform, bundle_id, environment, created_at, updated_at, last_seen_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", devices)
        db.executemany(
            "INSERT INTO device_tokens (user_id, device_id, push_type, token, registered_at) VALUES (?, ?, ?, ?, ?)",
            tokens)
        db.executemany(
            "INSERT INTO push_outbox (id, user_id, device_id, push_type, payload, collapse_id, due_at, expires_at, "
            "attempts, next_attempt_at, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, 'pending', ?)", rows)
    db.close()


def percentile(sorted_values, p):
    if not sorted_values:
        return 0
    k = min(len(sorted_values) - 1, max(0, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def calibrate(info, requests, streams):
    """h2load against the mock alone: one connection, `streams` concurrent streams."""
    payload = os.path.join(info["dir"], "bench-payload.json")
    with open(payload, "w") as f:
        f.write('{"aps":{"content-available":1}}')
    token = "ab" * 32
    cmd = ["h2load", "-n", str(requests), "-c", "1", "-m", str(streams), "-d", payload,
           "-H", "authorization: " + info["authorization"], "-H", "apns-push-type: background",
           "-H", "apns-priority: 5", "-H", "apns-topic: " + info["bundleIds"][0], "-H", "apns-expiration: 0",
           f"https://127.0.0.1:{info['productionPort']}/3/device/{token}"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith(("finished in", "requests:", "status codes:")):
            print(line)
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pushes", type=int, default=100_000)
    ap.add_argument("--stale", type=float, default=0.0, help="fraction of stale tokens (0.05 = 5 %%)")
    ap.add_argument("--in-flight", type=int, default=100, help="apns.maxConcurrentPushes")
    ap.add_argument("--poll-ms", type=int, default=1000, help="apns.pollIntervalMs")
    ap.add_argument("--binary", default=os.path.join(ROOT, ".build/release/suplash-server"))
    ap.add_argument("--calibrate", type=int, default=0, metavar="N", help="only run h2load with N requests")
    ap.add_argument("--streams", type=int, default=100, help="h2load concurrent streams (--calibrate)")
    args = ap.parse_args()
    info = mock_info()
    if args.calibrate:
        calibrate(info, args.calibrate, args.streams)
        return
    data_dir = tempfile.mkdtemp(prefix="push-bench-")
    server = Server(args.binary, data_dir, info, args)
    server.start()
    status, body = Conn(server.port).call("POST", "/v1/auth/signup",
                                          {"email": f"push-{uuid.uuid4().hex[:8]}@bench.test", "password": PASSWORD})
    assert status == 201, (status, body)
    user_id = body["user"]["id"]
    server.stop()
    t = time.time()
    seed(os.path.join(data_dir, "suplash.sqlite"), user_id, info["bundleIds"][0], args.pushes, args.stale)
    print(f"seeded {args.pushes} devices, tokens and pending rows in {time.time() - t:.1f} s")

    server.start()
    db = sqlite3.connect(os.path.join(data_dir, "suplash.sqlite"), timeout=60)
    released = int(time.time() * 1000)
    with db:
        db.execute("UPDATE push_outbox SET due_at = ?, next_attempt_at = ?, created_at = ?, expires_at = ? "
                   "WHERE delivered_at IS NULL AND failed_at IS NULL",
                   (released, released, released, released + 7_200_000))
    while True:
        time.sleep(0.5)
        depth = server.metric("suplash_push_queue_depth")
        if depth == 0:
            break
    pid = server.proc.pid
    peak, rss = status_kib(pid, "VmHWM"), status_kib(pid, "VmRSS")
    server.stop()

    sent = sorted(r[0] for r in db.execute(
        "SELECT delivered_at - due_at FROM push_outbox WHERE delivered_at IS NOT NULL"))
    failed = db.execute("SELECT reason, count(*) FROM push_outbox WHERE failed_at IS NOT NULL GROUP BY reason").fetchall()
    last = db.execute("SELECT max(coalesce(delivered_at, failed_at)) FROM push_outbox").fetchone()[0]
    db.close()
    finished = len(sent) + sum(n for _, n in failed)
    seconds = (last - released) / 1000
    connections, lowered = 0, []
    with open(info["requestLog"]) as f:
        for line in f:
            e = json.loads(line)
            if e.get("event") == "connection":
                connections += 1
            elif e.get("event") == "settings":
                lowered.append(e.get("maxConcurrentStreams"))
    print(f"pushes: {args.pushes} queued, stale {args.stale:.0%}, {args.in_flight} in flight, SQLite store")
    print(f"finished {finished} rows in {seconds:.1f} s: {finished / seconds:.0f} pushes/s")
    print(f"sent {len(sent)}; failed {dict(failed)}")
    print(f"queue-to-sent ms: p50 {percentile(sent, 50)}, p99 {percentile(sent, 99)}, max {sent[-1] if sent else 0}")
    print(f"mock: {connections} connection(s) opened in total (both environments, this run and any before), "
          f"stream limit lowered {len(lowered)} times (last {lowered[-1] if lowered else '-'})")
    print(f"server RSS: peak {peak / 1024:.1f} MiB, at the end {rss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
