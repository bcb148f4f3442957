#!/usr/bin/env python3
"""Reminder delivery at scale: users with hydration reminders due across a morning hour, sent
by the real server's reminder scheduler to the mock APNs server.

By hand only (never in tests or CI). Run under scripts/with-apns-mock:

    swift build -c release --product suplash-server
    # the issue's target: 1,000,000 users due over 60 minutes (≈ 280 due/s)
    scripts/with-apns-mock python3 Benchmarks/reminders/reminder_bench.py --users 1000000 --minutes 60
    # the same rate, scaled down: 100,000 users due over 6 minutes
    scripts/with-apns-mock python3 Benchmarks/reminders/reminder_bench.py --users 100000 --minutes 6
    # a big table, a slice of the hour: 1,000,000 users due over 60 minutes, stop after 6
    scripts/with-apns-mock python3 Benchmarks/reminders/reminder_bench.py --users 1000000 --minutes 60 --measure 6

What it does (SQLite store, one server instance, the wall clock — there is no test clock in a
release build): starts `suplash-server` with `apns.*` pointed at the mock, signs one user up
(the template row), stops it; seeds with SQL, per user: a `users` row copied from the template
(zone UTC, awake 00:00–23:59 so the whole run is inside the waking window, reminders on),
one iPhone with an alert token (clear text: the server seals it at start-up, as after an
upgrade) and one pending hydration reminder, parked far in the future; starts the server again,
then moves the reminders' due times (one UPDATE) to an even spread from `--lead` seconds ahead
over `--minutes` minutes, in user order, and waits until every reminder due within the measured
span (`--measure` minutes, default all) was handed to the push outbox and the push queue is
empty. Each send also plans the user's next reminder (the full recompute), as in production.

Prints: reminders/s while due (sent ÷ the span), the lateness of `sent_at` (handed to the push
outbox) and of the push's `delivered_at` (answered by the mock) after each reminder's due time —
p50 / p99 / max, and that of the reminder due last — and the server's peak and final RSS.
"""

import argparse
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
from push.push_bench import Server, mock_info, percentile  # noqa: E402

FAR = 4_000_000_000_000  # a due time no clock reaches during the run (year 2096)


