#!/usr/bin/env bash
# bench/run.sh: the benchmark of issue 5 (`make bench` runs it).
#
# Generates one seeded Debezium stream (bench/gen.py), then applies it with every system, one at a
# time (never two benchmarks at once: the machine has 2 cores): cdcstore itself, the design
# document's apply_batch procedure on a PostgreSQL 15 started here, SQLite, Spark + Delta, and the
# two limits (cJSON decoding only, RocksDB blind writes). Each system's final state is compared with
# the expected CSV before its figure counts. The shapes step does the same for cdcstore, SQLite and
# PostgreSQL on three row shapes (3, 6 and 30 columns) side by side. Writes bench/RESULTS.md and
# bench/throughput.png.
#
# Environment (all optional):
#   BENCH_EVENTS (1000000)  BENCH_KEYS (100000)  BENCH_ROW_WIDTH (100)  BENCH_SEED (42)
#   BENCH_BATCHES ("1000 10000 100000")
#   BENCH_SPARK (1; 0 skips Spark + Delta, reported as missing)
#   BENCH_SPARK_BUDGET (300: seconds of applying per batch size before Spark is stopped)
#   BENCH_PG_PORT (55499)   BENCH_BUILD (1: run `make all` when build/cdcstore is missing)
#   BENCH_STEPS ("cdcstore limits sqlite postgres spark e2e latency query tables shapes backlog": the parts to run;
#               a subset keeps the last run's records of the other parts, so one part can be measured
#               again, and the sections of bench/RESULTS.md that it does not measure)
#   BENCH_TABLES ("200 1000": table counts of the tables step, issue 10)  BENCH_TABLES_REPEAT (3)
#   BENCH_SHAPES ("narrow medium wide": the row shapes of the shapes step, bench/gen.py --shape: a
#                 3-column table, public.items, and 30 columns of about 1 KB; each a stream of
#                 BENCH_EVENTS over BENCH_KEYS, applied at batches of 10,000 by cdcstore, by SQLite's
#                 guarded upsert from preloaded lines (json1) and by the apply_batch MERGE on
#                 PostgreSQL (port BENCH_PG_PORT), each verified against its expected CSV; RESULTS.md's
#                 "Row shapes" section: the ratios, events per CPU-second, peak RSS, goals per shape)
#   BENCH_SYNC (1: also `cdcstore apply --sync`, fsync every batch, as PostgreSQL commits do)
#   BENCH_E2E (1: end-to-end latency through Kafka with tests/e2e/run.sh scenario 1, when present)
#   BENCH_E2E_PORT_BASE (57432: its PostgreSQL; Kafka, controller and Connect on the next three;
#                        moved up by 10 while any of the four is taken)
#   BENCH_LATENCY_RATE (1300: changegen statements/s, about 1,050 row changes/s)
#   BENCH_LATENCY_SECS (45: the measured window)   BENCH_LATENCY_REPEAT (2: runs of each configuration)
#   the latency step (bench/latency.sh: the connector and ingest settings side by side) runs on the
#   stack that the STACK_* variables name (tests/stack/stack.sh's defaults when unset), started
#   when not running and then stopped again; it deletes that stack's connectors and recreates
#   its database
#   BENCH_QUERY_ROWS (10000000: rows of the query shim's timings, tests/query/bench.sh: hash,
#                     reconcile equal and with one changed row, export against COPY TO; Parquet
#                     export against DuckDB's COPY TO, Delta export and its refresh after 1% changed
#                     rows, with duckdb, pyarrow and deltalake from PyPI in the test venv)
#   BENCH_PROFILE (1: perf profile of cdcstore at batches of 10,000 when perf exists)
#   the backlog step (bench/backlog.sh): `cdcstore ingest` draining the stream from a Kafka topic of
#   BENCH_BACKLOG_PARTITIONS (4) partitions against `cdcstore apply` of the file at batches of
#   10,000, BENCH_BACKLOG_REPEAT (3) times interleaved; then a whole schema the same way:
#   BENCH_BACKLOG_TABLES (1000; 0 skips it) topics of one partition, BENCH_BACKLOG_TABLE_ROWS (1000)
#   rows each (bench/gen_tables.py), taken by --topic-regex; Kafka alone from tests/stack/stack.sh, on the
#   STACK_* variables when set, else a stack of its own (ports 56432, 56492-56493, 56483), stopped after
#   when started there
#   BENCH_OUT (bench/out)   BENCH_RESULTS (bench/RESULTS.md)   BENCH_PNG (bench/throughput.png)
#   BENCH_CDC (build/cdcstore: the cdcstore binary measured)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

