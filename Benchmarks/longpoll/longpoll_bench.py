#!/usr/bin/env python3
"""Long-poll benchmark (not run in CI). Python standard library only.

Starts a release `suplash-server` on port 0 with a fresh data dir, then
  1. parks N concurrent `GET /v1/sync?since=…&waitSeconds=60` requests (default 10,000:
     100 per "background" user, plus one per "latency" user) on N sockets driven by one
     epoll loop in this process, and reads the server's VmRSS/VmHWM from /proc before and
     after → memory per waiting connection;
  2. with all of them still waiting, commits one entry for each latency user in turn and
     times "POST sent → that user's waiter answered" (an upper bound of commit → response:
     it includes the POST's own parsing and fsync'd commit), p50/p99; for reference it
     also times plain POST round trips (no waiter) first.

    python3 Benchmarks/longpoll/longpoll_bench.py [--server PATH] [--waiters 10000] [--wakes 300]

The client needs one fd per waiter: it raises its own soft RLIMIT_NOFILE to the hard limit
(the server does the same for itself).
"""
import argparse
import json
import os
import resource
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import http.client
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def proc_mem(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                k, v = line.split(":")
                out[k] = int(v.split()[0])  # kB
    return out


def request(port, method, path, body=None, token=None, device=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {}
    if token:
        h["Authorization"] = f"Bearer {token}"
    if device:
        h["X-Device-ID"] = device
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    payload = r.read()
    c.close()
    return r.status, (json.loads(payload) if payload else None)


def signup(port):
    email = f"b{uuid.uuid4().hex[:12]}@bench.test"
    st, js = request(port, "POST", "/v1/auth/signup", {"email": email, "password": "correct horse battery"})
    assert st == 201, (st, js)
    token = js["session"]["accessToken"]
    st, js2 = request(port, "GET", "/v1/sync", token=token)
    assert st == 200
    return js["user"]["id"], token, js2["nextToken"]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(ROOT, ".build/release/suplash-server"))
    ap.add_argument("--waiters", type=int, default=10_000)
    ap.add_argument("--wakes", type=int, default=300)
    ap.add_argument("--per-user", type=int, default=100)
    args = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    data = tempfile.mkdtemp(prefix="suplash-bench-")
    env = dict(os.environ, SUPLASH_RATELIMIT_ENABLED="false", SUPLASH_AUTH_ARGON2_MEMORY_KIB="8192", SUPLASH_AUTH_ARGON2_ITERATIONS="1",
               SUPLASH_STORAGE_MIGRATIONS_DIR=os.path.join(ROOT, "Migrations/sqlite"), SUPLASH_LOG_LEVEL="warning")
    server = subprocess.Popen([args.server, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", data + "/data"],
                              stdout=subprocess.PIPE, stderr=open(data + "/server.log", "w"), env=env)
    line = server.stdout.readline().decode()
    port = int(line.rsplit(":", 1)[1])
    try:
        background_waiters = args.waiters - args.wakes
        n_bg_users = (background_waiters + args.per_user - 1) // args.per_user
        t = time.monotonic()
        bg_users = [signup(port) for _ in range(n_bg_users)]
        lat_users = [signup(port) for _ in range(args.wakes)]
        print(f"signed up {len(bg_users) + len(lat_users)} users in {time.monotonic() - t:.1f}s")

        # Reference: plain POST round trips (no waiter), on one keep-alive connection.
        uid, tok, _ = bg_users[0]
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        post_rt = []
        for i in range(100):
            body = json.dumps({"amountMl": 100, "loggedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode()
            t0 = time.perf_counter()
            c.request("POST", f"/v1/water_logs/{uid}/entries", body=body,
                      headers={"Authorization": f"Bearer {tok}", "Content-Type": "application/json"})
            c.getresponse().read()
            post_rt.append(time.perf_counter() - t0)
        c.close()
        # bg user 0 changed: refresh its token so its waiters park.
        st, js = request(port, "GET", f"/v1/sync?since={bg_users[0][2]}&limit=1000", token=tok)
        while js["hasMore"]:
            st, js = request(port, "GET", f"/v1/sync?since={js['nextToken']}&limit=1000", token=tok)
        bg_users[0] = (uid, tok, js["nextToken"])

        time.sleep(1.0)
        before = proc_mem(server.pid)
        sel = selectors.DefaultSelector()
        socks = {}
        targets = []
        for i in range(background_waiters):
            targets.append(("bg", bg_users[i // args.per_user]))
        for u in lat_users:
            targets.append(("lat", u))
        lat_sock = {}
        t = time.monotonic()
        pending = list(enumerate(targets))
        while pending:
            batch, pending = pending[:500], pending[500:]
            for i, (kind, (uid, tok, since)) in batch:
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                s.sendall((f"GET /v1/sync?since={since}&waitSeconds=60 HTTP/1.1\r\nHost: b\r\n"
                           f"Authorization: Bearer {tok}\r\n\r\n").encode())
                s.setblocking(False)
                sel.register(s, selectors.EVENT_READ, i)
                socks[i] = s
                if kind == "lat":
                    lat_sock[uid] = i
        print(f"opened {len(socks)} waiting long polls in {time.monotonic() - t:.1f}s")
        time.sleep(3.0)
        early = sel.select(timeout=0)
        assert not early, f"{len(early)} long polls answered before any commit"
        after = proc_mem(server.pid)
        per_conn = (after["VmRSS"] - before["VmRSS"]) * 1024 / len(socks)
        print(f"server VmRSS before {before['VmRSS']} kB, with {len(socks)} waiting {after['VmRSS']} kB, "
              f"VmHWM {after['VmHWM']} kB -> {per_conn:.0f} bytes per waiting connection")

        # Wakes: one commit per latency user, timing POST sent -> waiter answered.
        wake = []
        for uid, tok, since in lat_users:
            i = lat_sock[uid]
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            body = json.dumps({"amountMl": 250, "loggedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
            t0 = time.perf_counter()
            c.request("POST", f"/v1/water_logs/{uid}/entries", body=body,
                      headers={"Authorization": f"Bearer {tok}", "Content-Type": "application/json"})
            got = None
            deadline = t0 + 10
            while got is None and time.perf_counter() < deadline:
                for key, _ in sel.select(timeout=0.5):
                    chunk = key.fileobj.recv(65536)
                    sel.unregister(key.fileobj)
                    if key.data == i:
                        got = time.perf_counter()
                        assert chunk.startswith(b"HTTP/1.1 200"), chunk[:80]
                    else:
                        raise SystemExit(f"waiter {key.data} of another user woke: {chunk[:80]!r}")
            c.getresponse().read()
            c.close()
            assert got is not None, "waiter not woken within 10 s"
            wake.append(got - t0)
        still = len(socks) - len(wake)
        print(f"background waiters still parked during the wakes: {still}")
        ms = lambda x: f"{x * 1000:.2f} ms"
        print(f"plain POST round trip (fsync'd commit): p50 {ms(pct(post_rt, 50))}, p99 {ms(pct(post_rt, 99))}")
        print(f"wake latency, POST sent -> waiter answered, {len(wake)} wakes: "
              f"p50 {ms(pct(wake, 50))}, p99 {ms(pct(wake, 99))}, max {ms(max(wake))}")
        print(f"server VmHWM at the end {proc_mem(server.pid)['VmHWM']} kB")
        for s in socks.values():
            s.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
