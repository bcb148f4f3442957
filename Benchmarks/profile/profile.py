#!/usr/bin/env python3
"""Instruction-count profile and memory breakdown of one workload (load-independent).

    python3 Benchmarks/profile/profile.py --binary .build/release/suplash-server \
        --workload get --requests 2000 --connections 2 --callgrind /tmp/cg.get.out
    python3 Benchmarks/profile/profile.py --workload create --memory   # no valgrind: RSS stages

Starts the server on loopback with a fresh data dir (rate limits off, log level warning, as
Benchmarks/run.py does), signs up one user, seeds `--entries` entries, warms up, then sends
exactly `--requests` requests over `--connections` keep-alive connections (each connection
sends its next request when the previous answer arrived). With `--callgrind` the server runs
under `valgrind --tool=callgrind`; counters are zeroed after the warm-up and dumped after the
measured requests, and Ir/request is printed (callgrind counts instructions, so the figure
does not depend on machine load). With `--memory` it prints VmRSS/VmHWM and the
anonymous/file split (smaps_rollup) after start, signup, seeding and the workload.
"""
import argparse, json, os, re, selectors, shutil, socket, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PASSWORD = "bench-password-123"
LOGGED_AT = "2026-01-01T00:00:00Z"


def status_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem", "Threads"):
                out[k] = int(v.split()[0])
    return out


def rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            m = re.match(r"(\w+):\s+(\d+) kB", line)
            if m:
                out[m.group(1)] = int(m.group(2))
    return out