EVENTS=${BENCH_EVENTS:-1000000}
KEYS=${BENCH_KEYS:-100000}
ROW_WIDTH=${BENCH_ROW_WIDTH:-100}
SEED=${BENCH_SEED:-42}
BATCHES=${BENCH_BATCHES:-"1000 10000 100000"}
SPARK=${BENCH_SPARK:-1}
SPARK_BUDGET=${BENCH_SPARK_BUDGET:-300}
PG_PORT=${BENCH_PG_PORT:-55499}
BUILD=${BENCH_BUILD:-1}
SYNC=${BENCH_SYNC:-1}
STEPS=${BENCH_STEPS:-"cdcstore limits sqlite postgres spark e2e latency query tables shapes backlog"}   # keep the order of ALL_STEPS
SHAPES=${BENCH_SHAPES:-"narrow medium wide"}
E2E=${BENCH_E2E:-1}
E2E_PORT_BASE=${BENCH_E2E_PORT_BASE:-57432}
E2E_TIMEOUT=${BENCH_E2E_TIMEOUT:-1500}
PROFILE=${BENCH_PROFILE:-1}
OUT=${BENCH_OUT:-bench/out}
RESULTS_MD=${BENCH_RESULTS:-bench/RESULTS.md}
PNG=${BENCH_PNG:-bench/throughput.png}
CDC=${BENCH_CDC:-build/cdcstore}   # the binary measured (a copy of it is taken)
VENV=.cache/bench-venv
DELTA_SPEC="delta-spark==4.4.0"   # pulls pyspark 4.2; its jars (delta-spark_4.2_2.13) are on Maven Central

mkdir -p "$OUT/logs" "$OUT/scratch"
RES="$OUT/results.jsonl"
CMDS="$OUT/commands.txt"
ALL_STEPS="cdcstore limits sqlite postgres spark e2e latency query tables shapes backlog"
if [ "$STEPS" = "$ALL_STEPS" ] || [ ! -f "$RES" ]; then
    [ -f "$RES" ] && mv "$RES" "$RES.prev"
    : > "$RES"
    : > "$CMDS"
    # A partial run without the last run's records: RESULTS.md keeps the other sections.
    [ "$STEPS" = "$ALL_STEPS" ] ||
        printf '# %s: again with BENCH_STEPS="%s"\n' "$(date -u '+%H:%M UTC')" "$STEPS" >> "$CMDS"
else
    # A partial run redoes some steps of the last run: their old records go, the others stay.
    cp "$RES" "$RES.prev"
    python3 - "$RES" "$STEPS" <<'EOF'
import json, sys
path, steps = sys.argv[1], sys.argv[2].split()
owner = {"cdcstore": "cdcstore", "cdcstore-sync": "cdcstore", "decode-only-1t": "limits",
         "decode-only-2t": "limits", "rocksdb-raw": "limits", "sqlite-json1": "sqlite",
         "sqlite-python": "sqlite", "postgres": "postgres", "cdcstore-reconcile": "postgres",
         "spark-delta": "spark", "e2e-latency": "e2e", "latency": "latency", "query": "query",
         "tables": "tables", "shape-cdcstore": "shapes", "shape-sqlite": "shapes",
         "shape-postgres": "shapes"}
owner["backlog"] = "backlog"
rows = [l for l in open(path) if l.strip()]
keep = [l for l in rows if owner.get(json.loads(l).get("peer")) not in steps]
open(path, "w").write("".join(keep))
EOF
    printf '# %s: again with BENCH_STEPS="%s"\n' "$(date -u '+%H:%M UTC')" "$STEPS" >> "$CMDS"
