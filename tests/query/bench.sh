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
#   then, typed (issue 12): cdcstore export --format parquet (zstd, snappy)
#   against DuckDB's COPY of the same rows (loaded from the CSV) TO a Parquet
#   file, and the replica's read alone (the floor of any export); cdcstore export --format delta of the whole table (default
#   --file-rows and 1,000,000); its refresh after 1% of the rows changed, in
#   one contiguous key range and at random keys; file sizes beside, and the
#   files read back (DuckDB, deltalake) against the replica's count
#
# Goals (issue 4): reconcile of 10M equal rows < 10 s, one differing row
# found < 15 s, export faster than COPY TO.  Issue 12: Parquet export at least
# as fast as DuckDB's COPY TO, a Delta refresh after 1% changed rows under a
# tenth of a full export.  Each figure is printed with the load average at
# the time, and appended to $QUERY_BENCH_DIR/results.jsonl.
# QUERY_BENCH_ONLY=delta runs only the data, the replica and the Delta part
# (no PostgreSQL, hashes, reconciles, CSV or Parquet exports, DuckDB);
# QUERY_BENCH_ONLY=parquet only the data, the replica, DuckDB's COPY and the
# Parquet exports (QUERY_BENCH_REPS=3: the best of three of each).
# Data are generated once per row count and kept in $QUERY_BENCH_DIR
# (default /tmp/cdcbench); QUERY_BENCH_KEEP=1 keeps PostgreSQL's data and
# the exported files too.  The typed part needs the test venv (tests/lib/venv.sh:
# duckdb, pyarrow, deltalake from PyPI); QUERY_BENCH_TYPED=0 skips it.
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
ONLY=${QUERY_BENCH_ONLY:-}
D=$DIR/n$N
mkdir -p "$D" && chmod 755 "$DIR" && chmod 777 "$D" # the server writes COPY TO files here

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.${2:-2}f\", $1 }"; }
load() { cut -d' ' -f1 /proc/loadavg; }
PG=$D/pg
cleanup() {
    [ -f "$PG/data/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$PG/data" -m fast stop >/dev/null 2>&1
    [ "${QUERY_BENCH_KEEP:-0}" = 1 ] || rm -rf "$PG" "$D/out.csv" "$D/copy.csv" "$D/typed"
}
trap cleanup EXIT

# The best of REPS runs of a command, in seconds (output to $D/last.out; the
# best run's also to $D/best.out).
# TIMEIT_PREP, when set, is run (not timed) before each run.  A run that
# exits with a status above TIMEIT_MAX_RC (default 0; 1 for the reconcile
# of tables that differ, whose 1 says so) is reported with the end of its
# errors.
timeit() {
    local best= t0 t1 el
    for _ in $(seq "$REPS"); do
        [ -n "${TIMEIT_PREP:-}" ] && eval "$TIMEIT_PREP"
        t0=$(now)
        "$@" > "$D/last.out" 2> "$D/last.err"
        local rc=$?
        t1=$(now)
        [ $rc -gt "${TIMEIT_MAX_RC:-0}" ] && { echo "bench: $* failed with status $rc:" >&2; tail -3 "$D/last.err" >&2; }
        el=$(calc "$t1 - $t0" 3)
        if [ -z "$best" ] || [ "$(calc "$el < $best" 0)" = 1 ]; then best=$el; cp "$D/last.out" "$D/best.out"; fi
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

if [ -z "$ONLY" ]; then
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
copy_t=$t
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
    t=$(TIMEIT_MAX_RC=1 timeit "$CDC" reconcile --db "$D/replica" --table public.bench --source "$CONN" --hash "$algo")
    found=$(cut -f1,2 "$D/last.out" | paste -sd' ')
    report "reconcile, one changed row, $algo" "$t" "found: $found"
done

fi
# ---- Typed exports: Parquet and Delta (issue 12) ----
[ "${QUERY_BENCH_TYPED:-1}" = 1 ] || exit 0
if [ ! -f "$ROOT/tests/lib/venv.sh" ]; then echo "bench: no tests/lib/venv.sh: the typed part is skipped"; exit 0; fi
# shellcheck source=../lib/venv.sh
source "$ROOT/tests/lib/venv.sh"
venv_ensure duckdb pyarrow deltalake || { echo "bench: no duckdb, pyarrow, deltalake: the typed part is skipped"; exit 0; }
T=$D/typed
rm -rf "$T" && mkdir -p "$T"
K=$((N / 100 > 0 ? N / 100 : 1))   # 1% of the rows
GEN=(python3 "$ROOT/tests/query/gen.py")
oneline() { printf '%s' "$1" | tr '\t\n' '  '; }

# The bulk events carry no schemas (schemas.enable=false, NUMERIC as text):
# with the schema in each of ten million envelopes the file would be seven
# times larger (18 GB) and the apply above would measure something else.  The
# replica keeps each column's type from the newest change whose envelope
# had a schema (store/store.c, "Column history"), so one update of row 1
# with the values it already has, as a schemas.enable=true envelope, types
# the table as the first record of a stream with schemas would: id int64,
# status string, amount Decimal(12,2), note string, paid boolean, qty int32.
# It changes no value (the hashes and reconciles above stay valid).
"${GEN[@]}" typed schema "$N" $((N + 1)) $((N + 1)) "$T/schema.jsonl" || exit 1
"$CDC" apply --db "$D/replica" --quiet "$T/schema.jsonl" || exit 1
echo "typed by one envelope with a schema: $("$CDC" get --db "$D/replica" --table public.bench '[1]')"

declare -A duck_t duck_b pq_t pq_b
if [ "$ONLY" != delta ]; then
# DuckDB: bench.csv into an in-memory table with the source's types (the
# load is reported, not compared), then COPY of that table TO a Parquet file,
# with DuckDB's defaults otherwise (every core, row groups of 122,880 rows).
# allow_quoted_nulls=false: "" is the empty string and an empty field NULL,
# as in PostgreSQL's CSV.
"$VENV_PY" - "$D/bench.csv" "$T" "$REPS" > "$T/duck.tsv" 2> "$T/duck.err" <<'PY'
import os, sys, time
import duckdb
csv, out, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = duckdb.connect()
con.execute("CREATE TABLE bench (id BIGINT, status VARCHAR, amount DECIMAL(12,2), note VARCHAR, "
            "paid BOOLEAN, qty INTEGER)")
t0 = time.perf_counter()
con.execute("INSERT INTO bench SELECT * FROM read_csv(?, header = false, allow_quoted_nulls = false, "
            "columns = {'id': 'BIGINT', 'status': 'VARCHAR', 'amount': 'DECIMAL(12,2)', 'note': 'VARCHAR', "
            "'paid': 'BOOLEAN', 'qty': 'INTEGER'})", [csv])
load = time.perf_counter() - t0
threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
print(f"load\t{load:.3f}\t{threads} threads, DuckDB {duckdb.__version__}")
for codec in ("zstd", "snappy"):
    path = f"{out}/duckdb.{codec}.parquet"
    best = None
    for _ in range(reps):
        if os.path.exists(path):
            os.unlink(path)
        t0 = time.perf_counter()
        con.execute(f"COPY bench TO '{path}' (FORMAT parquet, COMPRESSION {codec})")
        el = time.perf_counter() - t0
        best = el if best is None or el < best else best
    print(f"{codec}\t{best:.3f}\t{os.path.getsize(path)}")
PY
[ -s "$T/duck.tsv" ] || { echo "bench: DuckDB failed:" >&2; tail -5 "$T/duck.err" >&2; }
while IFS=$'\t' read -r what sec x; do
    if [ "$what" = load ]; then
        report "DuckDB: load bench.csv into a table (not compared)" "$(calc "$sec")" "$(calc "$N / $sec" 0) rows/s, $x"
    else
        duck_t[$what]=$(calc "$sec"); duck_b[$what]=$x
        report "DuckDB COPY bench TO file (Parquet, $what)" "${duck_t[$what]}" "$(calc "$N / $sec" 0) rows/s, $x bytes"
    fi
done < "$T/duck.tsv"

# The floor of any export: the replica's read alone (cdc_iter_next on two
# threads, split at the middle key as the export splits the table), nothing
# encoded or written (bench/scan_only.c).  What an export can gain on
# DuckDB's COPY, which encodes rows it already holds in memory, ends here.
if make -s -C "$ROOT" bench/out/bin/scan_only >/dev/null 2>&1; then
    t=$(timeit "$ROOT/bench/out/bin/scan_only" "$D/replica" public.bench "[$((N / 2 + 1))]")
    vs=""
    for codec in zstd snappy; do
        [ -n "${duck_t[$codec]:-}" ] && vs="$vs; x$(calc "$t / ${duck_t[$codec]}") DuckDB's COPY ($codec)"
    done
    report "the replica's read alone, 2 threads (floor of an export)" "$t" \
        "$(calc "$N / $t" 0) rows/s, $(sed -n 's/.*"cpu_seconds":\([0-9.]*\).*/\1/p' "$D/best.out") CPU-seconds$vs"
else
    echo "bench: bench/out/bin/scan_only did not build: the read floor is not measured" >&2
fi

# cdcstore export --format parquet of the replica.
for codec in zstd snappy; do
    t=$(timeit "$CDC" export --db "$D/replica" --table public.bench --format parquet --compression "$codec" \
        --output "$T/cdc.$codec.parquet")
    pq_t[$codec]=$t; pq_b[$codec]=$(stat -c %s "$T/cdc.$codec.parquet")
    vs=""
    [ -n "${duck_t[$codec]:-}" ] && vs="; against DuckDB's COPY: time x$(calc "$t / ${duck_t[$codec]}"), size x$(calc "${pq_b[$codec]} / ${duck_b[$codec]}")"
    report "cdcstore export --format parquet ($codec)" "$t" "$(calc "$N / $t" 0) rows/s, ${pq_b[$codec]} bytes$vs"
done
# --output syncs the file before it replaces the old one; DuckDB's COPY TO
# does not sync.  The same export to standard output redirected to a file
# is the like-for-like figure.
# shellcheck disable=SC2016
t=$(timeit sh -c 'exec "$0" export --db "$1" --table public.bench --format parquet > "$2"' \
    "$CDC" "$D/replica" "$T/stdout.parquet")
vs=""
[ -n "${duck_t[zstd]:-}" ] && vs="; against DuckDB's COPY: time x$(calc "$t / ${duck_t[zstd]}")"
report "cdcstore export --format parquet (zstd) > file (no fsync)" "$t" "$(calc "$N / $t" 0) rows/s$vs"
rm -f "$T/stdout.parquet"

# Read back by DuckDB: cdcstore's files against DuckDB's own (loaded from the
# CSV the source was loaded from): the same column types, row count and
# aggregates over every column.
t0=$(now)
chk=$("$VENV_PY" - "$T" "$N" 2>&1 <<'PY'
import sys
import duckdb
t, n = sys.argv[1], int(sys.argv[2])
con = duckdb.connect()
q = ("SELECT count(*), min(id), max(id), sum(hash(status)), sum(amount), count(amount), count(note), "
     "sum(hash(note)), count(*) FILTER (WHERE paid), count(paid), sum(qty) FROM read_parquet(?)")
desc = "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))"
bad = []
for codec in ("zstd", "snappy"):
    mine, ref = f"{t}/cdc.{codec}.parquet", f"{t}/duckdb.{codec}.parquet"
    ta, tb = (con.execute(desc, [f]).fetchall() for f in (mine, ref))
    a, b = (con.execute(q, [f]).fetchone() for f in (mine, ref))
    if ta != tb:
        bad.append(f"{codec}: types {ta} against DuckDB's {tb}")
    if a != b or a[0] != n:
        bad.append(f"{codec}: {a} against DuckDB's {b}")
types = ", ".join(f"{c} {ty}" for c, ty in con.execute(desc, [f"{t}/cdc.zstd.parquet"]).fetchall())
print("MISMATCH " + "; ".join(bad) if bad else
      f"ok: {n} rows, types ({types}) and aggregates of every column equal to DuckDB's files")
PY
)
report "check: the Parquet files read back by DuckDB" "$(calc "$(now) - $t0")" "$(oneline "$chk")"
fi
[ "$ONLY" = parquet ] && exit 0

# Delta, the whole table into a new directory: default --file-rows
# (250,000) and 1,000,000 (larger files, a coarser refresh), and the
# default with --deletion-vectors ("dv": refreshes mark changed rows
# deleted and write them to a new file).
declare -A full_t
FRS=(250000 1000000 dv)
frargs() { case $1 in 250000) ;; dv) echo "--deletion-vectors" ;; *) echo "--file-rows $1" ;; esac; }
frname() { case $1 in dv) echo "file-rows 250000, deletion vectors" ;; *) echo "file-rows $1" ;; esac; }
for fr in "${FRS[@]}"; do
    # shellcheck disable=SC2046
    t=$(TIMEIT_PREP="rm -rf '$T/delta$fr'" timeit "$CDC" export --db "$D/replica" --table public.bench \
        --format delta --output "$T/delta$fr" $(frargs "$fr"))
    full_t[$fr]=$t
    report "cdcstore export --format delta, full, $(frname "$fr")" "$t" \
        "$(calc "$N / $t" 0) rows/s, $(du -sb "$T/delta$fr" | cut -f1) bytes in $(find "$T/delta$fr" -name '*.parquet' | wc -l) files"
