#!/usr/bin/env bash
# tests/faults/signal_stop.sh (make test-faults): SIGTERM or SIGINT stops
# `cdcstore apply` within a second however large its batch, and loses
# nothing.  One batch of 1,000,000 records takes several seconds to read,
# decode and apply; the signal is sent at delays spread over that time
# (reading and decoding, then applying).  Each run must end within 1 s of
# the signal with status 128 + the signal (or 0 if it had finished), leave
# the replica as it was before the batch or with the whole batch (a batch is
# atomic; a signal during its write ends the process at once, and the
# write-ahead log holds the batch whole or not at all), and an apply of the
# same input afterwards must give the reference export.  With two batches, a
# signal during the second leaves the first, or both.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${CDCSTORE:-$ROOT/build/cdcstore}
T=$(mktemp -d /tmp/cdcsignal-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
now() { date +%s.%N; }

N=1000000
echo "# generating $N records"
python3 "$ROOT/tests/query/gen.py" bulk "$N" "$T"
IN=$T/bench.jsonl
# a small state that exists before the interrupted batch
head -n 1000 "$IN" >"$T/first.jsonl"
"$BIN" apply --db "$T/ref" --quiet "$IN"
"$BIN" export --db "$T/ref" --table public.bench --output "$T/ref.csv"
start=$(now)
"$BIN" apply --db "$T/timing" --quiet --batch-size "$N" --batch-mib 0 "$IN"
full=$(echo "$(now) - $start" | bc)
echo "# one batch of $N records: ${full} s"

live() { "$BIN" stats --db "$1" --table public.bench --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tables"]["public.bench"]["rows_live"])'; }

# run_one NAME SIGNAL DELAY BATCH: start from the 1,000-row state, signal
# after DELAY seconds; prints the live rows left.
run_one() {
  local name=$1 sig=$2 delay=$3 bs=$4 db=$T/db-$1
  "$BIN" apply --db "$db" --quiet "$T/first.jsonl"
  # --batch-mib 0: batches of exactly bs records (not cut at 64 MiB), the
  # boundaries check() expects
  "$BIN" apply --db "$db" --quiet --batch-size "$bs" --batch-mib 0 "$IN" 2>"$T/$name.err" &
  local pid=$!
  sleep "$delay"
  local t0 rc=0
  t0=$(now)
  kill -s "$sig" "$pid" 2>/dev/null || true
  wait "$pid" || rc=$?
  local took
  took=$(echo "$(now) - $t0" | bc)
  local want=$((128 + $(kill -l "$sig")))
  if [ "$rc" = "$want" ] || [ "$rc" = 0 ]; then
    ok "$name: SIG$sig after ${delay}s: exit $rc"
  else
    bad "$name: SIG$sig after ${delay}s: exit $rc, expected $want: $(tr '\n' ' ' <"$T/$name.err")"
  fi
  if [ "$(echo "$took < 1.0" | bc)" = 1 ]; then
    ok "$name: stopped ${took}s after the signal"
  else
    bad "$name: stopped ${took}s after the signal (limit 1 s)"
  fi
  if [ "$rc" != 0 ]; then
    grep -q "interrupted" "$T/$name.err" && ok "$name: says it was interrupted and what is applied" ||
      bad "$name: message: $(tr '\n' ' ' <"$T/$name.err")"
  fi
  echo "$rc" >"$T/$name.rc"
}

# check NAME ALLOWED...: the live rows are one of ALLOWED; then applying the
# input again gives the reference.
check() {
  local name=$1 db=$T/db-$1
  shift
  local n
  n=$(live "$db")
  local hit=0
  for a in "$@"; do [ "$n" = "$a" ] && hit=1; done
  if [ "$hit" = 1 ]; then ok "$name: $n live rows, a whole number of batches"
  else bad "$name: $n live rows, expected one of: $*"; fi
  "$BIN" apply --db "$db" --quiet "$IN"
  "$BIN" export --db "$db" --table public.bench --output "$T/$name.csv"
  cmp -s "$T/ref.csv" "$T/$name.csv" && ok "$name: resumed, equals the reference" ||
    bad "$name: resumed export differs from the reference"
}

# The delays are fractions of the measured batch, so that the signal lands
# in each phase (reading and decoding, the guard's reads and fold, the
# write at the end) however fast this build and machine are: fixed delays
# fell after the end of the batch once the decoder got faster.
at() { printf '%.2f' "$(echo "$full * $1" | bc -l)"; }
i=0
for f in 0.05 0.2 0.35 0.5 0.65 0.8 0.95; do
  d=$(at "$f")
  i=$((i + 1))
  sig=TERM
  [ "$i" = 3 ] && sig=INT
  run_one "one-$i" "$sig" "$d" "$N"
  # a signal after the batch was written (before the end of the file was
  # seen) stops with every row applied: still a whole batch
  if [ "$(cat "$T/one-$i.rc")" = 0 ]; then check "one-$i" "$N"; else check "one-$i" 1000 "$N"; fi
done
# two batches of N/2: a signal late in the run finds the first committed
for f in 0.5 0.85; do
  d=$(at "$f")
  i=$((i + 1))
  run_one "two-$i" TERM "$d" $((N / 2))
  if [ "$(cat "$T/two-$i.rc")" = 0 ]; then check "two-$i" "$N"; else check "two-$i" 1000 $((N / 2)) "$N"; fi
done
# Input from a pipe that pauses (kcat following an idle topic): a signal
# ends the wait for the next line at once, the lines read are applied, and
# the status says the run was interrupted (it waited for the pipe to close,
# then exited 0).
for sig in TERM INT; do
  rm -rf "$T/pipe"
  mkfifo "$T/fifo"
  { head -n 3 "$IN"; sleep 20; } >"$T/fifo" &
  feeder=$!
  "$BIN" apply --db "$T/pipe" - <"$T/fifo" 2>"$T/pipe.err" &
  pid=$!
  for _ in $(seq 100); do [ -d "$T/pipe" ] && grep -q '"events_read":3' <("$BIN" stats --db "$T/pipe" --json 2>/dev/null) && break; sleep 0.1; done
  t0=$(now)
  kill -"$sig" "$pid"
  rc=0; wait "$pid" || rc=$?
  took=$(echo "$(now) - $t0" | bc)
  kill "$feeder" 2>/dev/null || true; wait "$feeder" 2>/dev/null || true
  rm -f "$T/fifo"
  want=$((128 + $(kill -l "$sig")))
  if [ "$rc" = "$want" ] && [ "$(echo "$took < 2" | bc)" = 1 ] && grep -q '3 records in .*(interrupted)' "$T/pipe.err"; then
    ok "SIG$sig while the input pipe is idle: exit $rc after ${took}s, the 3 lines read applied"
  else
    bad "SIG$sig while the input pipe is idle: exit $rc (want $want) after ${took}s: $(tail -2 "$T/pipe.err")"
  fi
done
echo "signal_stop: $pass passed, $fail failed"
[ "$fail" = 0 ]
