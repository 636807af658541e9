#!/usr/bin/env bash
# tests/query/bench.sh: timings of the query shim on QUERY_BENCH_ROWS rows
# (default 10,000,000) of public.bench (id bigint key, status text, amount
# numeric(12,2), note text with NULLs and '', paid boolean, qty int), with the
# same rows in the replica and in a PostgreSQL 15 that the script starts:
#
#   cdcstore hash of the whole table, md5 and lookup3
#   the PostgreSQL-side hash query (cdcstore hash --sql), md5 and lookup3
#   cdcstore reconcile of equal tables, md5 and lookup3
#   cdcstore reconcile finding one changed row, md5 and lookup3
#   cdcstore export to a CSV file against COPY public.bench TO a file
#
# Goals (issue 4): reconcile of 10M equal rows < 10 s, one differing row
# found < 15 s, export faster than COPY TO.  Each figure is printed with the
# load average at the time, and appended to $QUERY_BENCH_DIR/results.jsonl.
# Data are generated once per row count and kept in $QUERY_BENCH_DIR
# (default /tmp/cdcbench); QUERY_BENCH_KEEP=1 keeps PostgreSQL's data too.
# Run it on a quiet machine: it uses every core.
set -uo pipefail
export LC_ALL=C.UTF-8

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CDC=${CDCSTORE:-$ROOT/build/cdcstore}
N=${QUERY_BENCH_ROWS:-10000000}
DIR=${QUERY_BENCH_DIR:-/tmp/cdcbench}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PORT=${QUERY_BENCH_PORT:-55442}
REPS=${QUERY_BENCH_REPS:-1}
D=$DIR/n$N
mkdir -p "$D" && chmod 755 "$DIR" && chmod 777 "$D" # the server writes COPY TO files here

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.${2:-2}f\", $1 }"; }
load() { cut -d' ' -f1 /proc/loadavg; }
PG=$D/pg
cleanup() {
    [ -f "$PG/data/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$PG/data" -m fast stop >/dev/null 2>&1
    [ "${QUERY_BENCH_KEEP:-0}" = 1 ] || rm -rf "$PG" "$D/out.csv" "$D/copy.csv"
}
trap cleanup EXIT

# The best of REPS runs of a command, in seconds (output to $D/last.out).
timeit() {
    local best= t0 t1 el
    for _ in $(seq "$REPS"); do
        t0=$(now)
        "$@" > "$D/last.out" 2> "$D/last.err"
        local rc=$?
        t1=$(now)
        [ $rc -ge 2 ] && { echo "bench: $* failed with status $rc:" >&2; tail -3 "$D/last.err" >&2; }
        el=$(calc "$t1 - $t0" 3)
        if [ -z "$best" ] || [ "$(calc "$el < $best" 0)" = 1 ]; then best=$el; fi
    done
    printf '%.2f' "$best"
}

report() { # name seconds [extra]
    printf '%-52s %8s s  %s (load %s)\n' "$1" "$2" "${3:-}" "$(load)"
    printf '{"rows":%s,"what":"%s","seconds":%s,"extra":"%s","load":%s}\n' "$N" "$1" "$2" "$(printf %s "${3:-}" | tr '\t"' "  ")" "$(load)" >> "$DIR/results.jsonl"
}

echo "bench: $N rows in $D; load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"

# ---- Data ----
if [ ! -s "$D/bench.csv" ] || [ ! -s "$D/bench.jsonl" ]; then
    t=$(timeit python3 "$ROOT/tests/query/gen.py" bulk "$N" "$D")
    report "generate $N change records and CSV" "$t"
fi
chmod 644 "$D/bench.csv"
if [ ! -f "$D/replica.done" ]; then
    rm -rf "$D/replica"
    t0=$(now)
    "$CDC" apply --db "$D/replica" --quiet "$D/bench.jsonl" || exit 1
    t=$(calc "$(now) - $t0")
    report "cdcstore apply (replica build)" "$t" "$(calc "$N / $t" 0) records/s"
    touch "$D/replica.done"
fi
# A read-write open replays the writer's log into tables and drops it; until
# then each read-only open (export, hash, reconcile and its rechecks) replays
# it again: 3.7 s per open for 10M rows, as the store keeps every log of an
# apply session (no max_total_wal_size).  Timed, then the replica is settled.
t0=$(now)
"$CDC" apply --db "$D/replica" --quiet /dev/null || exit 1
report "settle the replica (read-write open: replay and flush the log)" "$(calc "$(now) - $t0")"

# ---- PostgreSQL ----
rm -rf "$PG" && mkdir -p "$PG" && chown postgres "$PG" 2>/dev/null
as_pg "$PGBIN/initdb" -D "$PG/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null || exit 1
as_pg "$PGBIN/pg_ctl" -D "$PG/data" -l "$PG/log" -w -o "-p $PORT -k $PG -c listen_addresses='' \
    -c shared_buffers=512MB -c max_wal_size=4GB -c fsync=off -c synchronous_commit=off" start >/dev/null || exit 1
CONN="host=$PG port=$PORT user=postgres dbname=postgres"
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h "$PG" -p "$PORT" -U postgres -d postgres)
sql() { "${PSQL[@]}" -At -c "$1"; }
t0=$(now)
sql "CREATE TABLE public.bench (id bigint PRIMARY KEY, status text, amount numeric(12,2), note text, paid boolean, qty int)"
sql "COPY public.bench FROM '$D/bench.csv' (FORMAT csv)" && sql "VACUUM ANALYZE public.bench"
report "PostgreSQL: COPY FROM + VACUUM ANALYZE (source build)" "$(calc "$(now) - $t0")"