fi
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
if [ "$STEPS" = "$ALL_STEPS" ] || [ ! -f "$OUT/started.txt" ]; then
    echo "$STARTED" > "$OUT/started.txt"
else
    STARTED="$(cat "$OUT/started.txt") (partly again from $STARTED)"
fi

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# A failed record for a step that died before writing its own (of the row shape STEP_SHAPE, if set).
STEP_SHAPE=""
record_failure() { # peer batch reason
    python3 - "$RES" "$1" "$2" "$3" "$STEP_SHAPE" <<'EOF'
import json, sys
path, peer, batch, why, shape = sys.argv[1:]
rec = {"peer": peer, "batch": int(batch), "status": "failed", "verified": "not run",
       "note": why[-400:]}
if shape:
    rec["shape"] = shape
with open(path, "a") as f:
    f.write(json.dumps(rec) + "\n")
EOF
}

# run_step PEER BATCH LOG CMD...: record the command, run it, make sure a result exists.
run_step() {
    local peer=$1 batch=$2 log=$3; shift 3
    printf '%s\n' "$*" >> "$CMDS"
    local before after rc
    before=$(wc -l < "$RES")
    say "$peer batch=$batch: $*"
    "$@" >> "$log" 2>&1
    rc=$?
    after=$(wc -l < "$RES")
    if [ "$after" -eq "$before" ]; then
        record_failure "$peer" "$batch" "exit $rc without a result; see $log: $(tail -c 300 "$log" | tr '\n' ' ')"
    fi
    tail -n $((after - before)) "$RES" >&2
}

# ---- prerequisites ----
need_pkgs=""
command -v psql >/dev/null || need_pkgs="$need_pkgs postgresql-client-15"
[ -x /usr/lib/postgresql/15/bin/initdb ] || command -v initdb >/dev/null || need_pkgs="$need_pkgs postgresql-15"
command -v gnuplot >/dev/null || need_pkgs="$need_pkgs gnuplot-nox"
[ -x /usr/bin/time ] || need_pkgs="$need_pkgs time"
[ -f /usr/include/cjson/cJSON.h ] || need_pkgs="$need_pkgs libcjson-dev"
[ -f /usr/include/rocksdb/c.h ] || need_pkgs="$need_pkgs librocksdb-dev"
if [ -n "$need_pkgs" ]; then
    if [ "$(id -u)" = 0 ]; then
        say "installing:$need_pkgs"
        (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $need_pkgs) \
            > "$OUT/logs/apt.log" 2>&1 || say "apt-get failed, see $OUT/logs/apt.log"
    else
        say "missing packages:$need_pkgs (run as root or install them)"
    fi
fi

# gen_data META LOG CMD...: run the generator CMD unless META is there and newer than gen.py.
gen_data() {
    local meta=$1 log=$2; shift 2
    mkdir -p "$(dirname "$meta")"
    printf '%s\n' "$*" >> "$CMDS"
    if [ ! -s "$meta" ] || [ bench/gen.py -nt "$meta" ]; then
        say "generating: $*"
        rm -f "$meta"
        "$@" 2> "$log" || { say "generator failed"; cat "$log" >&2; rm -f "$meta"; return 1; }
    else
        say "reusing $(dirname "$meta")"
    fi
}

# ---- data ----
DATA="$OUT/data/e$EVENTS-k$KEYS-w$ROW_WIDTH-s$SEED"
EV="$DATA/events.jsonl"
EXP="$DATA/expected.csv"
META="$DATA/meta.json"
GEN_CMD=(python3 bench/gen.py --events "$EVENTS" --keys "$KEYS" --row-width "$ROW_WIDTH"
         --seed "$SEED" --out "$EV" --expected "$EXP" --meta "$META")
# Only the throughput steps read the generated stream.
NEED_DATA=0
for s in cdcstore limits sqlite postgres spark backlog; do
    case " $STEPS " in *" $s "*) NEED_DATA=1 ;; esac
done
if [ "$NEED_DATA" = 0 ]; then
    say "no throughput step: the event stream is not generated"