done

# deltalake reads DIR: the latest version's row count against the replica's
# (cdcstore hash counts it by another path), its rows whose note starts with
# PREFIX against EXPECT, and version 0 (time travel) against N.  A table
# with deletion vectors is read through deltalake's QueryBuilder (its
# to_pyarrow_dataset refuses the feature).
delta_check() { # DIR PREFIX EXPECT
    local rows
    rows=$("$CDC" hash --db "$D/replica" --table public.bench | cut -f4)
    "$VENV_PY" - "$1" "$2" "$3" "$rows" "$N" 2>&1 <<'PY'
import sys
import duckdb
import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
d, prefix, expect, rows, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
dt = DeltaTable(d)
if "deletionVectors" in (dt.protocol().reader_features or []):
    def q(t, sql, *args):
        return pa.table(QueryBuilder().register("ds", t).execute(sql).read_all()).to_pylist()
    r = q(dt, "SELECT count(*) AS c, count(*) FILTER (WHERE starts_with(note, '%s')) AS m FROM ds"
          % (prefix + " ").replace("'", "''"))[0]
    got, marked = r["c"], r["m"]
    v0 = q(DeltaTable(d, version=0), "SELECT count(*) AS c FROM ds")[0]["c"]
else:
    ds = dt.to_pyarrow_dataset()
    con = duckdb.connect()
    con.register("ds", ds)
    got, marked = con.execute("SELECT count(*), count(*) FILTER (WHERE starts_with(note, ?)) FROM ds",
                              [prefix + " "]).fetchone()
    v0 = DeltaTable(d, version=0).to_pyarrow_dataset().count_rows()
ok = got == rows and marked == expect and v0 == n
print(("ok" if ok else "MISMATCH") + f": version {dt.version()}: {got} rows (replica {rows}), {marked} "
      f"'{prefix}' notes (expected {expect}); version 0: {v0} rows (expected {n})")
PY
}

