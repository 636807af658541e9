#!/usr/bin/env bash
# bench/purge.sh [KEYS] [WORKDIR]: the disk space a tombstone purge gives
# back.  Generates KEYS (default 1,000,000) inserts of rows of about 100
# bytes into one table, then deletes of every second key (LSNs above every
# insert), applies them with `cdcstore apply` (batches of 10,000), and runs
# `cdcstore gc --horizon-lsn` above every LSN.  Prints the replica's size
# (du) before and after, the table files' bytes gc reports (its memtable
# flushed first), and the time gc took.  WORKDIR (default a new directory
# under /tmp) is removed at the end unless KEEP=1.  The figure is in
# README.md's gc section.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${CDCSTORE:-$ROOT/build/cdcstore}
KEYS=${1:-1000000}
W=${2:-$(mktemp -d /tmp/cdcpurge.XXXXXX)}
mkdir -p "$W"
[[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$W"' EXIT

# One kcat -C -J line per record: inserts at LSN 1000 + id, deletes of the
# even ids at LSN 1000 + KEYS + id; source ts_ms 2026-01-01.
awk -v n="$KEYS" 'BEGIN {
    pad = "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz";
    off = 0;
    for (i = 1; i <= n; i++)
        printf "{\"topic\":\"bench.public.items\",\"partition\":0,\"offset\":%d,\"key\":\"{\\\"id\\\":%d}\",\"payload\":\"{\\\"op\\\":\\\"c\\\",\\\"before\\\":null,\\\"after\\\":{\\\"id\\\":%d,\\\"status\\\":\\\"paid\\\",\\\"amount\\\":\\\"%d.00\\\",\\\"note\\\":\\\"%s\\\"},\\\"source\\\":{\\\"lsn\\\":%d,\\\"ts_ms\\\":1767225600000,\\\"schema\\\":\\\"public\\\",\\\"table\\\":\\\"items\\\"},\\\"ts_ms\\\":1767225600000}\"}\n", off++, i, i, i % 1000, pad, 1000 + i;
    for (i = 2; i <= n; i += 2)
        printf "{\"topic\":\"bench.public.items\",\"partition\":0,\"offset\":%d,\"key\":\"{\\\"id\\\":%d}\",\"payload\":\"{\\\"op\\\":\\\"d\\\",\\\"before\\\":{\\\"id\\\":%d},\\\"after\\\":null,\\\"source\\\":{\\\"lsn\\\":%d,\\\"ts_ms\\\":1767225600000,\\\"schema\\\":\\\"public\\\",\\\"table\\\":\\\"items\\\"},\\\"ts_ms\\\":1767225600000}\"}\n", off++, i, i, 1000 + n + i;
}' >"$W/events.jsonl"

"$BIN" apply --db "$W/db" --batch-size 10000 --quiet "$W/events.jsonl"
# A reopen with nothing to apply flushes what the log replays: du then
# counts the rows in table files, not in the write-ahead log.
"$BIN" apply --db "$W/db" --quiet /dev/null
before=$(du -sb "$W/db" | cut -f1)
"$BIN" stats --db "$W/db" --table public.items | grep -E 'rows_(live|deleted)'
# A horizon below every LSN compacts the table and removes nothing: the
# size a compaction alone reaches, so that the next step's gain is the
# purge's, not the compaction's.
"$BIN" gc --db "$W/db" --horizon-lsn 1 2>&1
compacted=$(du -sb "$W/db" | cut -f1)
start=$(date +%s.%N)
"$BIN" gc --db "$W/db" --horizon-lsn $((1000 + 2 * KEYS + 1)) 2>&1
end=$(date +%s.%N)
after=$(du -sb "$W/db" | cut -f1)
"$BIN" stats --db "$W/db" --table public.items | grep -E 'rows_(live|deleted)|tombstones_purged'
echo "keys $KEYS, deleted $((KEYS / 2)): replica $before bytes as applied, $compacted compacted," \
     "$after after the purge (du -sb); the purge's gc took $(echo "$end - $start" | bc) s"