else
    gen_data "$META" "$OUT/logs/gen.log" "${GEN_CMD[@]}" || exit 1
fi   # NEED_DATA

# ---- builds ----
# through the main Makefile, which includes bench/bench.mk: scan_only links the library as the
# command does ($(BUILD), EXE_LDLIBS, CLI_ALLOC are the main Makefile's)
make -s bench-tools BENCH_OUT="$OUT" > "$OUT/logs/tools.log" 2>&1 \
    || say "building the limit programs failed, see $OUT/logs/tools.log"
if [ "$BUILD" = 1 ] && [ -f Makefile ]; then
    say "make all (for $CDC)"
    make -s all > "$OUT/logs/make-all.log" 2>&1 || say "make all failed, see $OUT/logs/make-all.log"
fi

SCR="$OUT/scratch"
KEEP="$SCR/cdcstore-kept"
PROFILE_TXT=""
want() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
# A path for scripts that run elsewhere: BENCH_OUT may be relative to the tree or absolute.
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
# Measure a copy: other work may rebuild build/cdcstore while the benchmark runs.
CDC_SRC=$CDC
if [ -x "$CDC_SRC" ]; then
    mkdir -p "$OUT/bin"
    cp "$CDC_SRC" "$OUT/bin/cdcstore" && CDC="$OUT/bin/cdcstore"
    printf '# cdcstore: copy of %s, built %s, at commit %s\n' "$CDC_SRC" \
        "$(date -u -r "$CDC_SRC" '+%Y-%m-%d %H:%M UTC')" "$(git rev-parse --short HEAD 2>/dev/null)" >> "$CMDS"
fi
# ---- cdcstore ----
if want cdcstore; then
KEEP_BATCH=$(for b in $BATCHES; do echo "$b"; done | grep -x 10000 || echo "$BATCHES" | awk '{print $NF}')
rm -rf "$KEEP"
for b in $BATCHES; do
    keep=(); [ "$b" = "$KEEP_BATCH" ] && keep=(--keep "$KEEP")
    run_step cdcstore "$b" "$OUT/logs/cdcstore.log" \
        python3 bench/peer_cmd.py cdcstore --bin "$CDC" --events "$EV" --expected "$EXP" \
        --batch "$b" --db "$SCR/cdcstore-db" "${keep[@]}" --results "$RES"
done
if [ "$SYNC" = 1 ]; then
    for b in $BATCHES; do
        run_step cdcstore-sync "$b" "$OUT/logs/cdcstore.log" \
            python3 bench/peer_cmd.py cdcstore --sync --bin "$CDC" --events "$EV" --expected "$EXP" \
            --batch "$b" --db "$SCR/cdcstore-db" --results "$RES"
    done
fi
if [ "$PROFILE" = 1 ] && [ -x "$CDC" ] && command -v perf >/dev/null \
   && grep -q '"peer": "cdcstore".*"status": "ok"' "$RES"; then
    say "perf profile of cdcstore (batches of 10,000)"
    rm -rf "$SCR/cdcstore-prof"
    printf '%s\n' "perf record -g -o $OUT/perf.data $CDC apply --db $SCR/cdcstore-prof --batch-size 10000 $EV" >> "$CMDS"
    if perf record -g -o "$OUT/perf.data" "$CDC" apply --db "$SCR/cdcstore-prof" --batch-size 10000 "$EV" \
            > "$OUT/logs/perf.log" 2>&1; then
        {
            echo "# share of samples per library"
            perf report -i "$OUT/perf.data" --stdio --no-children -g none --sort dso 2>/dev/null \
                | grep -v -e '^$' -e '^#' | sed 's/ *$//' | awk '$1+0 >= 0.5' | head -12
            echo "# hottest functions"
            perf report -i "$OUT/perf.data" --stdio --no-children -g none --percent-limit 1 2>/dev/null \
                | grep -v -e '^$' -e '^#' | sed 's/ *$//' | head -40
        } > "$OUT/profile.txt"
        PROFILE_TXT="$OUT/profile.txt"
    fi
    rm -rf "$SCR/cdcstore-prof"