# An incremental refresh after 1% of the rows changed: updates applied as
# Debezium envelopes (with schemas, higher LSNs), then the same export into
# the same directory.  Each run starts from a hard-linked copy of the table
# as it was before the refresh (a refresh writes new files and links a new
# commit; it never changes a file in place), so REPS > 1 times the same work.
lsn=$((N + 2))
declare -A ref_t
for kind in clustered scattered; do
    "${GEN[@]}" typed "$kind" "$N" "$lsn" "$lsn" "$T/$kind.jsonl" || exit 1
    lsn=$((lsn + K))
    rm -f "$D/replica.done"   # the replica no longer holds bench.csv's rows: built again next run
    t0=$(now)
    "$CDC" apply --db "$D/replica" --quiet "$T/$kind.jsonl" || exit 1
    t=$(calc "$(now) - $t0")
    report "cdcstore apply: 1% of the rows updated, $kind (with schemas)" "$t" "$K events, $(calc "$K / $t" 0) records/s"
    # Settled as before the full exports, so that a refresh is timed on the
    # same kind of replica (otherwise its open replays the apply's log).
    t0=$(now)
    "$CDC" apply --db "$D/replica" --quiet /dev/null || exit 1
    report "settle the replica after the $kind change (as before the full exports)" "$(calc "$(now) - $t0")"
    for fr in "${FRS[@]}"; do
        rm -rf "$T/base$fr" && cp -al "$T/delta$fr" "$T/base$fr"
        # shellcheck disable=SC2046
        t=$(TIMEIT_PREP="rm -rf '$T/delta$fr' && cp -al '$T/base$fr' '$T/delta$fr'" timeit "$CDC" export \
            --db "$D/replica" --table public.bench --format delta --output "$T/delta$fr" $(frargs "$fr"))
        ref_t[$kind$fr]=$t
        what=$(sed -n -e 's/.* rows; \(.*\) kept.*/\1 kept/p' -e 's/.* rows; \(.*\) unchanged.*/\1 unchanged/p' \
            "$D/last.out")
        report "cdcstore export --format delta, refresh after 1% $kind, $(frname "$fr")" "$t" \
            "x$(calc "$t / ${full_t[$fr]}" 3) of the full export; ${what:-$(oneline "$(cat "$D/last.out")")}"
        t0=$(now)
        chk=$(delta_check "$T/delta$fr" "$kind" "$K")
        report "check: the Delta table read by deltalake after the $kind refresh, $(frname "$fr")" \
            "$(calc "$(now) - $t0")" "$(oneline "$chk")"
    done
