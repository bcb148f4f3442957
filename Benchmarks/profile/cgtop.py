#!/usr/bin/env python3
"""Top functions of a callgrind dump by self and inclusive Ir (callgrind_annotate 3.19
mis-attributes these multi-threaded dumps to `clone`).

    python3 Benchmarks/profile/cgtop.py /tmp/cg/get.out.1 --requests 2000 [--top 40] [--demangle]
"""
import argparse, re, subprocess, sys
from collections import defaultdict


def parse(path):
    names = {}
    selfc = defaultdict(int)
    incl_calls = defaultdict(int)   # cost of calls made from fn (inclusive of callees)
    cur = None
    pending_call = False
    cfn = None
    summary = None

    def name(kind_text):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?", kind_text)
        if not m:
            return kind_text
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), m.group(1))

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                if len(parts) < 2:
                    continue
                cost = int(parts[1])
                if pending_call:
                    incl_calls[(cur, cfn)] += cost
                    pending_call = False
                else:
                    selfc[cur] += cost
                continue
            if line.startswith("fn="):
                cur = name(line[3:])
            elif line.startswith("cfn="):
                cfn = name(line[4:])
            elif line.startswith("calls="):
                pending_call = True
            elif line.startswith("summary:"):
                summary = int(line.split()[1])
    return selfc, incl_calls, summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--requests", type=int, default=1)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--inclusive", action="store_true")
    args = ap.parse_args()
    selfc, calls, summary = parse(args.dump)
    total = summary or sum(selfc.values())
    if args.inclusive:
        incl = defaultdict(int)
        for fn, c in selfc.items():
            incl[fn] += c
        for (caller, callee), c in calls.items():
            if caller != callee:
                incl[caller] += c
        table = incl
    else:
        table = selfc
    rows = sorted(table.items(), key=lambda kv: -kv[1])[: args.top]
    try:
        dem = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(r[0] or "?" for r in rows),
                             capture_output=True, text=True, timeout=60).stdout.split("\n")
    except Exception:
        dem = [r[0] for r in rows]
    print(f"total Ir {total:,}  per request {total / args.requests:,.0f}  ({'inclusive' if args.inclusive else 'self'})")
    for (fn, c), d in zip(rows, dem):
        print(f"{100.0 * c / total:6.2f}% {c / args.requests:10,.0f}  {d[:150]}")


if __name__ == "__main__":
    main()


def callees(dump, pattern, requests, top=30):
    """Callees of functions whose (mangled) name contains `pattern`, by inclusive Ir."""
    selfc, calls, summary = parse(dump)
    agg = defaultdict(int)
    own = 0
    for fn, c in selfc.items():
        if fn and pattern in fn:
            own += c
    for (caller, callee), c in calls.items():
        if caller and pattern in caller and caller != callee:
            agg[callee] += c
    rows = sorted(agg.items(), key=lambda kv: -kv[1])[:top]
    dem = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(r[0] or "?" for r in rows),
                         capture_output=True, text=True).stdout.split("\n")
    print(f"self {own / requests:,.0f}")
    for (fn, c), d in zip(rows, dem):
        print(f"{c / requests:10,.0f}  {d[:150]}")