def cpu_seconds(pid):
    """User and system CPU time of the whole process (all threads), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def mem_line(label, pid):
    s = status_kib(pid)
    return (f"{label:<14} VmRSS {s['VmRSS']/1024:6.1f} MiB  VmHWM {s['VmHWM']/1024:6.1f}  "
            f"anon {s['RssAnon']/1024:6.1f}  file {s['RssFile']/1024:6.1f}  threads {s['Threads']}")


def call(port, method, path, body=None, auth=None):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = auth
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, (json.loads(data) if data[:1] in b"{[" else None)


def drive(port, raw, total, connections, depth=1):
    """Sends `total` copies of `raw` over `connections` keep-alive sockets; counts statuses.
    With `depth` > 1 each write holds `depth` copies (pipelined) and a connection writes its
    next batch once every answer to the previous one arrived; `total` counts requests."""
    raw = raw * depth
    total = max(1, total // depth)
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(connections):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        socks.append(s)
    sent = 0
    done = 0
    statuses = {}
    state = {}
    answered = {}
    for s in socks:
        if sent < total:
            s.sendall(raw)
            sent += 1
            state[s] = b""
            sel.register(s, selectors.EVENT_READ)
    while done < total:
        for key, _ in sel.select(timeout=600):
            s = key.fileobj
            chunk = s.recv(65536)
            if not chunk:
                raise SystemExit("server closed a connection")
            buf = state[s] + chunk
            while True:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                head = buf[:end].decode("latin-1")
                m = re.search(r"(?i)\r\ncontent-length:\s*(\d+)", head)
                length = int(m.group(1)) if m else 0
                if len(buf) < end + 4 + length:
                    break
                code = int(head.split(" ", 2)[1])
                statuses[code] = statuses.get(code, 0) + 1
                buf = buf[end + 4 + length:]
                answered[s] = answered.get(s, 0) + 1
                if answered[s] % depth:
                    continue
                done += 1
                if sent < total:
                    s.sendall(raw)
                    sent += 1
            state[s] = buf
    for s in socks:
        s.close()
    return statuses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "suplash-server"))
    ap.add_argument("--workload", default="get", choices=["get", "create", "list", "health", "sync"])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--connections", type=int, default=2)
    ap.add_argument("--pipeline", type=int, default=1, metavar="N",
                    help="N requests per write (pipelined); --requests and --warmup still count requests")
    ap.add_argument("--entries", type=int, default=10000)
    ap.add_argument("--callgrind", metavar="OUTFILE")
    ap.add_argument("--stderr", default=os.devnull, metavar="FILE",
                    help="append the server's standard error (its log) to FILE instead of discarding it")
    ap.add_argument("--memory", action="store_true")
    ap.add_argument("--keep", type=float, default=0, help="seconds to leave the server running after the load (prints its pid)")
    ap.add_argument("--reminders-off", action="store_true",
                    help="turn the user's reminders off (profile reminders.enabled=false) before seeding")
    ap.add_argument("--logged-now", action="store_true",
                    help="the workload's creates are logged at the current time (today's day, as the app posts)")
    ap.add_argument("--logged-yesterday", action="store_true",
                    help="the created entries are drunk 24 h ago (inside the reminder schedule's hourly history:"
                         " each create recomputes the next reminder in full; run.py --create-logged-yesterday)")
    ap.add_argument("--env", action="append", default=[], help="extra KEY=VALUE for the server")
    ap.add_argument("--wrk", type=float, default=0, metavar="SECONDS",
                    help="drive with wrk -t2 -c<connections> for SECONDS instead (memory runs)")
    args = ap.parse_args()

    data = tempfile.mkdtemp(prefix="prof-suplash-")
    env = dict(os.environ, SUPLASH_RATELIMIT_ENABLED="false", SUPLASH_LOG_LEVEL="warning")
    for kv in args.env:
        k, _, v = kv.partition("=")
        env[k] = v
    cmd = [args.binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", data]
    if args.callgrind:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={args.callgrind}", "--dump-instr=no",
               "--collect-jumps=no"] + cmd
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(args.stderr, "ab"), env=env, text=True, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        m = re.search(r":(\d+)\s*$", line.strip())
        if not m:
            raise SystemExit(f"server did not start: {line!r}")
        port = int(m.group(1))
        pid = proc.pid
        if args.memory:
            print(mem_line("started", pid))
        email = f"prof-{os.getpid()}@bench.test"
        s, b = call(port, "POST", "/v1/auth/signup", {"email": email, "password": PASSWORD})
        assert s == 201, (s, b)
        uid = b["user"]["id"]
        auth = "Bearer " + b["session"]["accessToken"]
        if args.memory:
            print(mem_line("signed up", pid))
        if args.reminders_off:
            s, b = call(port, "PATCH", "/v1/users/me", {"reminders": {"enabled": False}}, auth)
            assert s == 200, (s, b)
        base = f"/v1/water_logs/{uid}/entries"
        made = 0
        while made < args.entries:
            n = min(500, args.entries - made)
            items = [{"amountMl": 100 + (made + i) % 900, "loggedAt": LOGGED_AT, "source": "api"} for i in range(n)]
            s, b = call(port, "POST", base + ":batch", {"entries": items}, auth)
            assert s == 200, (s, b)
            made += n
        s, b = call(port, "POST", base, {"amountMl": 250, "loggedAt": LOGGED_AT}, auth)
        assert s == 201, (s, b)
        entry_id = b["id"]
        if args.memory:
            print(mem_line("seeded", pid))
        # As Benchmarks/run.py's setup: pull the whole change feed in pages of 1000.
        s, b = call(port, "GET", "/v1/sync?limit=1000", None, auth)
        while s == 200 and b.get("hasMore"):
            s, b = call(port, "GET", f"/v1/sync?limit=1000&since={b['nextToken']}", None, auth)
        sync_token = b.get("nextToken") if s == 200 else None
        if args.memory:
            print(mem_line("synced", pid))
        logged_at = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) if args.logged_now
                     else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 86400)) if args.logged_yesterday
                     else LOGGED_AT)
        body = json.dumps({"amountMl": 250, "loggedAt": logged_at, "source": "api"}).encode()
        hdr = f"Host: 127.0.0.1:{port}\r\nAuthorization: {auth}\r\n"
        if args.workload == "get":
            raw = f"GET {base}/{entry_id} HTTP/1.1\r\n{hdr}\r\n".encode()
        elif args.workload == "list":
            raw = f"GET {base}?pageSize=20 HTTP/1.1\r\n{hdr}\r\n".encode()
        elif args.workload == "sync":
            raw = f"GET /v1/sync?since={sync_token} HTTP/1.1\r\n{hdr}\r\n".encode()
        elif args.workload == "health":
            raw = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        else:
            raw = (f"POST {base} HTTP/1.1\r\n{hdr}Content-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        drive(port, raw, args.warmup, args.connections, args.pipeline)
        if args.callgrind:
            subprocess.run(["callgrind_control", "-z", str(pid)], check=True, stdout=subprocess.DEVNULL)
        t0 = time.time()
        cpu0 = cpu_seconds(pid)
        if args.wrk:
            method = raw.split(b" ", 1)[0].decode()
            lua = os.path.join(data, "req.lua")
            with open(lua, "w") as f:
                f.write(f"wrk.method = {json.dumps(method)}\n")
                f.write(f"wrk.headers[\"Authorization\"] = {json.dumps(auth)}\n")
                if args.workload == "create":
                    f.write(f"wrk.body = {json.dumps(body.decode())}\n")
                    f.write("wrk.headers[\"Content-Type\"] = \"application/json\"\n")
            path = raw.split(b" ", 2)[1].decode()
            out = subprocess.run(["wrk", "-t2", f"-c{args.connections}", f"-d{int(args.wrk)}s", "-s", lua,
                                  f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True).stdout
            m = re.search(r"(\d+) requests in", out)
            bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
            statuses = {"requests": int(m.group(1)) if m else -1, "non2xx": int(bad.group(1)) if bad else 0}
        else:
            statuses = drive(port, raw, args.requests, args.connections, args.pipeline)
        elapsed = time.time() - t0
        cpu1 = cpu_seconds(pid)
        done = statuses.get("requests", args.requests) if args.wrk else args.requests
        if not args.callgrind and done > 0:
            user, system = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
            print(f"server CPU per request: user {user / done * 1e6:.1f} us, system {system / done * 1e6:.1f} us "
                  f"({done} requests)")
        if args.callgrind:
            subprocess.run(["callgrind_control", "-d", "measured", str(pid)], check=True, stdout=subprocess.DEVNULL)
        print(f"workload {args.workload}: {args.requests} requests over {args.connections} connections, "
              f"statuses {statuses}, {elapsed:.1f} s")
        if args.wrk:
            import urllib.request
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
            m = re.search(r"^suplash_writer_mean_batch_size\s+(\S+)", text, re.M)
            if m:
                print(f"writer mean batch size (jobs per commit since start): {float(m.group(1)):.2f}")
        if args.memory:
            print(mem_line("after load", pid))
            r = rollup(pid)
            print("smaps_rollup: " + ", ".join(f"{k} {r.get(k, 0)/1024:.1f} MiB" for k in
                  ("Rss", "Pss", "Anonymous", "Private_Dirty", "Shared_Clean", "Private_Clean")))
        if args.keep:
            print(f"server pid {pid}; stopping in {args.keep:.0f} s", flush=True)
            print(f"port {port} path {raw.split(b' ', 2)[1].decode()} auth {auth}", flush=True)
            time.sleep(args.keep)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(data, ignore_errors=True)
    if args.callgrind:
        dumps = sorted(f for f in os.listdir(os.path.dirname(os.path.abspath(args.callgrind)) or ".")
                       if f.startswith(os.path.basename(args.callgrind) + "."))
        for d in dumps:
            path = os.path.join(os.path.dirname(os.path.abspath(args.callgrind)), d)
            with open(path) as f:
                text = f.read()
            if "Trigger: dump measured" in text:
                m = re.search(r"^summary:\s+(\d+)", text, re.M)
                if m:
                    print(f"{path}: Ir total {int(m.group(1)):,}  Ir/request {int(m.group(1)) / args.requests:,.0f}")


if __name__ == "__main__":
    main()
