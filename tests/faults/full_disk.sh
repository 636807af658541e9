#!/usr/bin/env bash
# tests/faults/full_disk.sh (make test-faults): a full disk gives a clear
# error and a non-zero exit, never an abort, and loses nothing: on a small
# tmpfs, half the input is applied with room, the disk is filled (below the
# free-space margin, then to 100%), applying the rest and creating a new
# replica both fail with a message naming the free space, and once space is
# freed the rest applies and the replica equals one made with room all along.
# Then the margin is crossed in the middle of an apply: the batches before
# it stay, the message says so, and the re-run ends as a run with room.
# Needs root (it mounts a tmpfs in a private mount namespace).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${CDCSTORE:-$ROOT/build/cdcstore}
if [ "$(id -u)" != 0 ]; then echo "full_disk: needs root to mount a tmpfs"; exit 1; fi
if [ -z "${CDC_IN_NS:-}" ]; then exec env CDC_IN_NS=1 unshare --mount --propagation private bash "$0" "$@"; fi
T=$(mktemp -d /tmp/cdcfull.XXXXXX)
mkdir "$T/fs"
mount -t tmpfs -o size=512m tmpfs "$T/fs"
trap 'umount "$T/fs" 2>/dev/null; rm -rf "$T"' EXIT
FIRST=$ROOT/tests/data/debezium/snapshot_stream.jsonl
REST=("$ROOT"/tests/data/debezium/toast_unchanged.jsonl "$ROOT"/tests/data/debezium/resnapshot.jsonl)
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
# expect_enospc NAME CMD...: the command fails with exit 1 (not a crash) and names the free space
expect_enospc() {
  local name=$1; shift
  local rc=0 out
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" = 1 ] && grep -q "MiB free" <<<"$out" && grep -q "no space left" <<<"$out"; then ok "$name"
  else bad "$name: exit $rc: $(tail -3 <<<"$out")"; fi
}
fill_to() { # leave $1 MiB free
  rm -f "$T/fs/ballast"
  local avail=$(( $(stat -f -c '%a*%S' "$T/fs") ))
  local want=$(( avail - $1 * 1048576 ))
  [ "$want" -gt 0 ] && fallocate -l "$want" "$T/fs/ballast" 2>/dev/null || dd if=/dev/zero of="$T/fs/ballast" bs=1M count=$((want / 1048576)) status=none 2>/dev/null || true
}
"$BIN" apply --db "$T/ref" --quiet "$FIRST" "${REST[@]}"
"$BIN" apply --db "$T/fs/r" --quiet "$FIRST"
for free in 100 0; do
  fill_to "$free"
  echo "# $(stat -f -c '%a*%S/1048576' "$T/fs" | bc) MiB free"
  expect_enospc "apply refused with ${free} MiB free" "$BIN" apply --db "$T/fs/r" --quiet "${REST[@]}"
  expect_enospc "a new replica refused with ${free} MiB free" "$BIN" apply --db "$T/fs/new" --quiet "$FIRST"
  out=$("$BIN" export --db "$T/fs/r" --table public.orders 2>&1) && ok "export (read-only) works with ${free} MiB free" \
    || bad "export with ${free} MiB free: $(tail -3 <<<"$out")"
done
rm -f "$T/fs/ballast"
"$BIN" apply --db "$T/fs/r" --quiet "${REST[@]}" && ok "apply resumes once space is freed" || bad "apply after freeing space"

# The margin crossed in the middle of an apply: the batches before are kept
# and said to be, the rest is refused, and a re-run of the same file after
# space is freed ends where a run with room ends.
python3 "$ROOT/bench/gen.py" --events 60000 --keys 20000 --shape wide --seed 7 \
  --out "$T/big.jsonl" --expected "$T/big.csv" >"$T/gen.log" 2>&1 || { cat "$T/gen.log"; exit 1; }
"$BIN" apply --db "$T/bigref" --quiet --batch-size 1000 "$T/big.jsonl"
fill_to 131
rc=0; out=$("$BIN" apply --db "$T/fs/big" --batch-size 1000 "$T/big.jsonl" 2>&1) || rc=$?
applied=$(sed -n 's/.*records in .*: \([0-9]*\) applied.*/\1/p' <<<"$out")
if [ "$rc" = 1 ] && grep -q "this batch was not written (the batches before it were)" <<<"$out" \
  && [ "${applied:-0}" -gt 0 ] && [ "$applied" -lt 60000 ]; then ok "margin crossed mid-apply: $applied records kept, the rest refused"
else bad "margin crossed mid-apply: exit $rc: $(tail -3 <<<"$out")"; fi
rm -f "$T/fs/ballast"
"$BIN" apply --db "$T/fs/big" --quiet --batch-size 1000 "$T/big.jsonl" && ok "the same file applies once space is freed" \
  || bad "re-apply after freeing space"
cmp -s <("$BIN" export --db "$T/bigref" --table public.items_wide --meta) <("$BIN" export --db "$T/fs/big" --table public.items_wide --meta) \
  && ok "the replica interrupted by the full disk equals the one made with room" || bad "interrupted replica differs"
same=1
for t in $("$BIN" tables --db "$T/ref" | awk '{print $1}'); do
  cmp -s <("$BIN" export --db "$T/ref" --table "$t" --meta) <("$BIN" export --db "$T/fs/r" --table "$t" --meta) || { same=0; bad "table $t differs from the run with room"; }
done
[ "$same" = 1 ] && ok "the replica equals the one made with room"
a=$("$BIN" stats --db "$T/ref" --json) b=$("$BIN" stats --db "$T/fs/r" --json)
[ "$a" = "$b" ] && ok "counters equal the run with room" || bad "counters differ: $a vs $b"
echo "full_disk: $pass passed, $fail failed"
[ "$fail" = 0 ]
