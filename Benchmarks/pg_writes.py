#!/usr/bin/env python3
"""Write throughput and statement counts of our server on PostgreSQL (docs/postgresql.md, "Change sequence"; figures in Benchmarks/README.md).

    python3 Benchmarks/pg_writes.py --binary .build/release/suplash-server            # req/s
    python3 Benchmarks/pg_writes.py --binary A --binary B --runs 3                    # alternating
    python3 Benchmarks/pg_writes.py --binary .build/release/suplash-server --statements

Starts a throw-away, durable PostgreSQL cluster (run.py's `PostgresCluster`: fsync,
synchronous_commit and full_page_writes on), then for every binary (alternating run by run,
each on a fresh database) starts one server instance, signs up `--users` users and drives
`POST /v1/water_logs/{uid}/entries` with wrk, each request for a user picked at random
(`--instances 2`: two server processes on the database behind nginx, as run.py's x2).
With `--users 1` every request writes the same user's rows (the single-user figure of
run.py's `create` workload); with many users writers only meet on the change sequence.

`--statements` instead runs the cluster with `log_statement=all`, makes 200 sequential
creates and reports, per request, the statements the server sent and how many of them ran
while the backend held the change-sequence row lock (from its `UPDATE change_sequence` or
`SELECT … FOR UPDATE` up to and including its `COMMIT`).
Only loopback addresses and a Unix socket are used; every loop is bounded.
"""
import argparse
import importlib.util
import json
import os
import random
import re
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_run", os.path.join(HERE, "run.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

LUA = r"""
local users = {}
for uid, auth in string.gmatch(os.getenv("WRK_USERS"), "([^ ;]+) ([^;]+)") do
  users[#users + 1] = {uid, auth}
end
local body = '{"amountMl": 250, "loggedAt": "2026-01-01T00:00:00Z", "source": "api"}'
request = function()
  local u = users[math.random(#users)]
  return wrk.format("POST", "/v1/water_logs/" .. u[1] .. "/entries",
                    {["Content-Type"] = "application/json", ["Authorization"] = u[2]}, body)
end
function done(summary, latency, requests)
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"status":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


def sign_up(server, count):
    c = bench.Conn(server.port)
    users = []
    for i in range(count):
        s, b = c.call("POST", "/v1/auth/signup", {"email": f"w{i}-{random.getrandbits(32):x}@bench.test",
                                                  "password": bench.PASSWORD})
        assert s == 201, (s, b)
        users.append((b["user"]["id"], "Bearer " + b["session"]["accessToken"]))
    return users


def throughput(binary, cluster, users, connections, duration, lua, instances=1):
    server = (bench.OursPostgresPair if instances == 2 else bench.OursPostgres)(binary, cluster)
    server.start()
    try:
        people = sign_up(server, users)
        env = dict(os.environ, WRK_USERS=";".join(f"{u} {a}" for u, a in people))
        out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--timeout", "10s", "-s", lua,
                              f"http://127.0.0.1:{server.port}/"], env=env, capture_output=True, text=True,
                             timeout=duration + 60)
        m = re.search(r"WRKJSON (\{.*\})", out.stdout)
        if not m:
            raise SystemExit(f"wrk failed: {out.stdout}\n{out.stderr}")
        r = json.loads(m.group(1))
        r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
        return r
    finally:
        server.stop()


def statements(binary, cluster, requests=200):
    server = bench.OursPostgres(binary, cluster)
    server.start()
    log = os.path.join(cluster.dir, "server.log")
    try:
        (uid, auth), = sign_up(server, 1)
        c = bench.Conn(server.port)
        start = os.path.getsize(log)
        for _ in range(requests):
            s, b = c.call("POST", f"/v1/water_logs/{uid}/entries",
                          {"amountMl": 250, "loggedAt": bench.LOGGED_AT_OURS, "source": "api"}, auth)
            assert s == 201, (s, b)
        with open(log, errors="replace") as f:
            f.seek(start)
            lines = f.read().splitlines()
    finally:
        server.stop()
    total, locked, holding = 0, 0, set()
    for line in lines:
        m = re.match(r"\[(\d+)\] LOG:  (?:statement|execute [^:]*): (.*)", line)
        if not m:
            continue
        pid, sql = m.group(1), m.group(2)
        total += 1
        if "change_sequence" in sql and ("UPDATE" in sql.upper() or "FOR UPDATE" in sql.upper()):
            holding.add(pid)
        if pid in holding:
            locked += 1
            if sql.strip().upper() in ("COMMIT", "ROLLBACK"):
                holding.discard(pid)
    return total / requests, locked / requests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", action="append", required=True)
    ap.add_argument("--users", type=int, default=64)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--instances", type=int, choices=(1, 2), default=1,
                    help="2 = two server processes behind nginx (run.py's suplash-pg x2)")
    ap.add_argument("--statements", action="store_true")
    args = ap.parse_args()
    cluster = bench.PostgresCluster()
    cluster.start()
    try:
        if args.statements:
            subprocess.run(cluster.as_pg + [f"{cluster.bin}/psql", "-h", cluster.dir, "-U", cluster.user, "-d", "postgres",
                                            "-qc", "ALTER SYSTEM SET log_statement = 'all'",
                                            "-c", "ALTER SYSTEM SET log_line_prefix = '[%p] '",
                                            "-c", "SELECT pg_reload_conf()"], check=True, stdout=subprocess.DEVNULL)
            for binary in args.binary:
                total, locked = statements(binary, cluster)
                print(f"{binary}: {total:.2f} statements per create, {locked:.2f} of them holding the change sequence")
            return
        lua_dir = tempfile.mkdtemp(prefix="pgw-lua-")
        lua = os.path.join(lua_dir, "writes.lua")
        with open(lua, "w") as f:
            f.write(LUA)
        results = {b: [] for b in args.binary}
        if args.instances == 2 and not bench.ensure_nginx():
            raise SystemExit("--instances 2 needs nginx: apt-get install nginx-light")
        print(f"# {args.instances} instance(s), {args.users} user(s), wrk -t2 -c{args.connections}, {args.duration} s, {args.runs} run(s), "
              f"{cluster.durability()}")
        for run in range(args.runs):
            for binary in (args.binary if run % 2 == 0 else list(reversed(args.binary))):
                r = throughput(binary, cluster, args.users, args.connections, args.duration, lua, args.instances)
                bad = r["status"] + r["errors"]
                print(f"run {run + 1} {binary}: {r['rps']:.0f} req/s, p50 {r['p50_us'] / 1000:.2f} ms, "
                      f"p99 {r['p99_us'] / 1000:.2f} ms" + (f", {bad} failed (INVALID)" if bad else ""), flush=True)
                results[binary].append(r["rps"])
        for binary, values in results.items():
            print(f"median {binary}: {statistics.median(values):.0f} req/s")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
