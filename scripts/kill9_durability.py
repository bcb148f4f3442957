#!/usr/bin/env python3
"""kill -9 durability check (walking-skeleton issue, "Done when").

Starts the release server on a fresh data dir, signs a user up, fires a burst of
concurrent POSTs of water entries with client ids, sends SIGKILL to the server in the
middle of the burst, restarts it on the same data dir, and checks that every entry that
got a 2xx before the kill is there. Prints a summary and exits 1 on any loss.

    python3 scripts/kill9_durability.py [--binary .build/release/suplash-server] [--threads 16] [--seconds 3]
"""
import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone


def start(binary, data_dir):
    env = dict(os.environ, SUPLASH_AUTH_ARGON2_MEMORY_KIB="8192", SUPLASH_AUTH_ARGON2_ITERATIONS="1")
    proc = subprocess.Popen([binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", data_dir],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    line = proc.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, int(m.group(1))


def call(port, method, path, body=None, token=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, (json.loads(data) if data else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=".build/release/suplash-server")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    data_dir = tempfile.mkdtemp(prefix="suplash-kill9-")
    proc, port = start(args.binary, data_dir)
    status, body = call(port, "POST", "/v1/auth/signup",
                        {"email": f"k{uuid.uuid4().hex[:8]}@example.test", "password": "correct horse battery"})
    assert status == 201, (status, body)
    email = body["user"]["email"]
    acked, lock, stop = [], threading.Lock(), threading.Event()
    token = body["session"]["accessToken"]

    def burst():
        while not stop.is_set():
            eid = str(uuid.uuid4())
            now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            try:
                s, _ = call(port, "POST", "/v1/water_logs/me/entries",
                            {"id": eid, "amountMl": 250, "loggedAt": now}, token)
            except Exception:
                return  # the server died mid-request: not acknowledged
            if 200 <= s < 300:
                with lock:
                    acked.append(eid)

    threads = [threading.Thread(target=burst) for _ in range(args.threads)]
    for t in threads:
        t.start()
    time.sleep(args.seconds)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stop.set()
    for t in threads:
        t.join()

    proc, port = start(args.binary, data_dir)
    try:
        status, body = call(port, "POST", "/v1/auth/login", {"email": email, "password": "correct horse battery"})
        token = body["session"]["accessToken"]
        stored, page = set(), None
        while True:
            q = "/v1/water_logs/me/entries?pageSize=100" + (f"&pageToken={page}" if page else "")
            status, body = call(port, "GET", q, token=token)
            stored.update(e["id"] for e in body["entries"])
            page = body.get("nextPageToken")
            if not page:
                break
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    lost = [e for e in acked if e not in stored]
    print(f"acknowledged before kill -9: {len(acked)}; stored after restart: {len(stored)}; lost: {len(lost)}")
    return 1 if lost or not acked else 0


if __name__ == "__main__":
    sys.exit(main())