fi
fi   # cdcstore

# ---- limits ----
if want limits; then
for t in 1 2; do
    run_step "decode-only-${t}t" 0 "$OUT/logs/limits.log" \
        python3 bench/peer_cmd.py decode --bin "$OUT/bin/decode_only" --events "$EV" --threads "$t" --results "$RES"
done
run_step rocksdb-raw 0 "$OUT/logs/limits.log" \
    python3 bench/peer_cmd.py rocksdb --bin "$OUT/bin/rocksdb_raw" --events "$EV" --db "$SCR/rocksdb-raw" --results "$RES"
fi   # limits

# ---- SQLite ----
if want sqlite; then
for mode in json1 python; do
    for b in $BATCHES; do
        run_step "sqlite-$mode" "$b" "$OUT/logs/sqlite.log" \
            python3 bench/peer_sqlite.py --events "$EV" --expected "$EXP" --batch "$b" \
            --decode "$mode" --db "$SCR/sqlite.db" --results "$RES"
    done
done
rm -f "$SCR"/sqlite.db*
fi   # sqlite

# ---- PostgreSQL ----
if want postgres; then
PG_ARGS=()
for b in $BATCHES; do PG_ARGS+=(--batch "$b"); done
# The source table for `cdcstore reconcile` lives in the same throwaway cluster.
[ -d "$KEEP" ] && PG_ARGS+=(--reconcile-bin "$CDC" --reconcile-db "$KEEP")
run_step postgres "$(echo "$BATCHES" | awk '{print $1}')" "$OUT/logs/postgres.log" \
    python3 bench/peer_pg.py --events "$EV" --expected "$EXP" "${PG_ARGS[@]}" --port "$PG_PORT" \
    --workdir "$SCR" --results "$RES"
rm -rf "$KEEP"
fi   # postgres

# ---- Spark + Delta ----
if want spark; then
spark_missing() {
    for b in $BATCHES; do
        python3 - "$RES" "$b" "$1" <<'EOF'
import json, sys
path, batch, why = sys.argv[1:]
with open(path, "a") as f:
    f.write(json.dumps({"peer": "spark-delta", "batch": int(batch), "status": "missing",
                        "verified": "not run", "note": why}) + "\n")
EOF
    done
}
if [ "$SPARK" != 1 ]; then
    spark_missing "skipped (BENCH_SPARK=$SPARK)"
elif ! command -v java >/dev/null; then
    spark_missing "no java on PATH"
else
    if ! "$VENV/bin/python" -c 'import delta, pyspark' 2>/dev/null; then
        say "installing $DELTA_SPEC into $VENV"
        printf '%s\n' "python3 -m venv $VENV && $VENV/bin/pip install '$DELTA_SPEC'" >> "$CMDS"
        (python3 -m venv "$VENV" && "$VENV/bin/pip" install -q "$DELTA_SPEC") > "$OUT/logs/venv.log" 2>&1
    fi
    if "$VENV/bin/python" -c 'import delta, pyspark' 2>/dev/null; then
        for b in $BATCHES; do
            run_step spark-delta "$b" "$OUT/logs/spark.log" \
                timeout $((SPARK_BUDGET * 2 + 600)) "$VENV/bin/python" bench/peer_spark.py \
                --events "$EV" --expected "$EXP" --batch "$b" --workdir "$SCR/spark" \
                --budget "$SPARK_BUDGET" --results "$RES"
        done
        rm -rf "$SCR/spark"
    else
        spark_missing "pip install $DELTA_SPEC failed: $(tail -c 200 "$OUT/logs/venv.log" | tr '\n' ' ')"
    fi
fi
fi   # spark

# ---- end-to-end latency through Kafka ----
if want e2e; then
# First base from E2E_PORT_BASE whose four ports are all free (another stack may be running).
free_ports() {
    python3 - "$1" <<'EOF'
import socket, sys
base = int(sys.argv[1])
for p in range(base, base + 4):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        sys.exit(1)
    finally:
        s.close()
EOF
}
for _ in 1 2 3 4 5 6 7 8 9 10; do
    free_ports "$E2E_PORT_BASE" && break
    E2E_PORT_BASE=$((E2E_PORT_BASE + 10))
