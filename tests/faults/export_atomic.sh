#!/usr/bin/env bash
# tests/faults/export_atomic.sh (make test-faults): `export --output FILE`
# replaces FILE atomically.  A previous export is made; then (a) second
# exports of the same FILE are SIGKILLed mid-way (after they have written
# some of the new file; both file kinds: unnamed O_TMPFILE and, with
# CDC_EXPORT_TMPFILE=0, named ".FILE.cdcexport-XXXXXX"; one and two
# threads): FILE stays byte-identical to the previous export, a kill leaves
# no name behind (unnamed) or one that the next export removes (named), and
# SIGTERM removes the named file itself; (b) failing exports (a table that
# does not exist, a read-only directory, a full disk) exit 1 with a message
# saying FILE is unchanged, leave it byte-identical, leave no temporary file
# and give the space back.  Also: the mode of FILE is kept, a symbolic link
# is followed (the link stays), /dev/null is written in place.
# The read-only directory and the full disk need root (a tmpfs mounted in a
# private mount namespace, as full_disk.sh does); without root they are
# skipped.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${CDCSTORE:-$ROOT/build/cdcstore}
if [ "$(id -u)" = 0 ] && [ -z "${CDC_IN_NS:-}" ]; then
  exec env CDC_IN_NS=1 unshare --mount --propagation private bash "$0" "$@"
fi
T=$(mktemp -d /tmp/cdcexport-test.XXXXXX)
trap 'umount "$T/fs" 2>/dev/null || true; chmod -R u+w "$T" 2>/dev/null || true; rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

python3 "$ROOT/tests/query/gen.py" bulk 300000 "$T"
"$BIN" apply --db "$T/db" --quiet "$T/bench.jsonl"
mkdir "$T/out"
OUT=$T/out/prev.csv
"$BIN" export --db "$T/db" --table public.bench --output "$OUT"
cp "$OUT" "$T/prev.orig"
"$BIN" export --db "$T/db" --table public.bench --format ndjson >"$T/new.ref"
echo "# previous export: $(stat -c %s "$OUT") bytes"

