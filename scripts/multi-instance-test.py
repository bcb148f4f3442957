#!/usr/bin/env python3
"""Two suplash-server instances on one PostgreSQL database behave as one.

Usage (under scripts/with-postgres, which exports SUPLASH_TEST_POSTGRES_URL):

    scripts/with-postgres scripts/multi-instance-test.py .build/release/suplash-server [--seed N]

Starts TWO `suplash-server serve` processes (A and B) at the same time on the same database
(storage.driver = postgres; each with its own data dir, so they share nothing but the
database; both apply migrations at start, the migrator's advisory lock serialises them;
mail goes to each data dir's file transport; rate limits are off because the convergence
run sends a few hundred requests per user in seconds — limits are per instance here and
not what this test is about). Then checks:

  a. a write on A (phone) is visible in B's feed (watch);
  b. a long poll parked on B is woken by a write on A, with that change (latency printed,
     not asserted beyond a generous timeout);
  c. an Idempotency-Key retry sent first to A, then to B, is replayed and applied once;
  d. logout on A -> the access token is refused on B at once; a refresh-token logout on B
     -> refused on A; an admin key revoked with the CLI -> refused on both at once;
  e. after the listening connections are killed (pg_terminate_backend via psql), each
     instance reconnects (and resyncs) and long polls on B are again woken by writes on A;
  f. a seeded model-based convergence run (a port of Tests/SuplashAPITests/
     SyncConvergenceTests.swift): phone, watch and widget push last-write-wins mutations
     of entries, bills and days to alternating instances, with offline periods and
     out-of-order clocks; every push result must be the one the oracle predicts at its
     arrival, and in the end every device, and the snapshot read from each instance,
     equals the oracle.

Finally both servers get SIGTERM and must exit 0 without error-level log lines. Prints a
summary; exit status 1 on any failure (2 on bad usage). Python 3 standard library only.
"""

import datetime
import glob
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

RESULTS = []  # (name, ok, detail)


def check(name, ok, detail=""):
    RESULTS.append((name, bool(ok), detail))
    print(("PASS " if ok else "FAIL ") + name + (f" — {detail}" if detail else ""), flush=True)
    return ok


class Failure(Exception):
    pass


# --------------------------------------------------------------------------- servers