done

# ---- Issue 12's goals ----
echo
echo "issue 12 on $N rows (load $(load)):"
for codec in zstd snappy; do
    [ -n "${duck_t[$codec]:-}" ] || continue
    v="NOT met"; [ "$(calc "${pq_t[$codec]} <= ${duck_t[$codec]}" 0)" = 1 ] && v=met
    printf '  Parquet, %s: cdcstore export %s s, %s bytes; DuckDB COPY TO %s s, %s bytes: %s (goal: as fast)\n' \
        "$codec" "${pq_t[$codec]}" "${pq_b[$codec]}" "${duck_t[$codec]}" "${duck_b[$codec]}" "$v"
done
[ -n "${copy_t:-}" ] && printf '  CSV: cdcstore export %s bytes; PostgreSQL COPY TO %s s, %s bytes\n' "$bytes" "$copy_t" "$cbytes"
for kind in clustered scattered; do
    for fr in "${FRS[@]}"; do
        r=$(calc "${ref_t[$kind$fr]} / ${full_t[$fr]}" 3)
        v="NOT met"; [ "$(calc "$r < 0.1" 0)" = 1 ] && v=met
        printf '  Delta refresh after 1%% %s, %s: %s s against %s s full, x%s: %s (goal < 0.1)\n' \
            "$kind" "$(frname "$fr")" "${ref_t[$kind$fr]}" "${full_t[$fr]}" "$r" "$v"
    done
done