temps() { find "$(dirname "$1")" -maxdepth 1 -name ".$(basename "$1").cdcexport-*" | wc -l; }
# intact NAME FILE: FILE equals the previous export
intact() {
  if cmp -s "$2" "$T/prev.orig"; then ok "$1: the previous export is intact"
  else bad "$1: $2 differs from the previous export ($(stat -c %s "$2") bytes, was $(stat -c %s "$T/prev.orig"))"; fi
}
# written PID DIR: 0 once PID holds a file in DIR that has some bytes in it
written() {
  local f l
  for f in /proc/"$1"/fd/*; do
    l=$(readlink "$f" 2>/dev/null) || continue
    case $l in "$2"/*) [ "$(stat -L -c %s "$f" 2>/dev/null || echo 0)" -gt 0 ] && return 0 ;; esac
  done
  return 1
}

# ---- (a) killed mid-way ----
# The killed exports write NDJSON, so that a finished one would show.  A
# kill that lands after the rename (while the process closes the replica)
# finds the new export complete: FILE is then the new export in full,
# never anything in between.
midway=0
for kind in unnamed named; do
  tmpfile=1; [ "$kind" = named ] && tmpfile=0
  for threads in 1 2; do
    combo=0
    for delay in 0 0.03 0.1; do
      name="SIGKILL $kind, $threads thread(s), ${delay}s after the first bytes"
      CDC_EXPORT_TMPFILE=$tmpfile CDC_EXPORT_THREADS=$threads \
        "$BIN" export --db "$T/db" --table public.bench --format ndjson --output "$OUT" 2>/dev/null &
      p=$!
      for _ in $(seq 1 500); do written "$p" "$T/out" && break; sleep 0.01; done
      sleep "$delay"
      kill -KILL "$p" 2>/dev/null || true
      rc=0; wait "$p" 2>/dev/null || rc=$?
      if [ "$rc" != 137 ]; then echo "# $name: the export ended first (exit $rc)"; cp "$T/prev.orig" "$OUT"; continue; fi
      if cmp -s "$OUT" "$T/new.ref"; then
        ok "$name: killed after the rename: FILE is the new export in full"
      else
        midway=$((midway + 1)) combo=$((combo + 1))
        intact "$name" "$OUT"
      fi
      left=$(temps "$OUT")
      if [ "$kind" = unnamed ]; then
        # The unnamed file gets its name only between its link and the
        # rename (cli/output.c, outfile_commit), after its fsync: a kill in
        # that window leaves the complete new export under that name, which
        # the next export removes (checked below).  Anything else left is a
        # failure: a name while the file was still being written, or a part.
        tmpname=$(find "$T/out" -maxdepth 1 -name ".$(basename "$OUT").cdcexport-*" | head -n 1)
        if [ "$left" = 0 ]; then ok "$name: no temporary file left"
        elif [ "$left" = 1 ] && cmp -s "$tmpname" "$T/new.ref"; then
          ok "$name: killed between the link and the rename: the named file left is the new export in full"
        else bad "$name: $left temporary file(s) left"; fi
      else
        echo "# $name: $left named temporary file(s) left by the kill"
      fi
      # The next export to FILE completes and removes what the kill left.
      if CDC_EXPORT_TMPFILE=$tmpfile "$BIN" export --db "$T/db" --table public.bench --output "$OUT" 2>/dev/null \
         && cmp -s "$OUT" "$T/prev.orig" && [ "$(temps "$OUT")" = 0 ]; then
        ok "$name: the next export completes and no temporary file remains"
      else bad "$name: the next export: $(temps "$OUT") temporary file(s), $(stat -c %s "$OUT") bytes"; fi
      cp "$T/prev.orig" "$OUT"
    done
    [ "$combo" -ge 1 ] || bad "SIGKILL $kind, $threads thread(s): no export was killed mid-way"
  done
done
echo "# $midway of 12 exports killed mid-way"

# SIGTERM: the named file is removed by the process itself.  (Sent as soon
# as the first bytes are written: the export is then far from the rename.)
CDC_EXPORT_TMPFILE=0 "$BIN" export --db "$T/db" --table public.bench --format ndjson --output "$OUT" 2>/dev/null &
p=$!
for _ in $(seq 1 500); do written "$p" "$T/out" && break; sleep 0.01; done
kill -TERM "$p" 2>/dev/null || true
rc=0; wait "$p" 2>/dev/null || rc=$?
if [ "$rc" = 143 ]; then
  cmp -s "$OUT" "$T/new.ref" && ok "SIGTERM, named: after the rename: FILE is the new export in full" \
    || intact "SIGTERM, named" "$OUT"
  [ "$(temps "$OUT")" = 0 ] && ok "SIGTERM, named: the process removed its temporary file" \
    || bad "SIGTERM, named: $(temps "$OUT") temporary file(s) left"
else
  bad "SIGTERM, named: exit $rc, not killed by the signal"
fi
cp "$T/prev.orig" "$OUT"

# ---- (b) failing exports ----
# expect_fail NAME FILE CMD...: exit 1, a message saying FILE is unchanged,
# FILE intact, no temporary file.
expect_fail() {
  local name=$1 file=$2; shift 2
  local rc=0 out
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" = 1 ] && grep -q "is unchanged" <<<"$out"; then ok "$name: exit 1: $(tail -1 <<<"$out")"
  else bad "$name: exit $rc: $(tail -2 <<<"$out")"; fi
  intact "$name" "$file"
  [ "$(temps "$file")" = 0 ] && ok "$name: no temporary file left" || bad "$name: $(temps "$file") temporary file(s) left"
}
expect_fail "a table that does not exist" "$OUT" "$BIN" export --db "$T/db" --table public.nope --output "$OUT"
expect_fail "a table that does not exist, named" "$OUT" \
  env CDC_EXPORT_TMPFILE=0 "$BIN" export --db "$T/db" --table public.nope --output "$OUT"

if [ "$(id -u)" = 0 ]; then
  mkdir "$T/fs"
  # Room for the previous export and half of another; the new exports are
  # NDJSON, larger than the whole disk, so that writing in place fails too.
  mount -t tmpfs -o size=$(( $(stat -c %s "$T/prev.orig") * 3 / 2 / 1024 ))k tmpfs "$T/fs"
  F=$T/fs/prev.csv
  cp "$T/prev.orig" "$F"
  free_before=$(stat -f -c %a "$T/fs")
  for tmpfile in 1 0; do
    for threads in 1 2; do
      name="a full disk (tmpfile=$tmpfile, $threads thread(s))"
      expect_fail "$name" "$F" env CDC_EXPORT_TMPFILE=$tmpfile CDC_EXPORT_THREADS=$threads \
        "$BIN" export --db "$T/db" --table public.bench --format ndjson --output "$F"
      free_after=$(stat -f -c %a "$T/fs")
      [ "$free_after" = "$free_before" ] && ok "$name: the space is given back" \
        || bad "$name: $free_before blocks free before, $free_after after"
    done
  done
  mount -o remount,ro "$T/fs"
  expect_fail "a read-only directory" "$F" "$BIN" export --db "$T/db" --table public.bench --output "$F"
  expect_fail "a read-only directory, named" "$F" \
    env CDC_EXPORT_TMPFILE=0 "$BIN" export --db "$T/db" --table public.bench --output "$F"
  rc=0; out=$("$BIN" export --db "$T/db" --table public.bench --output "$T/fs/new.csv" 2>&1) || rc=$?
  if [ "$rc" = 1 ] && grep -q "nothing was written" <<<"$out" && [ ! -e "$T/fs/new.csv" ]; then
    ok "a new file in a read-only directory: exit 1: $out"
  else bad "a new file in a read-only directory: exit $rc: $out"; fi
  umount "$T/fs"
else
  chmod a-w "$T/out"
  expect_fail "an unwritable directory" "$OUT" "$BIN" export --db "$T/db" --table public.bench --output "$OUT"
  chmod u+w "$T/out"
  echo "# not root: the full-disk and read-only cases are skipped"
fi

# ---- What a replaced file keeps ----
chmod 600 "$OUT"
"$BIN" export --db "$T/db" --table public.bench --format ndjson --output "$OUT"
[ "$(stat -c %a "$OUT")" = 600 ] && ok "the mode of FILE is kept (600)" || bad "mode $(stat -c %a "$OUT"), was 600"
cmp -s "$OUT" <("$BIN" export --db "$T/db" --table public.bench --format ndjson) \
  && ok "the file export equals the export to standard output" || bad "the file export differs from standard output"
cp "$T/prev.orig" "$OUT"
ln -s prev.csv "$T/out/link.csv"
"$BIN" export --db "$T/db" --table public.bench --format ndjson --output "$T/out/link.csv"
if [ -L "$T/out/link.csv" ] && cmp -s "$OUT" <("$BIN" export --db "$T/db" --table public.bench --format ndjson); then
  ok "a symbolic link stays and the file it names is replaced"
else bad "export through a symbolic link"; fi
"$BIN" export --db "$T/db" --table public.bench --output /dev/null && [ -c /dev/null ] \
  && ok "/dev/null is written in place" || bad "export to /dev/null"

echo "export_atomic: $pass passed, $fail failed"
[ "$fail" = 0 ]
