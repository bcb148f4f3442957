#!/usr/bin/env python3
"""Resident memory of server binaries at start and around the first signup, load-independent.

    python3 Benchmarks/profile/startup_rss.py NAME=BINARY[:ENV=VALUE,ENV=VALUE] ... [--starts 3] [--by-file]

For each binary: starts it as Benchmarks/run.py does (fresh data dir, rate limits off,
`log.level=warning`), waits 1 s, reads VmRSS, RssAnon/RssFile and the thread count from
/proc/PID/status ("idle"), signs one user up (Argon2id hashing: about 12 MiB for a moment (19 MiB before the 12 MiB × 3 passes default))
and reads VmHWM ("peak after signup") and VmRSS again. Prints the medians over `--starts`
starts as a Markdown table. `--by-file` prints instead, for one start of each binary, the
resident KiB per mapped file (/proc/PID/smaps) idle and after the signup: which libraries'
pages the process touches.
"""
import argparse
import collections
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import run as R  # noqa: E402  (Benchmarks/run.py: the servers' start and setup)


def status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def kib(fields, key):
    return int(fields.get(key, "0 kB").split()[0])


def per_file(pid):
    """Resident KiB per mapped file name ([heap], [anon], [stack] for the rest)."""
    sizes = collections.Counter()
    current = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5 and ":" in parts[3]:
                current = os.path.basename(parts[5]) if len(parts) > 5 else "[anon]"
            elif parts[0] == "Rss:":
                sizes[current] += int(parts[1])
    return sizes


def start(binary, env):
    server = R.Ours(binary)
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        server.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    time.sleep(1.0)
    return server


def measure(binary, env):
    server = start(binary, env)
    try:
        pid = server.proc.pid
        idle = status(pid)
        server.setup(1)
        time.sleep(0.3)
        after = status(pid)
        return [kib(idle, "VmRSS"), kib(idle, "RssAnon"), kib(idle, "RssFile"), int(idle["Threads"]),
                kib(after, "VmHWM"), kib(after, "VmRSS"), kib(after, "RssAnon"), kib(after, "RssFile")]
    finally:
        server.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+", metavar="NAME=BINARY[:ENV=VALUE,...]")
    ap.add_argument("--starts", type=int, default=3)
    ap.add_argument("--by-file", action="store_true")
    args = ap.parse_args()
    parsed = []
    for item in args.binaries:
        name, _, rest = item.partition("=")
        binary, _, envs = rest.partition(":")
        if not os.path.exists(binary):
            raise SystemExit(f"{binary}: no such binary")
        parsed.append((name, binary, dict(e.split("=", 1) for e in envs.split(",") if e)))
    if args.by_file:
        for name, binary, env in parsed:
            server = start(binary, env)
            idle = per_file(server.proc.pid)
            server.setup(1)
            time.sleep(0.3)
            after = per_file(server.proc.pid)
            server.stop()
            print(f"## {name}\n\n| mapping | idle KiB | after signup KiB |\n|---|---|---|")
            for key, value in after.most_common(25):
                print(f"| {key} | {idle.get(key, 0)} | {value} |")
            print(f"| total | {sum(idle.values())} | {sum(after.values())} |\n")
        return
    mib = lambda k: f"{k / 1024:.1f}"  # noqa: E731
    print("| build | idle RSS MiB | idle anon / file | threads | peak after signup (VmHWM) | RSS after signup | anon / file after |")
    print("|---|---|---|---|---|---|---|")
    for name, binary, env in parsed:
        rows = [measure(binary, env) for _ in range(args.starts)]
        m = [statistics.median(column) for column in zip(*rows)]
        print(f"| {name} | {mib(m[0])} | {mib(m[1])} / {mib(m[2])} | {m[3]:.0f} | {mib(m[4])} | {mib(m[5])} | "
              f"{mib(m[6])} / {mib(m[7])} |")


if __name__ == "__main__":
    main()