done
# The pipeline's own suite (tests/e2e/run.sh, scenario 1: snapshot, then a steady changegen load
# whose apply time minus source.ts_ms is measured) on a stack of its own (ports and directory
# apart from any stack already running), with the same cdcstore binary.
if [ "$E2E" = 1 ] && [ -f tests/e2e/run.sh ] && [ -x "$CDC_SRC" ]; then
    E2E_ENV=(E2E_ONLY=1 E2E_WORK="$(abspath "$OUT")/e2e-work" STACK_DIR="$(abspath "$OUT")/stack"
             STACK_PG_PORT="$E2E_PORT_BASE" STACK_KAFKA_PORT=$((E2E_PORT_BASE + 1))
             STACK_KAFKA_CONTROLLER_PORT=$((E2E_PORT_BASE + 2)) STACK_CONNECT_PORT=$((E2E_PORT_BASE + 3))
             CDCSTORE="$(abspath "$CDC_SRC")")   # the suite is written against the tree's build, not the copy
    printf '%s\n' "env ${E2E_ENV[*]} timeout $E2E_TIMEOUT bash tests/e2e/run.sh" >> "$CMDS"
    say "end-to-end latency: tests/e2e/run.sh scenario 1 on its own stack (ports $E2E_PORT_BASE-$((E2E_PORT_BASE + 3)))"
    rm -rf "$OUT/e2e-work" "$OUT/stack"
    env "${E2E_ENV[@]}" timeout "$E2E_TIMEOUT" bash tests/e2e/run.sh > "$OUT/logs/e2e.log" 2>&1
    e2e_rc=$?
    python3 - "$RES" "$OUT/logs/e2e.log" "$e2e_rc" <<'EOF'
import json, re, sys
path, log, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(log, errors="replace").read().splitlines()
lat = [l.lstrip("# ").strip() for l in lines if "end-to-end latency (apply time" in l]
stages = [l.lstrip("# ").strip() for l in lines if l.lstrip("# ").startswith("stages over")]
tally = [l.strip() for l in lines if re.search(r"\d+ passed, \d+ failed", l)]
rec = {"peer": "e2e-latency", "batch": -1, "exit": rc}
m = re.search(r"p50 (\d+) ms, p99 (\d+) ms", lat[-1]) if lat else None
if m:
    rec.update(status="ok", p50_ms=int(m.group(1)), p99_ms=int(m.group(2)),
               verified=tally[-1] if tally else f"exit {rc}", note=lat[-1],
               stages=stages[-1] if stages else "")
else:
    rec.update(status="failed", verified=tally[-1] if tally else f"exit {rc}",
               note="no latency line; last output: " + " | ".join(lines[-5:])[-400:])
with open(path, "a") as f:
    f.write(json.dumps(rec) + "\n")
print(json.dumps(rec))
EOF
    rm -rf "$OUT/stack"
fi
fi   # e2e

# ---- the latency settings side by side (bench/latency.sh) ----
if want latency; then
if [ -x "$CDC_SRC" ] && [ -f bench/latency.sh ]; then
    # The stack before it was tuned for latency (Debezium's poll.interval.ms default, cdcstore
    # ingest's former 100 ms batches, PostgreSQL with synchronous_commit=off), the recommended
    # connector and ingest settings on such an asynchronously committing source, and the stack's
    # defaults now (the recommendation whole).
    LAT_ARGS=(--rate "${BENCH_LATENCY_RATE:-1300}" --seconds "${BENCH_LATENCY_SECS:-45}"
              --repeat "${BENCH_LATENCY_REPEAT:-2}" --results "$(abspath "$RES")"
              --config "before: poll.interval.ms=500 ingest:--batch-max-ms=100 postgres:synchronous_commit=off"
              --config "recommended connector and ingest, source synchronous_commit=off: postgres:synchronous_commit=off"
              --config "recommended (stack defaults):")
    printf '%s\n' "env LAT_WORK=$(abspath "$OUT")/latency-work CDCSTORE=$(abspath "$CDC_SRC") bash bench/latency.sh ${LAT_ARGS[*]@Q}" >> "$CMDS"
    say "latency settings side by side: bench/latency.sh (stack ${STACK_DIR:-.stack}, PostgreSQL port ${STACK_PG_PORT:-55432})"
    rm -rf "$OUT/latency-work"
    before=$(wc -l < "$RES")
    env LAT_WORK="$(abspath "$OUT")/latency-work" CDCSTORE="$(abspath "$CDC_SRC")" \
        timeout "${BENCH_LATENCY_TIMEOUT:-1800}" bash bench/latency.sh "${LAT_ARGS[@]}" > "$OUT/logs/latency.log" 2>&1
    lat_rc=$?
    tail -n 6 "$OUT/logs/latency.log" >&2
    if [ "$(wc -l < "$RES")" -eq "$before" ]; then
        python3 - "$RES" "$lat_rc" "$OUT/logs/latency.log" <<'EOF'