# ---- Hashes ----
for algo in md5 lookup3; do
    t=$(timeit "$CDC" hash --db "$D/replica" --table public.bench --hash "$algo")
    report "cdcstore hash, whole table, $algo" "$t" "$(cut -f4,5 "$D/last.out")"
    "$CDC" hash --db "$D/replica" --table public.bench --hash "$algo" --sql > "$D/hash.sql"
    t=$(timeit "${PSQL[@]}" -At -F ' ' -f "$D/hash.sql")
    report "PostgreSQL hash query (hash --sql), $algo" "$t" "$(cut -d' ' -f2,3 "$D/last.out")"
done

# ---- Reconcile ----
for algo in md5 lookup3; do
    t=$(timeit "$CDC" reconcile --db "$D/replica" --table public.bench --source "$CONN" --hash "$algo")
    report "reconcile, equal tables, $algo" "$t" "$(grep -c . "$D/last.out") differences"
done
# ---- Export ----
t=$(timeit "$CDC" export --db "$D/replica" --table public.bench --output "$D/out.csv")
bytes=$(stat -c %s "$D/out.csv")
report "cdcstore export --output (CSV; 2 threads, io_uring)" "$t" \
    "$(calc "$N / $t" 0) rows/s, $(calc "$bytes / $t / 1000000" 0) MB/s, $bytes bytes"
t=$(CDC_EXPORT_THREADS=1 timeit "$CDC" export --db "$D/replica" --table public.bench --output "$D/out.csv")
report "cdcstore export --output (CSV; 1 thread, io_uring)" "$t" "$(calc "$N / $t" 0) rows/s"
t=$(CDC_URING=0 timeit "$CDC" export --db "$D/replica" --table public.bench --output "$D/out.csv")
report "cdcstore export --output (CSV; 2 threads, write(2))" "$t" "$(calc "$N / $t" 0) rows/s"
rm -f "$D/copy.csv"
t=$(timeit "${PSQL[@]}" -c "COPY public.bench TO '$D/copy.csv' (FORMAT csv, HEADER)")
cbytes=$(stat -c %s "$D/copy.csv")
report "PostgreSQL COPY public.bench TO file (CSV, HEADER)" "$t" \
    "$(calc "$N / $t" 0) rows/s, $(calc "$cbytes / $t / 1000000" 0) MB/s, $cbytes bytes"
# COPY TO writes the heap's order (COPY FROM put some short rows into earlier
# pages' free space), the export key order: same bytes, same lines.
if [ "$bytes" = "$cbytes" ] && [ "$(wc -l < "$D/out.csv")" = "$(wc -l < "$D/copy.csv")" ]; then
    echo "export and COPY TO: same size and line count"
else
    echo "export and COPY TO differ in size or line count"
fi

mid=$((N / 2 + 17))
sql "UPDATE public.bench SET note = 'changed' WHERE id = $mid"
for algo in md5 lookup3; do
    t=$(timeit "$CDC" reconcile --db "$D/replica" --table public.bench --source "$CONN" --hash "$algo")
    found=$(cut -f1,2 "$D/last.out" | paste -sd' ')
    report "reconcile, one changed row, $algo" "$t" "found: $found"
done