def seed(db_path, template_id, bundle_id, users):
    """`users` users, each with an iPhone, an alert token and a pending reminder due FAR + i."""
    db = sqlite3.connect(db_path, timeout=60)
    cols = [r[1] for r in db.execute("PRAGMA table_info(users)")]
    template = dict(zip(cols, db.execute(f"SELECT {', '.join(cols)} FROM users WHERE id = ?", (template_id,)).fetchone()))
    now = int(time.time() * 1000)
    today = time.strftime("%Y-%m-%d", time.gmtime())
    template.update(timezone="UTC", wake_time="00:00", sleep_time="23:59", reminders="{}", password_hash=None)
    placeholders = ", ".join("?" for _ in cols)
    batch = 50_000
    with db:
        for start in range(0, users, batch):
            rows_users, rows_devices, rows_tokens, rows_reminders = [], [], [], []
            for i in range(start, min(users, start + batch)):
                uid = str(uuid.UUID(int=(1 << 120) + i))
                row = dict(template, id=uid, email=f"r{i}@bench.test")
                rows_users.append(tuple(row[c] for c in cols))
                device = str(uuid.UUID(int=(2 << 120) + i))
                rows_devices.append((uid, device, "ios", bundle_id, "production", now, now, now))
                rows_tokens.append((uid, device, "alert", bytes.fromhex("f1" + f"{i:062x}"), now))
                rows_reminders.append((str(uuid.UUID(int=(3 << 120) + i)), uid, FAR + i, today, now))
            db.executemany(f"INSERT INTO users ({', '.join(cols)}) VALUES ({placeholders})", rows_users)
            db.executemany(
                "INSERT INTO devices (user_id, id, platform, bundle_id, environment, created_at, updated_at, last_seen_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows_devices)
            db.executemany(
                "INSERT INTO device_tokens (user_id, device_id, push_type, token, registered_at) VALUES (?, ?, ?, ?, ?)",
                rows_tokens)
            db.executemany(
                "INSERT INTO reminders (id, user_id, kind, due_at, state, suggested_ml, local_date, subject_id, "
                "created_at, updated_at) VALUES (?, ?, 'hydration', ?, 'pending', 250, ?, NULL, ?, ?)",
                [r + (r[-1],) for r in rows_reminders])
    db.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--minutes", type=float, default=6.0, help="the due times spread over this many minutes")
    ap.add_argument("--measure", type=float, default=0, help="minutes of the spread to measure (default: all)")
    ap.add_argument("--lead", type=float, default=20.0, help="seconds from the release to the first due time")
    ap.add_argument("--batch", type=int, default=200, help="reminders.batchSize")
    ap.add_argument("--poll-ms", type=int, default=1000, help="reminders.pollIntervalMs (and apns.pollIntervalMs)")
    ap.add_argument("--in-flight", type=int, default=100, help="apns.maxConcurrentPushes")
    ap.add_argument("--binary", default=os.path.join(ROOT, ".build/release/suplash-server"))
    args = ap.parse_args()
    info = mock_info()
    data_dir = tempfile.mkdtemp(prefix="reminder-bench-")
    server = Server(args.binary, data_dir, info, args)
    server.env["SUPLASH_REMINDERS_BATCH_SIZE"] = str(args.batch)
    server.env["SUPLASH_REMINDERS_POLL_INTERVAL_MS"] = str(args.poll_ms)
    server.start()
    status, body = Conn(server.port).call("POST", "/v1/auth/signup",
                                          {"email": f"rem-{uuid.uuid4().hex[:8]}@bench.test", "password": PASSWORD})
    assert status == 201, (status, body)
    template_id = body["user"]["id"]
    server.stop()
    db_path = os.path.join(data_dir, "suplash.sqlite")
    t = time.time()
    seed(db_path, template_id, info["bundleIds"][0], args.users)
    print(f"seeded {args.users} users, devices, alert tokens and pending reminders in {time.time() - t:.1f} s", flush=True)
    db = sqlite3.connect(db_path, timeout=120)
    with db:  # the template user's own reminder is not part of the run
        db.execute("DELETE FROM reminders WHERE user_id = ?", (template_id,))
    t = time.time()
    server.start()
    print(f"server started in {time.time() - t:.1f} s (sealing the tokens)", flush=True)

    span_ms = int(args.minutes * 60_000)
    released = int(time.time() * 1000)
    first = released + int(args.lead * 1000)
    t = time.time()
    with db:
        db.execute("UPDATE reminders SET due_at = ? + (due_at - ?) * ? / ? WHERE state = 'pending' AND due_at >= ?",
                   (first, FAR, span_ms, args.users, FAR))
    print(f"due times set in {time.time() - t:.1f} s: from {args.lead:.0f} s ahead over {args.minutes:g} min "
          f"({args.users / (span_ms / 1000):.0f} due/s)", flush=True)
    measured_ms = int(args.measure * 60_000) if args.measure else span_ms
    last_due = first + measured_ms
    ids_first, ids_last = str(uuid.UUID(int=(3 << 120))), str(uuid.UUID(int=(3 << 120) + args.users - 1))
    expected = db.execute("SELECT count(*) FROM reminders WHERE id BETWEEN ? AND ? AND due_at <= ?",
                          (ids_first, ids_last, last_due)).fetchone()[0]
    peak_rss = 0
    while True:
        time.sleep(2)
        peak_rss = max(peak_rss, status_kib(server.proc.pid, "VmRSS"))
        now = int(time.time() * 1000)
        if now < last_due:
            continue
        left = db.execute("SELECT count(*) FROM reminders WHERE id BETWEEN ? AND ? AND due_at <= ? AND state = 'pending'",
                          (ids_first, ids_last, last_due)).fetchone()[0]
        depth = server.metric("suplash_push_queue_depth")
        if left == 0 and depth == 0:
            break
        if now > last_due + 600_000:
            print(f"gave up 10 minutes after the last due time: {left} reminders pending, push queue {depth}")
            break
    pid = server.proc.pid
    peak, rss = status_kib(pid, "VmHWM"), status_kib(pid, "VmRSS")
    scheduled = server.metric('suplash_reminders_total{event="scheduled"}')
    server.stop()

    rows = db.execute(
        """
        SELECT r.due_at, r.sent_at, p.delivered_at FROM reminders r
        LEFT JOIN push_outbox p ON p.user_id = r.user_id AND p.push_type = 'alert'
        WHERE r.id BETWEEN ? AND ? AND r.due_at <= ? AND r.sent_at IS NOT NULL ORDER BY r.due_at
        """, (ids_first, ids_last, last_due)).fetchall()
    failed = db.execute("SELECT reason, count(*) FROM push_outbox WHERE failed_at IS NOT NULL GROUP BY reason").fetchall()
    db.close()
    sent = sorted(s - d for d, s, _ in rows)
    delivered = sorted(x - d for d, _, x in rows if x is not None)
    last = rows[-1] if rows else (0, 0, None)
    span_s = (rows[-1][0] - rows[0][0]) / 1000 if len(rows) > 1 else 0
    print(f"users {args.users}, due over {args.minutes:g} min, measured {measured_ms / 60_000:g} min: "
          f"{expected} reminders due, {len(rows)} sent, {len(delivered)} delivered, failed {dict(failed)}; "
          f"batch {args.batch}, poll {args.poll_ms} ms, SQLite store")
    if span_s:
        print(f"reminders/s while due: {len(rows) / span_s:.0f}")
    print(f"sent after due, ms: p50 {percentile(sent, 50)}, p99 {percentile(sent, 99)}, max {sent[-1] if sent else 0}; "
          f"the last due: {last[1] - last[0] if last[1] else '-'}")
    print(f"delivered to the mock after due, ms: p50 {percentile(delivered, 50)}, p99 {percentile(delivered, 99)}, "
          f"max {delivered[-1] if delivered else 0}; the last due: {last[2] - last[0] if last[2] else '-'}")
    print(f"next reminders planned by the scheduler: {scheduled}")
    print(f"server RSS: sampled peak {peak_rss / 1024:.1f} MiB, VmHWM {peak / 1024:.1f} MiB, at the end {rss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