import json, sys
path, rc, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tail = open(log, errors="replace").read().splitlines()[-5:]
with open(path, "a") as f:
    f.write(json.dumps({"peer": "latency", "batch": -1, "status": "failed", "config": "–",
                        "note": f"exit {rc}: " + " | ".join(tail)[-400:]}) + "\n")
EOF
    fi
fi
fi   # latency

# ---- the query shim on BENCH_QUERY_ROWS rows (issue 4's figures) ----
if want query; then
QROWS=${BENCH_QUERY_ROWS:-10000000}
QDIR="$(abspath "$OUT")/query"
QCDC="$(abspath "$CDC")"
printf '%s\n' "env QUERY_BENCH_ROWS=$QROWS QUERY_BENCH_DIR=$QDIR CDCSTORE=$QCDC bash tests/query/bench.sh" >> "$CMDS"
say "query shim on $QROWS rows: tests/query/bench.sh"
rm -f "$QDIR/results.jsonl"
env QUERY_BENCH_ROWS="$QROWS" QUERY_BENCH_DIR="$QDIR" CDCSTORE="$QCDC" \
    bash tests/query/bench.sh > "$OUT/logs/query.log" 2>&1
q_rc=$?
python3 - "$RES" "$QDIR/results.jsonl" "$q_rc" "$OUT/logs/query.log" <<'EOF'
import json, os, sys
path, qres, rc, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
recs = []
if os.path.exists(qres):
    for l in open(qres):
        if l.strip():
            r = json.loads(l)
            r["peer"] = "query"
            r["batch"] = -1
            recs.append(r)
if not recs:
    tail = open(log, errors="replace").read().splitlines()[-5:]
    recs.append({"peer": "query", "batch": -1, "status": "failed",
                 "note": f"exit {rc}: " + " | ".join(tail)[-400:]})
with open(path, "a") as f:
    for r in recs:
        f.write(json.dumps(r) + "\n")
print(f"{len(recs)} query records")
EOF
rm -rf "$QDIR/n$QROWS/replica" "$QDIR/n$QROWS/replica.done"   # the generated data stay for the next run
fi   # query

# ---- the cost of a table: a whole schema of small tables (issue 10) ----
if want tables; then
TARGS=()
for n in ${BENCH_TABLES:-200 1000}; do TARGS+=(--tables "$n"); done
run_step tables -1 "$OUT/logs/tables.log" \
    python3 bench/peer_tables.py --bin "$CDC" "${TARGS[@]}" --repeat "${BENCH_TABLES_REPEAT:-3}" \
    --workdir "$SCR/tables" --results "$RES"
rm -rf "$SCR/tables"
fi   # tables

