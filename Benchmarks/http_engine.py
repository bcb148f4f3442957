#!/usr/bin/env python3
"""HTTP engine benchmarks, by hand (not tests): throughput before/after and the memory of
clients that never read. Loopback only; every loop is bounded; servers are stopped at the end.

    # get, /healthz and pipelined GETs (16 per write), binaries alternating run by run
    python3 Benchmarks/http_engine.py throughput --binary before=/tmp/old/suplash-server \
        --binary after=.build/release/suplash-server --runs 3 --duration 10

    # RSS added by 1,000 connections that pipeline GET /openapi.json and never read
    python3 Benchmarks/http_engine.py never-reading --binary after=.build/release/suplash-server \
        --connections 1000 --pipeline 16

`throughput` prints req/s per run and the median per binary and workload (wrk -t2, on the
same cores as the server). `never-reading` starts a fresh server, measures its RSS (VmRSS),
opens the connections, sends every request at once without reading a byte, samples RSS
for `--seconds`, then checks that a new client is still answered (and how fast), and
closes everything. Each server runs with a fresh data dir and rate limits off.
"""
import argparse
import os
import resource
import socket
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the shared harness: Ours, run_wrk, LUA, vm_rss_kib)

PIPELINE_LUA = r"""
local depth = tonumber(os.getenv("WRK_DEPTH") or "16")
local path = os.getenv("WRK_PATH") or "/healthz"
init = function(args)
  local r = {}
  for i = 1, depth do r[i] = wrk.format("GET", path) end
  req = table.concat(r)
end
request = function() return req end
function done(summary, latency, requests)
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.timeout, summary.errors.status, latency:percentile(50), latency:percentile(99)))
end
"""


def start_server(path):
    """Starts `path` with the package it was built in as working directory (its
    config/suplash.json and Migrations/ must match the binary)."""
    marker = os.sep + ".build" + os.sep
    run.ROOT = path.split(marker)[0] if marker in path else run.ROOT
    server = run.Ours(path)
    server.start()
    return server


def parse_binaries(values):
    out = []
    for v in values:
        name, _, path = v.partition("=")
        if not path or not os.path.exists(path):
            raise SystemExit(f"--binary NAME=PATH: {v!r} does not exist")
        out.append((name, os.path.abspath(path)))
    return out


def throughput(args):
    binaries = parse_binaries(args.binary)
    tmp = tempfile.mkdtemp(prefix="bench-http-")
    lua = os.path.join(tmp, "request.lua")
    pipe_lua = os.path.join(tmp, "pipeline.lua")
    with open(lua, "w") as f:
        f.write(run.LUA)
    with open(pipe_lua, "w") as f:
        f.write(PIPELINE_LUA)
    results = {}  # (binary, workload) -> [rps]
    for i in range(args.runs):
        order = binaries if i % 2 == 0 else list(reversed(binaries))
        for name, path in order:
            server = start_server(path)
            try:
                server.setup(args.entries)
                for workload in ["get", "health", "pipelined"]:
                    if workload == "pipelined":
                        os.environ["WRK_DEPTH"] = str(args.depth)
                        os.environ["WRK_PATH"] = "/healthz"
                        r = run.run_wrk(pipe_lua, server, ("GET", "/healthz", "", ""), args.connections, args.duration)
                    else:
                        r = run.run_wrk(lua, server, server.workload(workload), args.connections, args.duration)
                    bad = r["errors"] + r["status"]
                    results.setdefault((name, workload), []).append(r["rps"])
                    print(f"run {i + 1} {name:>8} {workload:>9}: {r['rps']:>9.0f} req/s  p50 {run.fmt_ms(r['p50_us'])} ms"
                          f"  p99 {run.fmt_ms(r['p99_us'])} ms" + (f"  ERRORS {bad}" if bad else ""), flush=True)
            finally:
                server.stop()
    print(f"\nmedian req/s of {args.runs} runs, wrk -t2 -c{args.connections} -d{args.duration}s"
          f" (pipelined: {args.depth} GET /healthz per write)")
    for workload in ["get", "health", "pipelined"]:
        row = "  ".join(f"{name}: {statistics.median(results[(name, workload)]):>8.0f}"
                        f" ({', '.join(f'{x:.0f}' for x in results[(name, workload)])})" for name, _ in binaries)
        print(f"{workload:>9}  {row}")


def never_reading(args):
    binaries = parse_binaries(args.binary)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.connections + 64 > hard:
        raise SystemExit(f"open-file limit {hard} is too low for {args.connections} connections")
    request = f"GET {args.path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode() * args.pipeline
    for name, path in binaries:
        server = start_server(path)
        socks = []
        try:
            warm = run.Conn(server.port)
            for _ in range(3):
                warm.call("GET", args.path)
            time.sleep(0.5)
            before = run.vm_rss_kib(server.proc.pid)
            deadline = time.monotonic() + 60
            for _ in range(args.connections):
                if time.monotonic() > deadline:
                    break
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                if args.rcvbuf:
                    # A small receive window (set before connect): the kernel cannot take the
                    # answers for the client, so they stay with the server.
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
                s.settimeout(10)
                s.connect(("127.0.0.1", server.port))
                s.setblocking(False)
                try:
                    s.send(request)
                except BlockingIOError:
                    pass
                socks.append(s)
            peak = before
            end = time.monotonic() + args.seconds
            while time.monotonic() < end:
                peak = max(peak, run.vm_rss_kib(server.proc.pid))
                time.sleep(0.25)
            t0 = time.monotonic()
            probe = run.Conn(server.port)
            status, _ = probe.call("GET", "/healthz")
            probe_ms = (time.monotonic() - t0) * 1000
            print(f"{name}: {len(socks)} never-reading connections (SO_RCVBUF {args.rcvbuf or 'default'}) "
                  f"x {args.pipeline} x GET {args.path}: "
                  f"RSS {before / 1024:.0f} MiB -> peak {peak / 1024:.0f} MiB (+{(peak - before) / 1024:.0f} MiB); "
                  f"a new client's /healthz: {status} in {probe_ms:.0f} ms", flush=True)
        finally:
            for s in socks:
                s.close()
            server.stop()


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("throughput")
    t.add_argument("--binary", action="append", required=True, help="NAME=PATH of a suplash-server; repeat")
    t.add_argument("--runs", type=int, default=3)
    t.add_argument("--duration", type=int, default=10)
    t.add_argument("--connections", type=int, default=32)
    t.add_argument("--depth", type=int, default=16)
    t.add_argument("--entries", type=int, default=200)
    n = sub.add_parser("never-reading")
    n.add_argument("--binary", action="append", required=True, help="NAME=PATH of a suplash-server; repeat")
    n.add_argument("--connections", type=int, default=1000)
    n.add_argument("--pipeline", type=int, default=16)
    n.add_argument("--path", default="/openapi.json")
    n.add_argument("--seconds", type=float, default=8)
    n.add_argument("--rcvbuf", type=int, default=4096,
                   help="SO_RCVBUF of each client socket in bytes (0: the kernel's default, which on loopback "
                        "lets the kernel buffer megabytes of answers per connection)")
    args = ap.parse_args()
    if args.command == "throughput":
        if not any(os.access(os.path.join(p, "wrk"), os.X_OK) for p in os.environ.get("PATH", "").split(":")):
            raise SystemExit("wrk is missing: apt-get install wrk")
        throughput(args)
    else:
        never_reading(args)


if __name__ == "__main__":
    main()