class Server:
    def __init__(self, name, binary, root, env):
        self.name = name
        self.binary = binary
        self.data = os.path.join(root, name)
        os.makedirs(self.data)
        self.stdout = open(os.path.join(root, name + ".stdout"), "w+")
        self.log_path = os.path.join(root, name + ".log")
        self.log = open(self.log_path, "w")
        self.env = env
        self.proc = subprocess.Popen(
            [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", self.data],
            stdout=self.stdout, stderr=self.log, env=env)
        self.host = None
        self.port = None

    def wait_listening(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.stdout.seek(0)
            text = self.stdout.read()
            if "listening on http://" in text:
                url = text.split("listening on http://", 1)[1].split()[0]
                self.host, port = url.rsplit(":", 1)
                self.port = int(port)
                return
            if self.proc.poll() is not None:
                raise Failure(f"server {self.name} exited early ({self.proc.returncode}): {self.tail()}")
            time.sleep(0.05)
        raise Failure(f"server {self.name} did not start")

    def tail(self, lines=20):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return -9
        return self.proc.returncode

    def error_lines(self):
        with open(self.log_path) as f:
            return [line for line in f if '"level":"error"' in line]

    def client(self, timeout=30):
        return Client(self, timeout)


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def json(self):
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


class Client:
    """One keep-alive connection to one server."""

    def __init__(self, server, timeout=30):
        self.server = server
        self.timeout = timeout
        self.conn = None

    def request(self, method, path, body=None, token=None, headers=(), timeout=None):
        h = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        if token:
            h["Authorization"] = "Bearer " + token
        for k, v in headers:
            h[k] = v
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.server.host, self.server.port, timeout=timeout or self.timeout)
            try:
                self.conn.request(method, path, body=data, headers=h)
                r = self.conn.getresponse()
                payload = r.read()
                return Response(r.status, r.getheaders(), payload)
            except (http.client.HTTPException, ConnectionError, OSError):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise Failure("unreachable")


def rfc3339ms(ms):
    t = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def now_ms():
    return int(time.time() * 1000)


def sign_up(client):
    email = f"u{uuid.uuid4().hex[:10]}@example.test"
    r = client.request("POST", "/v1/auth/signup", {"email": email, "password": "correct horse battery"},
                       headers=[("Idempotency-Key", str(uuid.uuid4()))])
    if r.status != 201:
        raise Failure(f"signup failed: {r.status} {r.body[:200]!r}")
    j = r.json
    return {"id": j["user"]["id"], "token": j["session"]["accessToken"], "refresh": j["session"]["refreshToken"],
            "email": email}


def log_in(client, email):
    r = client.request("POST", "/v1/auth/login", {"email": email, "password": "correct horse battery"})
    if r.status != 200:
        raise Failure(f"login failed: {r.status} {r.body[:200]!r}")
    j = r.json
    return j["session"]["accessToken"], j["session"]["refreshToken"]


def pull_all(client, token, device, since=None, limit=500):
    """Pulls pages until hasMore is false; returns (changes, nextToken)."""
    changes = []
    while True:
        path = f"/v1/sync?limit={limit}" + (f"&since={since}" if since else "")
        r = client.request("GET", path, token=token, headers=[("X-Device-ID", device)])
        if r.status != 200:
            raise Failure(f"pull failed: {r.status} {r.body[:200]!r}")
        j = r.json
        changes += j["changes"]
        since = j["nextToken"]
        if not j["hasMore"]:
            return changes, since


def waiting_long_polls(client):
    r = client.request("GET", "/metrics")
    for line in r.body.decode().splitlines():
        if line.startswith("suplash_long_polls_waiting "):
            return float(line.split()[1])
    return 0.0


def new_entry(amount, source):
    return {"amountMl": amount, "loggedAt": rfc3339ms(now_ms() - 60_000), "source": source}


# --------------------------------------------------------------------------- checks


def check_cross_visibility(a, b, user, phone, watch):
    r = a.client().request("POST", "/v1/water_logs/me/entries", new_entry(250, "phone"), token=user["token"],
                           headers=[("X-Device-ID", phone)])
    if not check("a. write on A accepted", r.status == 201, f"status {r.status}"):
        return
    entry_id = r.json["id"]
    changes, _ = pull_all(b.client(), user["token"], watch)
    ids = {c["id"] for c in changes if c["collection"] == "water_entries"}
    check("a. phone's write on A is in watch's feed on B", entry_id in ids, f"{len(changes)} changes on B")
    r = b.client().request("GET", f"/v1/water_logs/me/entries/{entry_id}", token=user["token"])
    check("a. and readable on B", r.status == 200 and r.json.get("amountMl") == 250, f"status {r.status}")


def long_poll_woken(a, b, user, phone, watch, label):
    """Parks a long poll on B, writes on A, returns (ok, detail)."""
    cb = b.client(timeout=70)
    _, token = pull_all(cb, user["token"], watch)
    result = {}

    def wait():
        t = time.time()
        try:
            r = cb.request("GET", f"/v1/sync?since={token}&waitSeconds=30", token=user["token"],
                           headers=[("X-Device-ID", watch)], timeout=70)
            result["response"] = r
        except Exception as e:  # reported below
            result["error"] = repr(e)
        result["returned"] = time.time()
        result["started"] = t

    metrics = b.client()
    before = waiting_long_polls(metrics)
    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    deadline = time.time() + 10
    while time.time() < deadline and waiting_long_polls(metrics) < before + 1:
        time.sleep(0.01)
    if waiting_long_polls(metrics) < before + 1:
        thread.join(40)
        return False, "the long poll did not park on B"
    sent = time.time()
    r = a.client().request("POST", "/v1/water_logs/me/entries", new_entry(330, "phone"), token=user["token"],
                           headers=[("X-Device-ID", phone)])
    committed = time.time()
    if r.status != 201:
        return False, f"write on A failed: {r.status}"
    entry_id = r.json["id"]
    thread.join(40)
    if "response" not in result:
        return False, f"long poll failed: {result.get('error', 'no answer within 40 s')}"
    lp = result["response"]
    got = [c["id"] for c in (lp.json or {}).get("changes", [])]
    waited = result["returned"] - result["started"]
    latency_ms = (result["returned"] - committed) * 1000
    ok = lp.status == 200 and entry_id in got and waited < 30
    detail = (f"status {lp.status}, {len(got)} change(s), woken {latency_ms:.1f} ms after A answered the write "
              f"({(result['returned'] - sent) * 1000:.1f} ms after it was sent), parked {waited:.2f} s")
    print(f"  {label}: long-poll wake latency {latency_ms:.1f} ms (write on A committed -> B answered)", flush=True)
    return ok, detail


def check_idempotent_retry(a, b, user, phone):
    key = str(uuid.uuid4())
    body = new_entry(444, "phone")
    ra = a.client().request("POST", "/v1/water_logs/me/entries", body, token=user["token"],
                            headers=[("X-Device-ID", phone), ("Idempotency-Key", key)])
    rb = b.client().request("POST", "/v1/water_logs/me/entries", body, token=user["token"],
                            headers=[("X-Device-ID", phone), ("Idempotency-Key", key)])
    check("c. first request with the key applied on A", ra.status == 201, f"status {ra.status}")
    check("c. retry on B replayed", rb.status == ra.status and rb.header("Idempotent-Replayed") == "true"
          and rb.body == ra.body, f"status {rb.status}, Idempotent-Replayed={rb.header('Idempotent-Replayed')}")
    changes, _ = pull_all(a.client(), user["token"], phone)
    same = [c for c in changes if c["collection"] == "water_entries" and c["data"] and c["data"].get("amountMl") == 444]
    check("c. applied once", len(same) == 1, f"{len(same)} entries with that body")
    # A push retried on the other instance: the same results, not re-applied.
    key = str(uuid.uuid4())
    push = {"mutations": [{"collection": "days", "id": "2025-07-01", "op": "upsert",
                           "data": {"activeMinutes": 42}, "clientUpdatedAt": rfc3339ms(now_ms() - 1000)}]}
    pa = b.client().request("POST", "/v1/sync", push, token=user["token"],
                            headers=[("X-Device-ID", phone), ("Idempotency-Key", key)])
    pb = a.client().request("POST", "/v1/sync", push, token=user["token"],
                            headers=[("X-Device-ID", phone), ("Idempotency-Key", key)])
    check("c. sync push retried B -> A replayed", pa.status == 200 and pb.status == 200
          and pb.header("Idempotent-Replayed") == "true" and pb.body == pa.body,
          f"statuses {pa.status}/{pb.status}, Idempotent-Replayed={pb.header('Idempotent-Replayed')}")


def check_revocations(a, b, user, binary, env, admin_key):
    ca, cb = a.client(), b.client()
    token, refresh = log_in(ca, user["email"])
    r = cb.request("GET", "/v1/users/me", token=token)
    check("d. new session's token accepted on B", r.status == 200, f"status {r.status}")
    r = ca.request("POST", "/v1/auth/logout", token=token)
    check("d. logout on A", r.status == 204, f"status {r.status}")
    r = cb.request("GET", "/v1/users/me", token=token)
    check("d. logged-out token refused on B at once", r.status == 401, f"status {r.status}")
    r = cb.request("POST", "/v1/auth/refresh", {"refreshToken": refresh})
    check("d. its refresh token refused on B", r.status == 401, f"status {r.status}")

    token2, refresh2 = log_in(cb, user["email"])
    r = cb.request("POST", "/v1/auth/logout", {"refreshToken": refresh2})
    r2 = ca.request("GET", "/v1/users/me", token=token2)
    check("d. refresh-token logout on B -> token refused on A at once", r.status == 204 and r2.status == 401,
          f"logout {r.status}, then {r2.status}")

    # A refresh on A, then the old refresh token replayed on B: reuse revokes the session everywhere.
    token3, refresh3 = log_in(ca, user["email"])
    r = ca.request("POST", "/v1/auth/refresh", {"refreshToken": refresh3})
    rotated = r.json["session"]["accessToken"] if r.status == 200 else None
    r = cb.request("POST", "/v1/auth/refresh", {"refreshToken": refresh3})
    r2 = ca.request("GET", "/v1/users/me", token=rotated)
    check("d. refresh-token reuse on B revokes the session on A at once", r.status == 401 and r2.status == 401,
          f"reuse {r.status}, rotated token on A {r2.status}")

    r1 = ca.request("GET", "/v1/admin/stats", token=admin_key)
    r2 = cb.request("GET", "/v1/admin/stats", token=admin_key)
    check("d. admin key (CLI) accepted by both", r1.status == 200 and r2.status == 200, f"{r1.status}/{r2.status}")
    out = subprocess.run([binary, "admin-key", "revoke", "mi", "--data-dir", os.path.join(os.path.dirname(a.data), "cli")],
                         env=env, capture_output=True, text=True)
    r1 = ca.request("GET", "/v1/admin/stats", token=admin_key)
    r2 = cb.request("GET", "/v1/admin/stats", token=admin_key)
    check("d. admin key revoked with the CLI -> refused by both at once",
          out.returncode == 0 and r1.status == 401 and r2.status == 401, f"cli {out.returncode}, {r1.status}/{r2.status}")


def kill_listeners(url):
    """Terminates every LISTEN connection of the test database; returns how many."""
    psql = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))
    exe = psql[-1] if psql else shutil.which("psql")
    if not exe:
        return None
    sql = ("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
           "AND datname = current_database() AND query LIKE '%LISTEN suplash_changes%'")
    out = subprocess.run([exe, "-X", "-A", "-t", "-d", url, "-c", sql], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return int(out.stdout.strip() or "0")


# --------------------------------------------------------------------------- convergence


class Device:
    def __init__(self, name, offset):
        self.name = name
        self.id = str(uuid.uuid4())
        self.offset = offset
        self.online = True
        self.local = {}
        self.outbox = []
        self.token = None
        self.achievements = None


def applied_value(key, value):
    """A days delete clears the day's context (the day stays with null fields)."""
    if value is None and key[0] == "days":
        return ("day", None)
    return value


def convergence(a, b, seed):
    rng = random.Random(seed)
    ctx = f"seed {seed} (replay: --seed {seed})"
    clients = [a.client(), b.client()]
    user = sign_up(clients[0])
    devices = [Device(n, rng.randint(-120_000, 120_000)) for n in ("phone", "watch", "widget")]
    base = now_ms() - 3_600_000
    logged_at = rfc3339ms(now_ms() - 7_200_000)
    dates = [f"2025-07-{d:02d}" for d in range(1, 7)]
    tick = 0
    known = []
    arrivals = []
    oracle = {}  # key -> mutation
    superseded = 0
    wrong = []
    per_instance = [0, 0]
    turn = [0]

    def instance():
        # Requests alternate between the instances (with a random skip, so devices do not
        # stay pinned to one).
        turn[0] += 1 + (1 if rng.random() < 0.3 else 0)
        i = turn[0] % 2
        per_instance[i] += 1
        return clients[i]

    def wins(m, current):
        if current is None:
            return True
        if m["clock"] != current["clock"]:
            return m["clock"] > current["clock"]
        if m["device"] != current["device"]:
            return m["device"] > current["device"]
        return True

    def data(m):
        collection, mid = m["key"]
        out = {"collection": collection, "id": mid, "op": "delete" if m["value"] is None else "upsert",
               "clientUpdatedAt": rfc3339ms(m["clock"])}
        v = m["value"]
        if v is None:
            return out
        if v[0] == "entry":
            out["data"] = {"amountMl": v[1], "loggedAt": logged_at, "source": v[2]}
        elif v[0] == "bill":
            out["data"] = {"provider": "ISKI", "subscriberNo": mid.replace("-", ""), "period": "2025-05",
                           "consumptionM3": 12.5, "amountMinor": v[1], "dueDate": "2025-06-20",
                           "paidAt": logged_at if v[2] else None}
        else:
            out["data"] = {"activeMinutes": v[1]}
        return out

    def value_of(doc, collection):
        if not doc:
            return None
        if collection == "water_entries":
            return ("entry", doc["amountMl"], doc["source"])
        if collection == "bills":
            return ("bill", doc["amountMinor"], doc["paidAt"] is not None)
        if collection == "days":
            return ("day", doc.get("activeMinutes"))
        return None

    def apply(change, state):
        collection = change["collection"]
        if collection in ("profile", "achievements"):
            return
        key = (collection, change["id"])
        v = None if change["deleted"] else value_of(change["data"], collection)
        if v is None:
            state.pop(key, None)
        else:
            state[key] = v

    def push(d):
        nonlocal superseded
        if not d.outbox:
            return
        batch, d.outbox = d.outbox, []
        r = instance().request("POST", "/v1/sync", {"mutations": [data(m) for m in batch]}, token=user["token"],
                               headers=[("X-Device-ID", d.id), ("Idempotency-Key", str(uuid.uuid4()))])
        results = (r.json or {}).get("results")
        if r.status != 200 or not isinstance(results, list) or len(results) != len(batch):
            raise Failure(f"{ctx}: push failed {r.status} {r.body[:300]!r}")
        for m, res in zip(batch, results):
            index = len(arrivals)
            arrivals.append(m)
            expected = wins(m, oracle.get(m["key"]))
            if expected:
                oracle[m["key"]] = m
            else:
                superseded += 1
            status = res.get("status")
            if status != ("applied" if expected else "superseded"):
                wrong.append(f"mutation #{index} {m['key']} from {d.name}: got {status}, expected "
                             f"{'applied' if expected else 'superseded'}")
            if status == "applied":
                v = applied_value(m["key"], m["value"])
            elif status == "superseded":
                v = value_of(res.get("current"), m["key"][0])
            else:
                continue
            if v is None:
                d.local.pop(m["key"], None)
            else:
                d.local[m["key"]] = v

    def pull(d):
        # A pull without a token is a snapshot: live documents only (spec §5), so the device
        # rebuilds from it, keeping only what it has not pushed yet. Applied over the old copy, a
        # document it pushed before its first pull and another device deleted since would stay.
        snapshot = not d.token
        if snapshot:
            d.local = {}
        more = True
        while more:
            path = f"/v1/sync?limit={1 + rng.randrange(20)}" + (f"&since={d.token}" if d.token else "")
            r = instance().request("GET", path, token=user["token"], headers=[("X-Device-ID", d.id)])
            if r.status != 200:
                raise Failure(f"{ctx}: pull failed {r.status} {r.body[:300]!r}")
            j = r.json
            for change in j["changes"]:
                apply(change, d.local)
                if change["collection"] == "achievements":
                    d.achievements = change["data"]
            d.token = j["nextToken"]
            more = j["hasMore"]
        if snapshot:
            for m in d.outbox:
                v = applied_value(m["key"], m["value"])
                if v is None:
                    d.local.pop(m["key"], None)
                else:
                    d.local[m["key"]] = v

    mutations = 0
    target = 240 + rng.randrange(120)
    while mutations < target:
        d = devices[rng.randrange(3)]
        tick += 1 + rng.randrange(40)
        clock = base + tick if rng.random() < 0.1 else base + tick + d.offset
        pick = rng.randrange(6)
        collection = "water_entries" if pick < 3 else "bills" if pick < 5 else "days"

        def new_value():
            if collection == "water_entries":
                return ("entry", 50 + rng.randrange(950), d.name)
            if collection == "bills":
                return ("bill", rng.randrange(100_000), rng.random() < 0.5)
            return ("day", None if rng.random() < 0.2 else rng.randrange(1441))

        live = sorted((k for k, v in d.local.items() if k[0] == collection and v != ("day", None)),
                      key=lambda k: k[1])
        known_here = [k for k in known if k[0] == collection]
        action = rng.randrange(10)
        if action <= 2:
            key = ("days", rng.choice(dates)) if collection == "days" else (collection, str(uuid.uuid4()))
            if collection != "days":
                known.append(key)
            m = {"key": key, "value": new_value(), "clock": clock, "device": d.id}
            d.local[key] = m["value"]
            d.outbox.append(m)
            mutations += 1
        elif action <= 4:
            if not live:
                continue
            key = live[rng.randrange(len(live))] if rng.random() < 0.8 or not known_here \
                else known_here[rng.randrange(len(known_here))]
            m = {"key": key, "value": new_value(), "clock": clock, "device": d.id}
            d.local[key] = m["value"]
            d.outbox.append(m)
            mutations += 1
        elif action == 5:
            if not live:
                continue
            key = live[rng.randrange(len(live))]
            m = {"key": key, "value": None, "clock": clock, "device": d.id}
            v = applied_value(key, None)
            if v is None:
                d.local.pop(key, None)
            else:
                d.local[key] = v
            d.outbox.append(m)
            mutations += 1
        elif action == 6:
            d.online = not d.online
        elif action <= 8:
            if d.online:
                push(d)
        else:
            if d.online:
                pull(d)
    for d in devices:
        d.online = True
        push(d)
    for d in devices:
        pull(d)

    expected = {}
    for key, m in oracle.items():
        v = applied_value(key, m["value"])
        if v is not None:
            expected[key] = v
    check("f. every push result is the oracle's (applied/superseded at its arrival)", not wrong,
          f"{len(arrivals)} mutations, {superseded} superseded; " + ("; ".join(wrong[:5]) if wrong else ctx))
    for i, name in enumerate(("A", "B")):
        state = {}
        changes, _ = pull_all(clients[i], user["token"], str(uuid.uuid4()), limit=1000)
        for c in changes:
            apply(c, state)
        diff = sorted(set(state.items()) ^ set(expected.items()))[:5]
        check(f"f. snapshot read from {name} equals the oracle", state == expected,
              f"{len(expected)} documents; {ctx}" + (f"; first differences {diff}" if diff else ""))
    for d in devices:
        diff = sorted(set(d.local.items()) ^ set(expected.items()))[:5]
        check(f"f. {d.name} converged to the oracle", d.local == expected,
              f"{ctx}" + (f"; first differences {diff}" if diff else ""))

    def without_streak(v):
        return {k: x for k, x in v.items() if k != "currentStreakDays"} if isinstance(v, dict) else v

    for i, name in enumerate(("A", "B")):
        server_achievements = clients[i].request("GET", "/v1/achievements/me", token=user["token"]).json
        check(f"f. devices' achievements equal {name}'s",
              all(without_streak(d.achievements) == without_streak(server_achievements) for d in devices), ctx)
    collections = {m["key"][0] for m in arrivals}
    check("f. the run covered entries, bills and days, conflicts and both instances",
          collections == {"water_entries", "bills", "days"} and superseded > 0 and len(arrivals) > 200
          and min(per_instance) * 4 >= sum(per_instance),
          f"collections {sorted(collections)}, {superseded} superseded, {len(arrivals)} mutations, "
          f"requests A/B {per_instance[0]}/{per_instance[1]}")


# --------------------------------------------------------------------------- main


def main():
    args = sys.argv[1:]
    seed = None
    if "--seed" in args:
        i = args.index("--seed")
        try:
            seed = int(args[i + 1])
        except (IndexError, ValueError):
            print(__doc__, file=sys.stderr)
            return 2
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(args[0])
    url = os.environ.get("SUPLASH_TEST_POSTGRES_URL")
    if not url:
        print("SUPLASH_TEST_POSTGRES_URL is not set (run under scripts/with-postgres)", file=sys.stderr)
        return 2
    if seed is None:
        seed = random.randrange(1, 1 << 40)
    print(f"multi-instance test: seed {seed}", flush=True)

    root = tempfile.mkdtemp(prefix="suplash-mi.")
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("SUPLASH_") and k not in ("SUPLASH_TEST_POSTGRES_URL",):
            del env[k]
    env.update({"SUPLASH_STORAGE_DRIVER": "postgres", "SUPLASH_STORAGE_POSTGRES_URL": url,
                "SUPLASH_RATELIMIT_ENABLED": "false", "SUPLASH_MAIL_TRANSPORT": "file"})
    servers = []
    status = 0
    try:
        # Both start at once: the migrator's advisory lock applies each migration once.
        servers = [Server("A", binary, root, env), Server("B", binary, root, env)]
        for s in servers:
            s.wait_listening()
        a, b = servers
        print(f"A on http://{a.host}:{a.port}, B on http://{b.host}:{b.port} (one database)", flush=True)
        os.makedirs(os.path.join(root, "cli"))
        created = subprocess.run([binary, "admin-key", "create", "--name", "mi", "--data-dir", os.path.join(root, "cli")],
                                 env=env, capture_output=True, text=True)
        if created.returncode != 0:
            raise Failure("admin-key create failed")
        admin_key = created.stdout.strip()

        user = sign_up(a.client())
        phone, watch = str(uuid.uuid4()), str(uuid.uuid4())
        r = b.client().request("GET", "/v1/users/me", token=user["token"])
        check("tokens issued by A are accepted by B (shared secret)", r.status == 200, f"status {r.status}")
        check_cross_visibility(a, b, user, phone, watch)
        ok, detail = long_poll_woken(a, b, user, phone, watch, "b")
        check("b. long poll on B woken by a write on A, with the change", ok, detail)
        check_idempotent_retry(a, b, user, phone)
        check_revocations(a, b, user, binary, env, admin_key)

        killed = kill_listeners(url)
        if killed is None:
            check("e. listener reconnect (psql not found: skipped)", True)
        else:
            check("e. one listening connection per instance killed", killed == 2, f"{killed} killed")
            # The first long poll may be parked before B listens again: then B's resync
            # (every waiter woken after a reconnect) answers it; the second one is woken by
            # the NOTIFY of A's write on B's new listening connection.
            for attempt in ("e1", "e2"):
                ok, detail = long_poll_woken(a, b, user, phone, watch, attempt)
                check(f"{attempt}. after the reconnect a long poll on B is woken by a write on A", ok, detail)

        convergence(a, b, seed)
    except Failure as e:
        check("run", False, str(e))
    except Exception as e:  # an unexpected crash of the script is a failure too
        check("run", False, f"{type(e).__name__}: {e}")
    finally:
        for s in servers:
            code = s.stop()
            check(f"server {s.name} stopped with SIGTERM, exit 0", code == 0, f"exit {code}")
            errors = s.error_lines()
            check(f"server {s.name} logged no errors", not errors, "".join(errors[:3]).strip())
        shutil.rmtree(root, ignore_errors=True)

    failed = [r for r in RESULTS if not r[1]]
    print()
    print(f"multi-instance summary (seed {seed}): {len(RESULTS) - len(failed)} passed, {len(failed)} failed")
    for name, _, detail in failed:
        print(f"  FAILED {name}: {detail}")
    if failed:
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
