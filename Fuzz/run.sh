#!/usr/bin/env bash
# Builds the libFuzzer target for the HTTP request parser and runs it for SECONDS (default 60)
# on a fresh copy of the seed corpus, then prints executions and coverage.
#
#   Fuzz/run.sh [SECONDS]
#
# The harness is not a SwiftPM product: it is compiled with swiftc together with the three
# parser files it needs, into .build/fuzz/. New inputs go to .build/fuzz/corpus (fresh each
# run; the seed corpus in Fuzz/HTTPParser/corpus is only read). A crash or broken invariant
# exits non-zero and leaves the input in .build/fuzz/artifacts/ (reproduce it with
# `.build/fuzz/http-parser-fuzzer <file>`). Environment: FUZZ_OUT (build/output directory).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-60}
OUT=${FUZZ_OUT:-.build/fuzz}
HERE=Fuzz/HTTPParser
BIN="$OUT/http-parser-fuzzer"
mkdir -p "$OUT"

echo "== fuzz: build $BIN (swiftc -sanitize=fuzzer,address)"
swiftc -module-name SuplashHTTP -parse-as-library -swift-version 6 -warnings-as-errors \
  -sanitize=fuzzer,address -O -g -use-ld=lld \
  Sources/SuplashHTTP/HTTPParser.swift Sources/SuplashHTTP/HTTPHeaders.swift Sources/SuplashHTTP/HTTPTypes.swift \
  "$HERE/fuzz.swift" "$HERE/stubs.swift" -o "$BIN"

rm -rf "$OUT/corpus" && mkdir -p "$OUT/corpus" "$OUT/artifacts"
LOG="$OUT/fuzz.log"
echo "== fuzz: ${SECONDS_TO_RUN}s on $(ls "$HERE/corpus" | wc -l) seeds (log: $LOG)"
status=0
SWIFT_BACKTRACE=enable=no "$BIN" "$OUT/corpus" "$HERE/corpus" \
  -dict="$HERE/http.dict" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$OUT/artifacts/" -print_final_stats=1 -print_pcs=0 >"$LOG" 2>&1 || status=$?

grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$LOG" || true
grep -E '^stat::' "$LOG" || true
echo "corpus after the run: $(ls "$OUT/corpus" | wc -l) files"
if [ "$status" -ne 0 ]; then
  echo "== fuzz: FAILED (exit $status); last lines of $LOG:"
  tail -40 "$LOG"
  echo "crash artifacts in $OUT/artifacts/:"
  ls -l "$OUT/artifacts/"
  exit "$status"
fi
echo "== fuzz: no crash"