# ---- row shapes: narrow, medium (public.items) and wide side by side, batches of 10,000 ----
if want shapes; then
for shape in $SHAPES; do
    if [ "$shape" = medium ]; then
        sdir=$DATA   # the same bytes as the throughput steps' stream: generated once
        sgen=("${GEN_CMD[@]}")
    else
        sdir="$OUT/data/$shape-e$EVENTS-k$KEYS-w$ROW_WIDTH-s$SEED"
        sgen=(python3 bench/gen.py --shape "$shape" --events "$EVENTS" --keys "$KEYS"
              --row-width "$ROW_WIDTH" --seed "$SEED" --out "$sdir/events.jsonl"
              --expected "$sdir/expected.csv" --meta "$sdir/meta.json")
    fi
    STEP_SHAPE=$shape
    if ! gen_data "$sdir/meta.json" "$OUT/logs/gen-$shape.log" "${sgen[@]}"; then
        for peer in shape-cdcstore shape-sqlite shape-postgres; do
            record_failure "$peer" 10000 "bench/gen.py --shape $shape failed, see $OUT/logs/gen-$shape.log"
        done
        STEP_SHAPE=""
        continue
    fi
    sev="$sdir/events.jsonl"
    sexp="$sdir/expected.csv"
    run_step shape-cdcstore 10000 "$OUT/logs/shapes.log" \
        python3 bench/peer_cmd.py cdcstore --shape "$shape" --bin "$CDC" --events "$sev" \
        --expected "$sexp" --batch 10000 --db "$SCR/shape-cdcstore-db" --results "$RES"
    run_step shape-sqlite 10000 "$OUT/logs/shapes.log" \
        python3 bench/peer_sqlite.py --shape "$shape" --preload --events "$sev" --expected "$sexp" \
        --batch 10000 --db "$SCR/shape-sqlite.db" --results "$RES"
    rm -f "$SCR"/shape-sqlite.db*
    run_step shape-postgres 10000 "$OUT/logs/shapes.log" \
        python3 bench/peer_pg.py --shape "$shape" --events "$sev" --expected "$sexp" --batch 10000 \
        --port "$PG_PORT" --workdir "$SCR" --results "$RES"
    STEP_SHAPE=""
done
fi   # shapes

# ---- a Kafka backlog: cdcstore ingest against cdcstore apply of the same file ----
if want backlog; then
run_step backlog -1 "$OUT/logs/backlog.log" \
    timeout "${BENCH_BACKLOG_TIMEOUT:-1800}" bash bench/backlog.sh --bin "$(abspath "$CDC")" \
    --produce "$(abspath "$OUT")/bin/produce" --events "$(abspath "$EV")" --expected "$(abspath "$EXP")" \
    --partitions "${BENCH_BACKLOG_PARTITIONS:-4}" --repeat "${BENCH_BACKLOG_REPEAT:-3}" --batch 10000 \
    --tables "${BENCH_BACKLOG_TABLES:-1000}" --table-rows "${BENCH_BACKLOG_TABLE_ROWS:-1000}" \
    --workdir "$(abspath "$SCR")/backlog" --results "$(abspath "$RES")"
rm -rf "$SCR/backlog"
fi   # backlog

# ---- report ----
# A partial run without the cdcstore step keeps the last profile.
if [ -z "$PROFILE_TXT" ] && ! want cdcstore && [ -s "$OUT/profile.txt" ]; then
    PROFILE_TXT="$OUT/profile.txt"
fi
printf '%s\n' "python3 bench/report.py ..." >> "$CMDS"
MERGE=()
[ "$STEPS" = "$ALL_STEPS" ] || MERGE=(--merge)   # a partial run keeps the sections it did not measure
SHAPE_META=()   # the streams of the row shapes (kept records of an earlier run included)
for shape in $SHAPES; do
    if [ "$shape" = medium ]; then SHAPE_META+=(--shape-meta "medium=$META")
    else SHAPE_META+=(--shape-meta "$shape=$OUT/data/$shape-e$EVENTS-k$KEYS-w$ROW_WIDTH-s$SEED/meta.json"); fi
done
python3 bench/report.py --results "$RES" --meta "$META" --commands "$CMDS" \
    --batches "$(echo $BATCHES | tr ' ' ',')" --out "$RESULTS_MD" --png "$PNG" \
    --workdir "$OUT" --started "$STARTED" ${PROFILE_TXT:+--profile "$PROFILE_TXT"} \
    "${SHAPE_META[@]}" "${MERGE[@]}"
say "done: $RESULTS_MD"
