#!/usr/bin/env bash
# tests/e2e/run.sh: end-to-end tests of cdcstore on the real pipeline
# PostgreSQL 15 -> Debezium 3.6.1 (Kafka Connect 4.3) -> Kafka 4.3 ->
# `cdcstore ingest`, the stack of tests/stack/ (started here, stopped at the
# end unless E2E_KEEP_STACK=1). `make test-e2e` runs it.
#
# Scenarios (issues 3 and 10), each ending with `cdcstore reconcile` finding
# every table of the replica equal to its source (in 9, but for two known
# differences of Debezium's, each checked for exactly what it is):
#   1  initial snapshot plus streaming under a steady changegen load, with
#      transactions open while the snapshot runs that commit after it (the
#      snapshot handover: a streamed change with an LSN below its snapshot's);
#      then a steady-load window where the end-to-end latency is measured
#   2  `cdcstore ingest` killed with SIGKILL three times under load (in the
#      middle of filling or applying a batch) and restarted
#   3  Kafka Connect stopped (SIGTERM) for a while with the generator
#      running, then started again
#   4  a full replay of the topics from the beginning into the populated
#      replica (new group, --from-beginning): 0 applied, `export --meta` and
#      the applied counter unchanged
#   5  the connector deleted (offsets reset, slot dropped), changes (deletes
#      included) while no slot exists, registered again: a new snapshot into
#      the populated replica; the rows deleted in the gap disappear
#   6  REPLICA IDENTITY DEFAULT: updates that leave a TOASTed column unchanged
#      (Debezium's placeholder) keep the stored value
#   7  two `cdcstore ingest` processes in one group on topics of 4 partitions,
#      each with its own replica: each replica equals the source restricted to
#      the partitions it owns, and together they cover the source
#   8  an ad hoc incremental snapshot (Debezium signal table) of the four
#      tables under a changegen load, connector without initial snapshot
#      (snapshot.mode=no_data), a transaction updating orders 30001-30003
#      open from before the signal until their reads are on the topic: the
#      read carries the old row, the commit an LSN below the read's window
#   9  a table of every common type (integers at their limits, float4/8 with
#      NaN and the infinities, numeric with and without scale, awkward text,
#      bytea, uuid, json/jsonb, date/time/timestamp/timestamptz, boolean,
#      int[] and text[], NULLs, a composite key), snapshotted, then inserted,
#      updated and deleted while streaming: `cdcstore export` as CSV, loaded
#      with COPY into a table of the same definition, equals the source
#  10  schema changes under load (ADD COLUMN with a default, int4 -> int8,
#      DROP COLUMN, RENAME COLUMN), twice: 10a without schemas, 10b with;
#      export and reconcile differ from the source exactly in the rows
#      untouched since (a column of unknown value); in 10b a narrowing
#      NUMERIC change stops the table (tables, dead letters) until resume
#  11  a table without a primary key: dead letters naming the fix, then keyed
#      by message.key.columns
#  12  the topic deleted and created again while the ingest is stopped (a
#      connector reset): once longer than the replica's position, once
#      shorter; the ingest notices, reads the new topic from its beginning,
#      and the replica equals the source; a plain restart reads nothing again
#  13  partitions added to the topic while the ingest runs, under a stream of
#      updates (keys move to the new partitions): the ingest consumes them,
#      and the replica equals the source
# Scenarios 1-6 run on one connector and one replica, in order; 7, 8, 9 and
# 10a/10b each on a fresh database, connector, topics and replica.
#
# Output: one `ok`/`FAIL` line per check, `#` lines for progress and figures
# (the latency p50/p99), then `N passed, M failed`. Exit 0 when all pass.
#
# Environment:
#   E2E_KEEP_STACK=1   leave the stack running at the end
#   E2E_RATE           changegen --rate, statements/s (default 1300: about
#                      1,000+ row changes/s, a fifth of statements find no row)
#   E2E_KEYS           order ids of the generator (default 20000)
#   E2E_LATENCY_SECS   length of the latency window (default 20)
#   E2E_ONLY           e.g. "1 4 7 8 9 10": run only these (2-6 need 1 before them)
#   E2E_WORK           scratch directory (default: a new one in /tmp; kept
#                      when a check fails)
#   E2E_SCHEMAS, E2E_DECIMAL_MODE, E2E_ORDERS_IDENTITY, E2E_WORKAROUNDS,
#   E2E_CONNECTOR_OPTS  the pipeline's configuration: see tests/e2e/lib.sh
#                      and tests/e2e/README.md ("Known differences")
#   E2E_BUILD          build directory of cdcstore and e2e_kafka (default
#                      build; make BUILD=DIR builds there)
#   STACK_* as for tests/stack/stack.sh (ports, STACK_DIR)
# Checks given as `eval '...'` expand their variables when they run.
# shellcheck disable=SC2016
set -uo pipefail
export LC_ALL=C.UTF-8

WORK=${E2E_WORK:-$(mktemp -d /tmp/cdcstore-e2e.XXXXXX)}
mkdir -p "$WORK"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The readers of scenario 9b's Parquet and Delta exports (PyPI, never part of
# the build): tests/lib/venv.sh, the venv .cache/test-venv.
# shellcheck source=tests/lib/venv.sh
ROOT=$E2E_ROOT
. "$ROOT/tests/lib/venv.sh"
TEST_VENV=$VENV_DIR
venv_ensure_all() { venv_ensure "${VENV_READERS[@]}"; }

RATE=${E2E_RATE:-1300}
KEYS=${E2E_KEYS:-20000}
LAT_SECS=${E2E_LATENCY_SECS:-20}
ONLY=${E2E_ONLY:-1 2 3 4 5 6 7 8 9 10 11 12 13}
RUN=$(date +%s)
P=e2e_$RUN          # topic prefix of scenarios 1-6
P7=e2e7_$RUN        # topic prefix of scenario 7
GROUP=e2e-main-$RUN
R=$WORK/replica
PASSED=0
FAILED=0
MAIN_PID=
NSTART=0
KILL_ENDS=()
KILL_FIRST=0
LATENCY_LINE=
LATENCY_STAGES=

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    e2e_kill_started
    if [[ ${E2E_KEEP_STACK:-0} != 1 ]]; then
        "$STACK" down >>"$WORK/stack.log" 2>&1 || echo "e2e: stack.sh down failed; see $WORK/stack.log" >&2
    fi
    if ((FAILED == 0 && rc == 0)) && [[ -z ${E2E_WORK:-} ]]; then
        rm -rf "$WORK"
    else
        echo "# logs and replicas kept in $WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

runs() { [[ " $ONLY " == *" $1 "* ]]; }


# ---- Helpers of the scenarios -------------------------------------------------

# (Re)starts the main ingest of scenarios 1-6; each start has its own log
# and latency report.
# A static group member (group.instance.id): a restart after SIGKILL gets its
# partitions back at once, instead of after the dead member's session
# timeout (45 s by default) when the group rebalances.
main_ingest_start() {
    NSTART=$((NSTART + 1))
    [[ -f $WORK/main-kafka.properties ]] || printf 'group.instance.id=e2e-main-%s\n' "$RUN" >"$WORK/main-kafka.properties"
    start_ingest MAIN_PID "$R" "$GROUP" "$WORK/ingest-main-$NSTART.log" "$WORK/latency-main-$NSTART.txt" "$P" \
        --kafka-config "$WORK/main-kafka.properties" "$@"
}
main_ingest_stop() {
    [[ -n $MAIN_PID ]] || return 0
    stop_ingest "$MAIN_PID"
    local rc=$?
    MAIN_PID=
    return "$rc"
}

# Fills the fresh database: KEYS orders (10% TOASTed), order lines and
# customers from the generator's first changes, orders 30001-30010 for the
# held transactions (outside the generator's range, so that it never waits on
# their row locks), orders 40001-40300 that only scenario 5 deletes, and 200
# products.
seed_source() {
    "$CHANGEGEN" --seed 1 --keys "$KEYS" --init-rows "$KEYS" --count 2000 --rate 0 >"$WORK/seed.out" 2>&1 || {
        echo "changegen (seeding the source) exited $?: $(reason_of "$WORK/seed.out")"
        tail_of "$WORK/seed.out"
        return 1
    }
    app_psql -c "INSERT INTO public.orders (order_id, status, amount, note, created_at)
                 SELECT i, 'base', i / 100.0, 'held ' || i, timestamp '2026-03-01' + i * interval '1 minute'
                 FROM generate_series(30001, 30010) i" &&
        app_psql -c "INSERT INTO public.orders (order_id, status, amount, note, created_at)
                     SELECT i, 'static', i / 100.0, 'static ' || i, timestamp '2026-03-02' + i * interval '1 second'
                     FROM generate_series(40001, 40300) i" &&
        app_psql -c "INSERT INTO public.products (sku, title, price)
                     SELECT 'SKU-' || i, 'product ' || i || ', \"quoted\"', i * 1.125 FROM generate_series(1, 200) i"
}

# wait_pglog MESSAGE FROM_BYTE: polls the PostgreSQL log from a byte offset.
wait_pglog() {
    local msg=$1 from=$2 deadline=$((SECONDS + 90))
    until tail -c +"$((from + 1))" "$PGLOG" | grep -q "$msg"; do
        ((SECONDS < deadline)) || {
            echo "no \"$msg\" in $PGLOG after 90s"
            tail -c +"$((from + 1))" "$PGLOG" >"$WORK/pglog-tail.txt"
            tail_of "$WORK/pglog-tail.txt" 3
            return 1
        }
        sleep 0.1
    done
}

# hold NAME KEYBASE ROWS: a changegen transaction that updates ROWS orders
# above KEYBASE and stays open until $WORK/NAME.go exists.
hold() {
    local name=$1 base=$2 rows=$3 deadline=$((SECONDS + 30))
    rm -f "$WORK/$name.go"
    start_gen "HOLD_$name" "$WORK/hold-$name.out" --hold-open-tx 600 --hold-until-file "$WORK/$name.go" \
        --key-base "$base" --hold-rows "$rows"
    local pid_var=HOLD_$name
    until grep -q 'holding xid=' "$WORK/hold-$name.out" 2>/dev/null; do
        if ((SECONDS >= deadline)) || ! kill -0 "${!pid_var}" 2>/dev/null; then
            grep -q 'holding xid=' "$WORK/hold-$name.out" 2>/dev/null && return 0
            echo "changegen --hold-open-tx ($name) did not report its transaction: $(reason_of "$WORK/hold-$name.out.err")"
            tail_of "$WORK/hold-$name.out.err"
            return 1
        fi
        sleep 0.1
    done
}
release() {
    local pid_var=HOLD_$1 rc
    touch "$WORK/$1.go"
    wait "${!pid_var}"
    rc=$?
    if ((rc != 0)); then
        echo "changegen --hold-open-tx ($1) exited $rc: $(reason_of "$WORK/hold-$1.out.err")"
        tail_of "$WORK/hold-$1.out.err"
    fi
    return "$rc"
}

# Decodes a topic (one partition) into TSV lines: op, source.lsn, key
# (order_id), after.status; tombstones are left out.
orders_tsv() {
    kcat -b "$KAFKA_BROKERS" -C -e -q -t "$1" -f '%s\n' |
        jq -r "$JQ_UNWRAP"'select(. != null) | unwrap | [.op, .source.lsn, ((.after // .before).order_id), (.after.status // "")] | @tsv'
}

# The distinct snapshot LSNs in a topic, in order of appearance.
snapshot_lsns() {
    kcat -b "$KAFKA_BROKERS" -C -e -q -t "$1" -f '%s\n' |
        jq -r "$JQ_UNWRAP"'select(. != null) | unwrap | select(.op == "r") | .source.lsn' | awk '!seen[$0]++'
}

# ---- 1: snapshot + streaming + handover --------------------------------------

check_handover() {
    local tsv=$1
    awk -F'\t' '
        $1 == "r" { snap = $2; lastr = NR; next }
        { op[NR] = $1; lsn[NR] = $2; key[NR] = $3; st[NR] = $4 }
        END {
            if (!snap) { print "no snapshot records"; exit 1 }
            below = 0; b = 0; bmax = 0
            for (i = lastr + 1; i <= NR; i++) {
                if (lsn[i] + 0 < snap + 0) below++
                if (key[i] >= 30003 && key[i] <= 30005 && st[i] == "held-open" && lsn[i] + 0 < snap + 0) {
                    b++; if (lsn[i] + 0 > bmax) bmax = lsn[i] + 0
                }
            }
            if (b != 3) { printf "B updates streamed below the snapshot LSN %s: %d of 3 (%d streamed changes below it)\n", snap, b, below; exit 1 }
            printf "B streamed after the snapshot with LSN %d < snapshot LSN %s; %d streamed changes below it\n", bmax, snap, below
        }' "$tsv"
}

check_held_rows() {
    local id
    for id in 30003 30004 30005; do
        "$CDC" get --db "$R" --table public.orders "[$id]" | jq -e '.deleted == false and .row.status == "held-open"' \
            >/dev/null || {
            echo "order $id in the replica: $("$CDC" get --db "$R" --table public.orders "[$id]" | cut -c1-300)"
            return 1
        }
    done
    echo "orders 30003-30005 have status held-open"
}

# latency_stages TOPIC OFFSET: where the time goes, from 5000 records of the
# topic from OFFSET: source commit (source.ts_ms) -> Debezium's event
# (ts_ms) -> Kafka's append (the record's timestamp). The last stage, Kafka
# -> cdcstore's apply, is not measured per record: roughly the total minus
# these two.
latency_stages() {
    kcat -b "$KAFKA_BROKERS" -C -e -q -t "$1" -o "$2" -c 5000 -f '%T\t%s\n' |
        jq -R -r "$JQ_UNWRAP"'split("\t") | [(.[0] | tonumber), (.[1] | fromjson? // null | unwrap)]
            | select(.[1] != null) | "\(.[1].ts_ms - .[1].source.ts_ms) \(.[0] - .[1].ts_ms)"' >"$WORK/stages.txt"
    local a50 a99 b50 b99
    cut -d' ' -f1 "$WORK/stages.txt" >"$WORK/stage-a.txt"
    cut -d' ' -f2 "$WORK/stages.txt" >"$WORK/stage-b.txt"
    read -r _ a50 _ a99 _ <<<"$(percentiles "$WORK/stage-a.txt")"
    read -r _ b50 _ b99 _ <<<"$(percentiles "$WORK/stage-b.txt")"
    echo "stages over $(wc -l <"$WORK/stages.txt") orders records: commit -> Debezium event p50 $a50 p99 $a99 ms; Debezium event -> Kafka append p50 $b50 p99 $b99 ms (Kafka -> cdcstore apply is the rest)"
}

# The main ingest of scenario 1 serves Prometheus metrics (--metrics-addr)
# on METRICS_PORT, a free loopback port.
METRICS_PORT=
metric_value() { awk -v n="$2" '$1 == n {print $2}' "$1"; }
# metrics_during_load: two scrapes of /metrics 3 s apart while changegen
# runs: every metric with its Prometheus type, the latency histogram's
# buckets, cdcstore_applied_total growing between them.
metrics_during_load() {
    local a=$WORK/metrics-1a.txt b=$WORK/metrics-1b.txt m x y n inf
    sleep 2
    curl -fsS --max-time 5 "http://127.0.0.1:$METRICS_PORT/metrics" >"$a" || return 1
    sleep 3
    curl -fsS --max-time 5 "http://127.0.0.1:$METRICS_PORT/metrics" >"$b" || return 1
    for m in cdcstore_events_total:counter cdcstore_applied_total:counter cdcstore_stale_total:counter \
        cdcstore_duplicate_total:counter cdcstore_tombstones_total:counter cdcstore_dead_letters_total:counter \
        cdcstore_batches_total:counter cdcstore_consumer_lag_records:gauge cdcstore_records_per_second:gauge \
        cdcstore_batch_apply_seconds:histogram cdcstore_latency_seconds:histogram \
        cdcstore_table_applied_total:counter cdcstore_table_rows_live:gauge \
        cdcstore_table_behind_source_seconds:gauge; do
        grep -qx "# TYPE ${m%:*} ${m#*:}" "$b" || { echo "no ${m%:*} of type ${m#*:} in $b"; return 1; }
    done
    x=$(sed -n 's/^cdcstore_latency_seconds_bucket{le="\([^"]*\)"}.*/\1/p' "$b" | paste -sd' ')
    [[ $x == '0.05 0.1 0.25 0.5 1 2.5 5 10 +Inf' ]] || { echo "latency buckets: $x"; return 1; }
    x=$(metric_value "$a" cdcstore_applied_total)
    y=$(metric_value "$b" cdcstore_applied_total)
    [[ -n $x && -n $y ]] && ((y > x)) || { echo "cdcstore_applied_total did not grow under load: $x, 3 s later $y"; return 1; }
    n=$(metric_value "$b" cdcstore_latency_seconds_count)
    inf=$(metric_value "$b" 'cdcstore_latency_seconds_bucket{le="+Inf"}')
    [[ -n $n && $n -gt 0 && $n == "$inf" ]] || { echo "latency histogram: count $n, +Inf bucket $inf"; return 1; }
    echo "cdcstore_applied_total $x -> $y in 3 s; $(metric_value "$b" cdcstore_records_per_second) records/s; $n latencies"
}
# status_latency: `cdcstore status` shows the p50/p99 of the last minute's
# streamed changes that the running main ingest writes beside the replica.
status_latency() {
    local out=$WORK/status-lat-1.json
    "$CDC" status --db "$R" --json >"$out" || { echo "status exited $?"; return 1; }
    jq -e --argjson pid "$MAIN_PID" '.latency | .running and (.stale | not) and .pid == $pid and .samples > 0
        and .p50_ms <= .p99_ms and .p99_ms <= .max_ms' "$out" >/dev/null ||
        { echo "latency: $(jq -c .latency "$out")"; return 1; }
    jq -r '.latency | "p50 \(.p50_ms) ms, p99 \(.p99_ms) ms, max \(.max_ms) ms over \(.samples) changes in \(.window_s) s"' "$out"
}
# status_with_brokers: `cdcstore status --brokers` against the running
# ingest's replica, drained: every partition has a high watermark, its lag
# is high - (offset + 1) and 0.
status_with_brokers() {
    local out=$WORK/status-1.json
    "$CDC" status --db "$R" --brokers "$KAFKA_BROKERS" --json >"$out" || { echo "status exited $?"; return 1; }
    jq -e '.partitions | length > 0 and all(.high_watermark != null and .lag == .high_watermark - .offset - 1)' \
        "$out" >/dev/null || { echo "partitions:"; jq -c '.partitions[]' "$out"; return 1; }
    jq -e '.total.lag == 0 and .total.newest_ts_ms > 0' "$out" >/dev/null ||
        { echo "total: $(jq -c '.total | {lag, newest_ts_ms, behind_ms}' "$out")"; return 1; }
    echo "$(jq '.partitions | length' "$out") partitions, lag 0, $(jq '.total.behind_ms' "$out") ms behind the source"
}

scenario1() {
    e2e_log "scenario 1: initial snapshot + streaming under load, transactions open across the snapshot"
    check "1 setup: source reset and seeded, topics created" \
        eval 'reset_source && seed_source && create_topics 1 "$P"' || return 1
    METRICS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    main_ingest_start --metrics-addr "127.0.0.1:$METRICS_PORT"
    local gen
    start_gen gen "$WORK/gen-1.out" --seed 11 --keys "$KEYS" --rate "$RATE" --duration 30
    # The handover, as tests/stack/capture-fixtures.sh sc_inflight_handover,
    # under the generator's load: A holds a write while the slot is created;
    # X starts, A commits (FULL_SNAPSHOT, waiting for X); B starts, X
    # commits (CONSISTENT: the snapshot is exported without B); B commits
    # once the snapshot is over.
    local logpos
    # shellcheck disable=SC2034 # used in the eval below
    logpos=$(stat -c %s "$PGLOG")
    if ! check "1 handover: held transactions reach the slot's snapshot states" eval '
        hold A 30000 1 &&
        register_connector e2e "$P" &&
        wait_pglog "logical decoding found initial starting point" "$logpos" &&
        hold X 30001 1 && release A &&
        wait_pglog "logical decoding found initial consistent point" "$logpos" &&
        hold B 30002 3 && release X &&
        wait_pglog "logical decoding found consistent point" "$logpos" &&
        sed -n "s/^changegen: holding xid=\([0-9]*\).*wrote_before_lsn=\([^ ]*\).*/B: xid \1 wrote before \2/p" "$WORK/hold-B.out"'; then
        touch "$WORK/A.go" "$WORK/X.go" "$WORK/B.go"
    fi
    check "1 snapshot done, connector streaming (B still open)" wait_streaming e2e 180
    check "1 B committed after the snapshot" eval 'release B && grep -h "committed held transaction" "$WORK/hold-B.out"'
    check "1 changegen load" gen_wait "$gen" "$WORK/gen-1.out"
    check "1 drained" wait_drained e2e_slot "$GROUP" "$P"
    orders_tsv "$P.public.orders" >"$WORK/orders-1.tsv"
    check "1 handover seen on the topic" check_handover "$WORK/orders-1.tsv"
    check "1 B's updates in the replica" check_held_rows
    check "1 reconcile: replica equals source" reconcile_all "$R" 1
    check "1 no dead letters" test "$(stat_of "$R" total dead_letters)" = 0
    check "1 status --brokers: positions at the high watermarks" status_with_brokers

    # The latency window: a steady load on a running pipeline.
    local l0 l1 pct rate o0 o1
    l0=$(wc -l <"$WORK/latency-main-$NSTART.txt")
    o0=$("$E2EK" "$KAFKA_BROKERS" hw "$P.public.orders")
    start_gen gen "$WORK/gen-lat.out" --seed 12 --keys "$KEYS" --rate "$RATE" --duration "$LAT_SECS"
    check "1 /metrics during the load" metrics_during_load
    check "1 latency window changegen load" gen_wait "$gen" "$WORK/gen-lat.out"
    check "1 latency window drained" wait_drained e2e_slot "$GROUP" "$P"
    check "1 status: the running ingest's latency of the last minute" status_latency
    l1=$(wc -l <"$WORK/latency-main-$NSTART.txt")
    pct=$(percentiles "$WORK/latency-main-$NSTART.txt" $((l0 + 1)) "$l1")
    rate=$(gen_rate "$WORK/gen-lat.out")
    read -r _ p50 _ p99 _ max _ n <<<"$pct"
    LATENCY_LINE="end-to-end latency (apply time - source.ts_ms): p50 $p50 ms, p99 $p99 ms, max $max ms over $n changes; load $rate changes/s for ${LAT_SECS}s (changegen --rate $RATE)"
    ((rate < 1000)) && LATENCY_LINE+=" (below 1,000 changes/s: changegen could not keep its rate, the machine is busy)"
    e2e_log "$LATENCY_LINE"
    o1=$("$E2EK" "$KAFKA_BROKERS" hw "$P.public.orders")
    LATENCY_STAGES=$(latency_stages "$P.public.orders" $((o1 - o0 > 5000 ? o0 + (o1 - o0 - 5000) / 2 : o0)))
    e2e_log "$LATENCY_STAGES"
    check "1 reconcile after the latency window" reconcile_all "$R" 1b
}

# ---- 2: SIGKILL ------------------------------------------------------------

check_resumed() {
    local f n=0
    for f in "$@"; do
        grep -q "assigned $P.public.orders\[0\]: from offset [0-9]* (stored position" "$f" || {
            echo "$f: no resume from a stored position:"
            grep -v librdkafka "$f" | head -n 5
            return 1
        }
        n=$((n + 1))
    done
    echo "$n restarts resumed from the replica's stored positions"
}

# kill_main: SIGKILL to the main ingest, once it consumes; records the
# orders topic's end at that moment in KILL_ENDS.  The assignment is looked
# for every 10 ms: a kill meant to land while a backlog is read must not come
# up to 100 ms late (a backlog of a few seconds of changes is applied in
# about that time).
kill_main() {
    local deadline=$((SECONDS + 60))
    until grep -q "assigned $P.public.orders" "$WORK/ingest-main-$NSTART.log"; do
        ((SECONDS < deadline)) || break
        sleep 0.01
    done
    sleep "$1"
    kill -KILL "$MAIN_PID"
    KILL_ENDS+=("$("$E2EK" "$KAFKA_BROKERS" hw "$P.public.orders")")
    wait "$MAIN_PID" 2>/dev/null
    MAIN_PID=
}

# check_in_flight: for each kill, the next start's stored position of the
# orders topic is below the topic's end at the kill: records were consumed
# or in flight and not applied when the process died.
check_in_flight() {
    local i out='' pos end
    for i in 0 1 2; do
        pos=$(sed -n "s/.*assigned $P.public.orders\[0\]: from offset [0-9]* (stored position \([0-9]*\)[,)].*/\1/p" \
            "$WORK/ingest-main-$((KILL_FIRST + i + 1)).log" | head -n 1)
        end=${KILL_ENDS[$i]}
        if [[ -z $pos ]] || ((end <= pos + 1)); then
            echo "kill $((i + 1)): stored position ${pos:-?}, topic end $end: nothing was in flight"
            return 1
        fi
        out+="${out:+, }$((end - pos - 1))"
    done
    echo "records of orders not applied at each kill: $out"
}

scenario2() {
    e2e_log "scenario 2: cdcstore ingest killed with SIGKILL under load, restarted"
    local gen logs=()
    KILL_ENDS=()
    start_gen gen "$WORK/gen-2.out" --seed 21 --keys "$KEYS" --rate "$RATE" --duration 20
    # Batches of 5 s: each kill lands while one fills (records consumed,
    # not applied).
    main_ingest_stop >/dev/null
    main_ingest_start --batch-max-ms 5000 --batch-max-events 100000
    logs+=("$WORK/ingest-main-$NSTART.log")
    KILL_FIRST=$NSTART
    kill_main 2.3
    sleep 1.5
    main_ingest_start --batch-max-ms 5000 --batch-max-events 100000
    logs+=("$WORK/ingest-main-$NSTART.log")
    kill_main 2.3
    sleep 2
    # Default batches: the backlog of the pause is being read.  The kill
    # comes as soon as the orders partition is assigned: in CI the ingest
    # once had the whole backlog applied 0.05 s after the assignment (the
    # check below then found nothing in flight at the kill).
    main_ingest_start
    logs+=("$WORK/ingest-main-$NSTART.log")
    kill_main 0
    sleep 1
    main_ingest_start
    logs+=("$WORK/ingest-main-$NSTART.log")
    check "2 changegen load" gen_wait "$gen" "$WORK/gen-2.out"
    check "2 drained" wait_drained e2e_slot "$GROUP" "$P"
    check "2 three SIGKILLs, restarts resume from stored positions" check_resumed "${logs[@]}"
    check "2 each SIGKILL left consumed records unapplied" check_in_flight
    check "2 reconcile: replica equals source" reconcile_all "$R" 2
    check "2 no dead letters" test "$(stat_of "$R" total dead_letters)" = 0
}

# ---- 3: Kafka Connect stopped and started -------------------------------------

products_reads() {
    kcat -b "$KAFKA_BROKERS" -C -e -q -t "$P.public.products" -f '%s\n' | grep -c '"op":"r"'
}

stop_connect() {
    local pid deadline=$((SECONDS + 90))
    pid=$(cat "$STACK_DIR/run/connect.pid") || return 1
    kill -TERM "$pid" || return 1
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            kill -KILL "$pid"
            echo "Connect ignored SIGTERM for 90s; killed"
        fi
        sleep 0.3
    done
    echo "Connect (pid $pid) stopped"
}

check_outage() {
    local hw0=$1 hw1 active
    # shellcheck disable=SC2046
    hw1=$("$E2EK" "$KAFKA_BROKERS" hw $(topics "$P"))
    active=$(su_psql -c "SELECT active FROM pg_replication_slots WHERE slot_name = 'e2e_slot'")
    [[ $hw0 == "$hw1" && $active == f ]] || {
        echo "while Connect was down: topics went from $hw0 to $hw1 records, slot active=$active"
        return 1
    }
    echo "no record produced, slot e2e_slot inactive"
}

scenario3() {
    e2e_log "scenario 3: Kafka Connect stopped with the generator running, then started again"
    local gen reads0 hw0
    reads0=$(products_reads)
    start_gen gen "$WORK/gen-3.out" --seed 31 --keys "$KEYS" --rate "$RATE" --duration 30
    sleep 4
    check "3 Connect stopped (SIGTERM) under load" stop_connect
    # shellcheck disable=SC2046
    hw0=$("$E2EK" "$KAFKA_BROKERS" hw $(topics "$P"))
    sleep 10
    check "3 nothing flows while Connect is down" check_outage "$hw0"
    check "3 Connect started again (stack.sh up)" "$STACK" up
    check "3 connector streaming again" wait_streaming e2e 180
    check "3 changegen load" gen_wait "$gen" "$WORK/gen-3.out"
    check "3 drained" wait_drained e2e_slot "$GROUP" "$P"
    check "3 resumed from its offsets, no new snapshot" test "$(products_reads)" = "$reads0"
    check "3 reconcile: replica equals source" reconcile_all "$R" 3
}

# ---- 4: full replay --------------------------------------------------------

export_meta() {
    local dir=$1 t
    mkdir -p "$dir"
    for t in "${E2E_TABLES[@]}"; do
        "$CDC" export --db "$R" --table "public.$t" --meta --output "$dir/$t.csv" 2>>"$WORK/export.log" || return 1
    done
}

# wait_events_read N: until the replica's events_read counter reaches N (a
# replay is not seen in the group's committed offsets: cdcstore commits the
# replica's positions, already at the end).
wait_events_read() {
    local want=$1 deadline=$((SECONDS + 180)) n
    while :; do
        n=$(stat_of "$R" total events_read)
        ((n >= want)) && {
            echo "events_read $n"
            return 0
        }
        ((SECONDS < deadline)) || {
            echo "replay not done after 180s: events_read $n of $want"
            return 1
        }
        sleep 0.5
    done
}

check_replay_summary() {
    local f=$1 hw=$2 line
    line=$(grep 'cdcstore ingest: .* records\{0,1\} in' "$f" | tail -n 1)
    [[ $line =~ :\ ([0-9]+)\ records?\ in\ [0-9]+\ batch(es)?:\ ([0-9]+)\ applied ]] || {
        echo "no summary line in $f"
        return 1
    }
    [[ ${BASH_REMATCH[1]} == "$hw" && ${BASH_REMATCH[3]} == 0 ]] || {
        echo "$line (topics hold $hw records)"
        return 1
    }
    echo "${BASH_REMATCH[1]} records re-read, 0 applied"
}

scenario4() {
    e2e_log "scenario 4: full replay of the topics into the populated replica"
    check "4 main ingest stopped by SIGTERM (exit 0)" main_ingest_stop
    export_meta "$WORK/export-before"
    local applied0 applied1 read0 hw rp t diffs=0
    applied0=$(stat_of "$R" total applied)
    read0=$(stat_of "$R" total events_read)
    # shellcheck disable=SC2046
    hw=$("$E2EK" "$KAFKA_BROKERS" hw $(topics "$P"))
    start_ingest rp "$R" "e2e-replay-$RUN" "$WORK/ingest-replay.log" "" "$P" --from-beginning
    check "4 replay consumed every record" wait_events_read $((read0 + hw))
    check "4 replay ingest stopped by SIGTERM (exit 0)" stop_ingest "$rp"
    check "4 replay: zero rows changed" check_replay_summary "$WORK/ingest-replay.log" "$hw"
    export_meta "$WORK/export-after"
    for t in "${E2E_TABLES[@]}"; do
        cmp -s "$WORK/export-before/$t.csv" "$WORK/export-after/$t.csv" || diffs=$((diffs + 1))
    done
    check "4 export --meta identical before and after (4 tables, $(cat "$WORK"/export-after/*.csv | wc -l) lines)" \
        test "$diffs" = 0
    applied1=$(stat_of "$R" total applied)
    check "4 stats applied unchanged ($applied0)" test "$applied1" = "$applied0"
    main_ingest_start
}

# ---- 5: slot dropped, re-snapshot -------------------------------------------

check_gap_deletes() {
    local present
    present=$("$CDC" export --db "$R" --table public.orders --format ndjson --where-key-range '[40001]:[40301]' |
        grep -c .)
    [[ $present == 0 ]] || {
        echo "$present of orders 40001-40300, deleted while no slot existed, are still in the replica"
        return 1
    }
    echo "orders 40001-40300, deleted while no slot existed, are gone"
}

delete_main_connector() {
    "$CONN" delete e2e >>"$WORK/connector.log" 2>&1 || {
        echo "connector.sh delete e2e failed: $(reason_of "$WORK/connector.log")"
        tail_of "$WORK/connector.log"
        return 1
    }
    [[ $(su_psql -c "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'e2e_slot'") == 0 ]] || {
        echo "replication slot e2e_slot still exists after the connector's deletion"
        return 1
    }
}

scenario5() {
    e2e_log "scenario 5: replication slot dropped, changes, connector re-snapshots into the populated replica"
    local gen gap0 gap1 snaps
    check "5 connector deleted: offsets reset, slot and publication dropped" delete_main_connector
    check "5 300 orders live in the replica before" eval '
        same "orders 40001-40300 in the replica" "$("$CDC" export --db "$R" --table public.orders --format ndjson \
            --where-key-range "[40001]:[40301]" | grep -c .)" 300'
    check "5 changes while no slot exists (300 orders, 4 products, order lines, customers deleted)" app_psql -c "
        DELETE FROM public.orders WHERE order_id BETWEEN 40001 AND 40300;
        UPDATE public.orders SET status = 'gap' WHERE order_id IN
            (SELECT order_id FROM public.orders WHERE order_id <= $KEYS ORDER BY order_id DESC LIMIT 300);
        DELETE FROM public.order_lines WHERE order_id IN (SELECT DISTINCT order_id FROM public.order_lines ORDER BY 1 LIMIT 4);
        DELETE FROM public.customers WHERE customer_id IN (SELECT customer_id FROM public.customers ORDER BY 1 LIMIT 10);
        DELETE FROM public.products WHERE sku IN ('SKU-1', 'SKU-2', 'SKU-3', 'SKU-4');
        UPDATE public.products SET price = price + 1 WHERE sku IN ('SKU-5', 'SKU-6');
        INSERT INTO public.orders (order_id, status, amount, created_at)
            SELECT i, 'gap-insert', 1.23, timestamp '2026-04-01' FROM generate_series(30100, 30199) i;"
    gap0=$(stat_of "$R" public.orders gap_deletes)
    # The generator runs through the gap, the new snapshot and after it.
    start_gen gen "$WORK/gen-5.out" --seed 51 --keys "$KEYS" --rate "$RATE" --duration 20
    sleep 3
    check "5 connector registered again" eval 'register_connector e2e "$P"'
    check "5 new snapshot done, connector streaming" wait_streaming e2e 180
    check "5 changegen load" gen_wait "$gen" "$WORK/gen-5.out"
    check "5 drained" wait_drained e2e_slot "$GROUP" "$P"
    snaps=$(snapshot_lsns "$P.public.products" | tr '\n' ' ')
    check "5 a second snapshot above the first (snapshot LSNs: $snaps)" \
        awk '{ exit !(NF == 2 && $2 + 0 > $1 + 0) }' <<<"$snaps"
    check "5 rows deleted while no slot existed are gone" check_gap_deletes
    gap1=$(stat_of "$R" public.orders gap_deletes)
    check "5 stats gap_deletes of public.orders rose ($gap0 -> $gap1)" test "$gap1" -gt "$gap0"
    check "5 reconcile: replica equals source" reconcile_all "$R" 5
    check "5 no dead letters" test "$(stat_of "$R" total dead_letters)" = 0
}

# ---- 6: unchanged TOASTed columns ---------------------------------------------

check_note_kept() {
    local ids=$1 id src rep n=0
    # Five of them; reconcile compares them all.
    for id in $(tr ',' '\n' <<<"$ids" | awk 'NR % 20 == 1'); do
        n=$((n + 1))
        src=$(app_psql -c "SELECT md5(note) || ' ' || length(note) FROM public.orders WHERE order_id = $id")
        rep=$("$CDC" get --db "$R" --table public.orders "[$id]" | jq -r '.row.note' | tr -d '\n' | md5sum | cut -d' ' -f1)
        [[ ${src%% *} == "$rep" ]] || {
            echo "order $id: note md5 $rep in the replica, $src at the source"
            return 1
        }
    done
    echo "the notes of $n updated orders read back equal the source's (${src#* } chars)"
}

scenario6() {
    e2e_log "scenario 6: REPLICA IDENTITY DEFAULT, updates leaving a TOASTed column unchanged"
    local ids hw0 kept0 kept1 n
    check "6 public.orders has REPLICA IDENTITY DEFAULT" eval '
        app_psql -c "ALTER TABLE public.orders REPLICA IDENTITY DEFAULT" &&
        same "relreplident of public.orders" "$(app_psql -c "SELECT relreplident FROM pg_class WHERE oid = '"'public.orders'"'::regclass")" d'
    ids=$(app_psql -c "SELECT string_agg(order_id::text, ',') FROM
                         (SELECT order_id FROM public.orders WHERE length(note) > 2100 ORDER BY order_id LIMIT 100) s")
    hw0=$("$E2EK" "$KAFKA_BROKERS" hw "$P.public.orders")
    kept0=$(stat_of "$R" public.orders placeholders_kept)
    check "6 100 TOASTed orders updated without touching note" \
        app_psql -c "UPDATE public.orders SET status = 'toast-kept', paid = NOT coalesce(paid, false)
                     WHERE order_id IN ($ids)"
    check "6 drained" wait_drained e2e_slot "$GROUP" "$P"
    n=$(kcat -b "$KAFKA_BROKERS" -C -e -q -t "$P.public.orders" -p 0 -o "$hw0" -f '%s\n' |
        grep -c '"note":"__debezium_unavailable_value"')
    check "6 Debezium sent the unavailable-value placeholder ($n of 100 updates)" test "$n" = 100
    kept1=$(stat_of "$R" public.orders placeholders_kept)
    check "6 stats placeholders_kept +$((kept1 - kept0)) (now $kept1)" test $((kept1 - kept0)) -ge 100
    check "6 stored notes kept" check_note_kept "$ids"
    check "6 reconcile: replica equals source" reconcile_all "$R" 6
    # A primary-key change of a TOASTed row: Debezium deletes the old key and
    # creates the new one with the placeholder for note (headers
    # __debezium.newkey / __debezium.oldkey); the new key keeps the note.
    local moved newids hw1
    moved=$(tr ',' '\n' <<<"$ids" | head -n 20 | paste -sd, -)
    newids=$(tr ',' '\n' <<<"$moved" | awk '{ print $1 + 50000000 }' | paste -sd, -)
    hw1=$("$E2EK" "$KAFKA_BROKERS" hw "$P.public.orders")
    kept0=$(stat_of "$R" public.orders placeholders_kept)
    check "6 20 TOASTed orders moved to new keys (order_id + 50000000), note untouched" \
        app_psql -c "UPDATE public.orders SET order_id = order_id + 50000000, status = 'moved' WHERE order_id IN ($moved)"
    check "6 drained (2)" wait_drained e2e_slot "$GROUP" "$P"
    n=$(kcat -b "$KAFKA_BROKERS" -C -e -q -t "$P.public.orders" -p 0 -o "$hw1" -f '%h %s\n' |
        grep '__debezium.oldkey=' | grep -c '"note":"__debezium_unavailable_value"')
    check "6 Debezium created the new keys with the placeholder and the old key's header ($n of 20)" test "$n" = 20
    kept1=$(stat_of "$R" public.orders placeholders_kept)
    check "6 stats placeholders_kept +$((kept1 - kept0)) for the moved rows" test $((kept1 - kept0)) -ge 20
    check "6 the moved orders' notes read back equal the source's" check_moved_notes "$newids"
    check "6 reconcile after the key changes: replica equals source" reconcile_all "$R" 6
}

# check_moved_notes IDS: every order of IDS has the source's note in the replica.
check_moved_notes() {
    local id src rep n=0
    for id in $(tr ',' ' ' <<<"$1"); do
        src=$(app_psql -c "SELECT md5(note) FROM public.orders WHERE order_id = $id")
        rep=$("$CDC" get --db "$R" --table public.orders "[$id]" | jq -r '.row.note' | tr -d '\n' | md5sum | cut -d' ' -f1)
        [[ -n $src && $src == "$rep" ]] || {
            echo "order $id: note md5 $rep in the replica, '$src' at the source"
            return 1
        }
        n=$((n + 1))
    done
    echo "the notes of the $n moved orders read back equal the source's"
}

# ---- 7: two ingest processes in one group, 4 partitions ------------------------

# assignment LOG: the partitions the ingest writing LOG owns now, one a line.
assignment() {
    sed -n 's/.*kafka: \(assigned\|revoked\|lost\) \([^ :]*\).*/\1 \2/p' "$1" |
        awk '$1 == "assigned" { own[$2] = 1; next } { delete own[$2] } END { for (p in own) print p }' | sort
}

check_split() {
    local a b both
    a=$(assignment "$WORK/ingest-7a.log")
    b=$(assignment "$WORK/ingest-7b.log")
    both=$(comm -12 <(echo "$a") <(echo "$b"))
    [[ -n $a && -n $b && -z $both && $(printf '%s\n%s\n' "$a" "$b" | grep -c .) == 16 ]] || return 1
    echo "A owns $(grep -c . <<<"$a"), B owns $(grep -c . <<<"$b") of 16 partitions"
}

wait_split() {
    local deadline=$((SECONDS + 90))
    until check_split; do
        ((SECONDS < deadline)) || {
            echo "no 2-way split after 90s; A: $(assignment "$WORK/ingest-7a.log" | tr '\n' ' ') B: $(assignment "$WORK/ingest-7b.log" | tr '\n' ' ')"
            return 1
        }
        sleep 0.5
    done
}

# Builds schemas e2e7_a and e2e7_b in the source: per table, the source rows
# whose key's partition (read off the topic) the member owns.
build_split_tables() {
    local t topic keyexpr
    : >"$WORK/keys-7.tsv"
    for t in "${E2E_TABLES[@]}"; do
        topic=$P7.public.$t
        kcat -b "$KAFKA_BROKERS" -C -e -q -t "$topic" -f "$t\t%p\t%k\n" >>"$WORK/keys-7.tsv" || return 1
    done
    {
        sed 's/^/a\t/' "$WORK/owned-7a.txt"
        sed 's/^/b\t/' "$WORK/owned-7b.txt"
    } | sed 's/\t[^.]*\.public\.\([a-z_]*\)\[\([0-9]*\)\]$/\t\1\t\2/' >"$WORK/owners-7.tsv"
    app_psql -c "SET client_min_messages = warning;
                 DROP SCHEMA IF EXISTS e2e7 CASCADE; DROP SCHEMA IF EXISTS e2e7_a CASCADE; DROP SCHEMA IF EXISTS e2e7_b CASCADE;
                 CREATE SCHEMA e2e7; CREATE SCHEMA e2e7_a; CREATE SCHEMA e2e7_b;
                 CREATE TABLE e2e7.keys (tbl text, part int, key jsonb);
                 CREATE TABLE e2e7.owners (member text, tbl text, part int);" || return 1
    app_psql -c "\\copy e2e7.keys FROM '$WORK/keys-7.tsv'" || return 1
    # With schemas.enable=true a key is {"schema": ..., "payload": {...}}.
    app_psql -c "UPDATE e2e7.keys SET key = key->'payload' WHERE key ? 'schema' AND key ? 'payload'" || return 1
    app_psql -c "\\copy e2e7.owners FROM '$WORK/owners-7.tsv'" || return 1
    for t in "${E2E_TABLES[@]}"; do
        case $t in
        orders) keyexpr="jsonb_build_object('order_id', s.order_id)" ;;
        order_lines) keyexpr="jsonb_build_object('order_id', s.order_id, 'line_no', s.line_no)" ;;
        customers) keyexpr="jsonb_build_object('customer_id', s.customer_id)" ;;
        products) keyexpr="jsonb_build_object('sku', s.sku)" ;;
        esac
        app_psql -c "
            CREATE TABLE e2e7_a.$t (LIKE public.$t INCLUDING ALL);
            CREATE TABLE e2e7_b.$t (LIKE public.$t INCLUDING ALL);
            INSERT INTO e2e7_a.$t SELECT s.* FROM public.$t s JOIN
                (SELECT DISTINCT k.key FROM e2e7.keys k JOIN e2e7.owners o USING (tbl, part)
                 WHERE k.tbl = '$t' AND o.member = 'a') m ON m.key = $keyexpr;
            INSERT INTO e2e7_b.$t SELECT s.* FROM public.$t s JOIN
                (SELECT DISTINCT k.key FROM e2e7.keys k JOIN e2e7.owners o USING (tbl, part)
                 WHERE k.tbl = '$t' AND o.member = 'b') m ON m.key = $keyexpr;" || return 1
        local n na nb
        n=$(app_psql -c "SELECT count(*) FROM public.$t")
        na=$(app_psql -c "SELECT count(*) FROM e2e7_a.$t")
        nb=$(app_psql -c "SELECT count(*) FROM e2e7_b.$t")
        [[ $((na + nb)) == "$n" ]] || {
            echo "$t: $na + $nb rows by partition owner, $n at the source"
            return 1
        }
        printf '%s %s+%s ' "$t" "$na" "$nb"
    done
    echo
}

scenario7() {
    e2e_log "scenario 7: two ingest processes in one group, topics of 4 partitions"
    [[ -n $MAIN_PID ]] && main_ingest_stop >/dev/null
    check "7 setup: source reset and seeded, 4 topics of 4 partitions" \
        eval 'reset_source && seed_source && create_topics 4 "$P7"' || return 1
    local a b gen g7=e2e7-$RUN
    start_ingest a "$WORK/replica-a" "$g7" "$WORK/ingest-7a.log" "" "$P7"
    start_ingest b "$WORK/replica-b" "$g7" "$WORK/ingest-7b.log" "" "$P7"
    check "7 the group split the partitions" wait_split
    start_gen gen "$WORK/gen-7.out" --seed 71 --keys "$KEYS" --rate "$RATE" --duration 20
    check "7 connector registered, snapshot done, streaming" eval '
        register_connector e2e7 "$P7" && wait_streaming e2e7 180'
    check "7 changegen load" gen_wait "$gen" "$WORK/gen-7.out"
    check "7 drained" wait_drained e2e7_slot "$g7" "$P7"
    check "7 still split after the load" check_split
    assignment "$WORK/ingest-7a.log" >"$WORK/owned-7a.txt"
    assignment "$WORK/ingest-7b.log" >"$WORK/owned-7b.txt"
    check "7 both ingest processes stopped by SIGTERM (exit 0)" eval 'stop_ingest "$a" && stop_ingest "$b"'
    check "7 source split by partition owner covers the source" build_split_tables
    check "7 reconcile: replica A equals the source rows of its partitions" reconcile_all "$WORK/replica-a" 7a e2e7_a
    check "7 reconcile: replica B equals the source rows of its partitions" reconcile_all "$WORK/replica-b" 7b e2e7_b
}

# ---- 8: ad hoc incremental snapshot under load ----------------------------------

P8=e2e8_$RUN        # topic prefix of scenario 8
INC_TABLES='["public.orders", "public.order_lines", "public.customers", "public.products"]'

# wait_inc_reads TOPIC ID...: until the topic holds an incremental read of
# each order id.
wait_inc_reads() {
    local topic=$1 deadline=$((SECONDS + 150)) id missing
    shift
    while :; do
        kcat -b "$KAFKA_BROKERS" -C -e -q -t "$topic" -f '%s\n' 2>/dev/null | grep '"snapshot":"incremental"' >"$WORK/inc-reads.txt"
        missing=
        for id in "$@"; do
            grep -q "\"order_id\":$id," "$WORK/inc-reads.txt" || missing+=" $id"
        done
        [[ -z $missing ]] && {
            echo "incremental reads of orders $* on $topic"
            return 0
        }
        ((SECONDS < deadline)) || {
            echo "no incremental read of orders$missing on $topic after 150s ($(wc -l <"$WORK/inc-reads.txt") incremental reads)"
            return 1
        }
        sleep 0.5
    done
}

# wait_inc_done FROM_BYTE: until Connect's log says that the incremental
# snapshot of each of the four tables is over.
wait_inc_done() {
    local from=$1 deadline=$((SECONDS + 180)) t missing
    while :; do
        missing=
        for t in "${E2E_TABLES[@]}"; do
            tail -c +"$((from + 1))" "$STACK_DIR/logs/connect.log" |
                grep -q "incremental snapshotting of table 'public.$t' finished" || missing+=" $t"
        done
        [[ -z $missing ]] && {
            echo "Connect: incremental snapshot of the four tables finished"
            return 0
        }
        ((SECONDS < deadline)) || {
            echo "Connect never logged the end of the incremental snapshot of$missing after 180s"
            tail -c +"$((from + 1))" "$STACK_DIR/logs/connect.log" | grep -i 'incremental\|ERROR' >"$WORK/connect-inc.txt"
            tail_of "$WORK/connect-inc.txt" 3
            return 1
        }
        sleep 0.5
    done
}

# check_inc_hard_case TOPIC: the held transaction's update of orders
# 30001-30003 reached the topic after the incremental read of the same row
# (which carries status "base"), with an LSN below the read's window
# (source.sequence[1]).
check_inc_hard_case() {
    kcat -b "$KAFKA_BROKERS" -C -e -q -t "$1" -f '%o\t%s\n' |
        jq -R -r "$JQ_UNWRAP"'split("\t") | (.[0] | tonumber) as $o | (.[1] | fromjson? // null | unwrap)
            | select(. != null) | select(((.after // .before).order_id // 0) as $k | $k >= 30001 and $k <= 30003)
            | [$o, (.after // .before).order_id, .op, .source.snapshot, .source.lsn, .source.sequence, (.after.status // "")] | @tsv' \
            >"$WORK/inc-held.tsv"
    awk -F'\t' '
        $4 == "incremental" { split($6, s, "\""); w[$2] = s[4] + 0; rs[$2] = $7; next }
        ($2 in w) && $3 == "u" && $7 == "held-open" && $5 + 0 < w[$2] { n++; last = $2 ": read (\"" rs[$2] "\", window " w[$2] ") then update lsn " $5 }
        END {
            if (n != 3) { printf "held updates of orders 30001-30003 after their read with an LSN below its window: %d of 3 (see inc-held.tsv)\n", n; exit 1 }
            printf "3 held updates after their read, below its window; e.g. %s\n", last
        }' "$WORK/inc-held.tsv"
}

scenario8() {
    e2e_log "scenario 8: ad hoc incremental snapshot of the four tables under load, a transaction held across its reads"
    [[ -n $MAIN_PID ]] && main_ingest_stop >/dev/null
    local r8=$WORK/replica-8 g8=e2e8-$RUN ing gen logpos
    check "8 setup: source reset and seeded, signal table, topics created" \
        eval 'reset_source && seed_source && app_psql -f "$E2E_ROOT/tests/data/debezium/sql/signal.sql" && create_topics 1 "$P8"' ||
        return 1
    start_ingest ing "$r8" "$g8" "$WORK/ingest-8.log" "" "$P8"
    # No initial snapshot: the incremental snapshot is the only way the rows
    # present before the connector reach the replica.
    check "8 connector registered (snapshot.mode=no_data, signal table), streaming" eval '
        E2E_CONNECTOR_OPTS="${E2E_CONNECTOR_OPTS:-} snapshot.mode=no_data signal.data.collection=public.dbz_signal incremental.snapshot.chunk.size=1000 table.include.list=public.orders,public.order_lines,public.customers,public.products,public.dbz_signal" \
            register_connector e2e8 "$P8" && wait_streaming e2e8 120' || return 1
    logpos=$(stat -c %s "$STACK_DIR/logs/connect.log")
    check "8 held transaction on orders 30001-30003 (before the snapshot)" hold H8 30000 3
    start_gen gen "$WORK/gen-8.out" --seed 81 --keys "$KEYS" --rate "$RATE" --duration 25
    sleep 1
    check "8 incremental snapshot signalled" app_psql -c "INSERT INTO public.dbz_signal (id, type, data)
        VALUES ('e2e8-$RUN', 'execute-snapshot', '{\"data-collections\": $INC_TABLES, \"type\": \"INCREMENTAL\"}')"
    check "8 orders 30001-30003 read by the snapshot while held" wait_inc_reads "$P8.public.orders" 30001 30002 30003
    check "8 held transaction committed after the reads" eval 'release H8 && grep -h "committed held transaction" "$WORK/hold-H8.out"'
    check "8 incremental snapshot finished" wait_inc_done "$logpos"
    check "8 changegen load" gen_wait "$gen" "$WORK/gen-8.out"
    check "8 drained" wait_drained e2e8_slot "$g8" "$P8"
    check "8 hard case on the topic" check_inc_hard_case "$P8.public.orders"
    check "8 ingest stopped by SIGTERM (exit 0)" stop_ingest "$ing"
    check "8 reconcile: replica equals source" reconcile_all "$r8" 8
    check "8 no dead letters" eval 'same "dead letters" "$(stat_of "$r8" total dead_letters)" 0'
}

# ---- 9: every common PostgreSQL type, exported and loaded back with COPY ------

P9=e2e9_$RUN        # topic prefix of scenario 9

# The table of scenario 9: a composite key (int8, text) and a column of each
# common type. Unconstrained NUMERIC (n) is compared by value: precise mode
# drops its trailing fraction zeros (README, "Known differences").
types_table_sql() {
    cat <<'SQL'
CREATE TABLE public.alltypes (
    k8    int8,
    kt    text,
    i2    int2,
    i4    int4,
    i8    int8,
    f4    float4,
    f8    float8,
    n102  numeric(10,2),
    n3810 numeric(38,10),
    n     numeric,
    t     text,
    vc    varchar(12),
    b     bytea,
    u     uuid,
    j     json,
    jb    jsonb,
    d     date,
    tm    time,
    ts    timestamp,
    tstz  timestamptz,
    bo    boolean,
    ia    int[],
    ta    text[],
    PRIMARY KEY (k8, kt)
);
ALTER TABLE public.alltypes OWNER TO shop_owners;
SQL
}

# The rows before the connector (its snapshot reads them): the limits of
# each type, NaN and the infinities, text with every awkward character (a
# quote, an apostrophe, a comma, LF, CR, a tab, backslashes, non-ASCII, an
# emoji, the string \N, the empty string next to NULL), bytea with zero bytes,
# json whose spacing json keeps and jsonb does not, a row of NULLs, keys with a
# comma, quotes and a newline; then 300 generated rows.
types_rows_sql() {
    cat <<'SQL'
INSERT INTO public.alltypes VALUES
 (-9223372036854775808, 'min', -32768, -2147483648, -9223372036854775808, '-Infinity', '-Infinity',
  -99999999.99, -9999999999999999999999999999.9999999999, '-0.000000000000000000000000000001',
  'plain', '', '\x00', '00000000-0000-0000-0000-000000000000', '[]', '[]',
  '0001-01-01', '00:00:00', '0001-01-01 00:00:00', '0001-01-01 00:00:00+00', false, '{}', '{}'),
 (9223372036854775807, 'max', 32767, 2147483647, 9223372036854775807, 'Infinity', 'Infinity',
  99999999.99, 9999999999999999999999999999.9999999999, '12345678901234567890.123456789012345678901234567890',
  'x', 'twelve chars', '\x00ff00017f80', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '{"a": [1, 2.50, "x"],  "b" : null}', '{"a": [1, 2.50, "x"],  "b" : null}',
  '9999-12-31', '23:59:59.999999', '9999-12-31 23:59:59.999999', '9999-12-31 23:59:59.999999+00', true,
  '{-2147483648,NULL,2147483647}', '{"a b","c,d",NULL,"q\"x","","NULL","\\\\"}'),
 (0, 'nan', 0, 0, 0, 'NaN', 'NaN', 0, 0, 'NaN',
  E'quote " apostrophe '' comma , newline \n CR \r tab \t backslash \\ end', 'äöü€日本😀', '\x',
  '123e4567-e89b-12d3-a456-426614174000', '"str"', '"str"',
  '2026-02-28', '12:34:56.5', '2026-01-01 00:00:02.123456', '2026-06-30 23:59:59.5+02', NULL, '{1}', '{"😀 émoji"}'),
 (1, 'floats', 1, 1, 1, 1e15, 1e15, 0.01, 0.0000000001, 103.0,
  E'\\N', E'\\N', '\x5c4e', NULL, 'null', 'null', NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (2, 'tiny', -1, -1, -1, 1.1, 1e-300, -0.01, -0.0000000001, 1e-20,
  '', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (3, 'denorm', NULL, NULL, NULL, 1e-45, 5e-324, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (4, 'nulls', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (5, E'key, "quoted"\n', 5, 5, 5, 3.4028235e38, 1.7976931348623157e308, 5.5, 5.5, 5.50,
  'CSV "", end', 'a,b', '\x0d0a2c22', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"k":"v\"q\\n"}', '{"k":"v\"q\\n"}',
  '2000-02-29', '00:00:00.000001', '2000-02-29 12:00:00', '2000-02-29 12:00:00-08', true, '{0,0}', '{"{}","a\\b"}'),
 (6, '', 0, 0, 0, '-0', '-0', '-0.00', 0, '-0.0', E'\r\n', ' ', '\x00000000', NULL, '{}', '{}',
  '1970-01-01', '24:00:00', '1970-01-01 00:00:00', '1970-01-01 00:00:00+00', false, '{NULL}', '{NULL,""}');
INSERT INTO public.alltypes
SELECT 1000 + i, 'gen,' || i || E'\n"', (i * 109 % 65536 - 32768)::int2, i * 7158271, i::int8 * 30744573456182584,
       (i / 7.0)::float4, (i / 7.0)::float8 * 1e10, round(i / 3.0, 2), (i / 3.0)::numeric(38,10), i / 3.0,
       repeat(E'x\\,"\n', i % 4) || md5(i::text), left(md5(i::text), 12), decode(md5(i::text), 'hex'),
       md5(i::text)::uuid, json_build_object('i', i, 's', E'a\nb "c"'), jsonb_build_object('i', i, 'f', i / 8.0),
       date '2000-01-01' + i * 37, time '00:00' + i * interval '4 minutes 1.25 seconds',
       timestamp '1990-01-01' + i * interval '1 day 1 hour 0.000001 second',
       timestamptz '1990-01-01 00:00+05' + i * interval '3 days 0.1 second', i % 3 = 0,
       ARRAY[i, NULL, -i], ARRAY['x' || i, NULL, '', 'a b']
FROM generate_series(1, 300) i;
SQL
}

# Years PostgreSQL has and ISO 8601 writes otherwise (scenario 9a): a
# timestamptz before year 1 arrives as Debezium's ZonedTimestamp with Java's
# astronomical year (44 BC as "-0043", 1 BC as "0000") and one past 9999
# signed ("+294276"), which COPY refuses; the CSV export writes them as
# PostgreSQL does. Timestamps and dates of those years, too. The snapshot
# reads a date before year 1 without its era (Debezium 3.6: '0045-03-15 BC'
# arrives as 0045-03-15 AD, README), so the BC date is set by a streamed
# update (types_era_changes_sql), whose number is right.
types_era_sql() {
    cat <<'SQL'
INSERT INTO public.alltypes (k8, kt, d, ts, tstz) VALUES
 (7, 'eras', NULL, '0045-03-15 10:00:00 BC', '0045-03-15 10:00:00.25+00 BC'),
 (8, 'one bc', NULL, '0001-12-31 23:59:59.5 BC', '0001-12-31 23:59:59.999999+00 BC'),
 (9, 'far', '10000-01-01', '10000-01-01 00:00:00', '294276-12-31 23:59:59.999999+00'),
 (10, 'julian day 0', NULL, '4714-11-24 00:00:00 BC', '4714-11-24 00:00:00+00 BC');
SQL
}

types_era_changes_sql() {
    cat <<'SQL'
INSERT INTO public.alltypes (k8, kt, d, ts, tstz)
SELECT k8 + 100, kt || ' streamed', d, ts, tstz FROM public.alltypes WHERE k8 BETWEEN 7 AND 10;
UPDATE public.alltypes SET d = '0045-03-15 BC' WHERE k8 = 107;
UPDATE public.alltypes SET d = '4714-11-24 BC', tstz = '0401-02-29 12:00:00+00 BC' WHERE k8 = 110;
UPDATE public.alltypes SET tstz = '10000-01-01 00:00:00+00' WHERE k8 = 9;
SQL
}

# What happens once the connector streams: the awkward rows again under other
# keys (so that both a snapshot read and a streamed insert carry each value),
# updates that set values to NULL and NULLs to values, NaN and an infinity
# set by an update, deletes, and a primary-key change (a delete of the old key
# and a create of the new one).
types_changes_sql() {
    cat <<'SQL'
INSERT INTO public.alltypes SELECT k8 + 100, kt || ' streamed', i2, i4, i8, f4, f8, n102, n3810, n, t, vc, b, u, j, jb,
       d, tm, ts, tstz, bo, ia, ta FROM public.alltypes WHERE k8 BETWEEN 0 AND 6;
UPDATE public.alltypes SET i2 = NULL, f8 = NULL, n = NULL, t = NULL, b = NULL, j = NULL, jb = NULL, d = NULL,
       ts = NULL, tstz = NULL, bo = NULL, ia = NULL, ta = NULL WHERE k8 BETWEEN 1001 AND 1300 AND k8 % 5 = 0;
UPDATE public.alltypes SET t = E'updated: \\N\r\n"q", \\\\ 😀', vc = '', b = '\x00', n = 'NaN', f4 = 'NaN',
       f8 = '-Infinity', ia = '{7,NULL}', ta = '{"}","{",NULL}', bo = false
 WHERE k8 BETWEEN 1001 AND 1300 AND k8 % 5 = 1;
UPDATE public.alltypes SET i2 = 32767, i4 = -2147483648, i8 = 9223372036854775807, n = 'NaN' WHERE k8 = 104;
DELETE FROM public.alltypes WHERE k8 BETWEEN 1001 AND 1300 AND k8 % 7 = 0;
INSERT INTO public.alltypes SELECT k8 + 200, kt, i2, i4, i8, f4, f8, n102, n3810, n, t, vc, b, u, j, jb,
       d, tm, ts, tstz, bo, ia, ta FROM public.alltypes WHERE k8 IN (0, 2, 5);
DELETE FROM public.alltypes WHERE k8 IN (200, 202, 205);
UPDATE public.alltypes SET kt = kt || ' moved' WHERE k8 IN (1003, 105);
SQL
}

# The columns of the comparison; JSON has no equality, so j is compared as
# text. In precise mode (no schema) Debezium sends an unconstrained NUMERIC
# NaN as null: the value is in no message, so the source's NaN is compared as
# NULL there (check "9 NaN ..." counts them).
types_cols() {
    local n=n
    [[ $E2E_DECIMAL_MODE == precise ]] && n="nullif(n, 'NaN') AS n"
    echo "k8, kt, i2, i4, i8, f4, f8, n102, n3810, $n, t, vc, b, u, j::text AS j, jb, d, tm, ts, tstz, bo, ia, ta"
}

# types_compare SRC COPY: (TABLE a EXCEPT ALL TABLE b) UNION ALL (TABLE b
# EXCEPT ALL TABLE a) over views of both tables is empty; prints the row
# count, or the differing rows (the first 6, each with its side).
types_compare() {
    local cols
    cols=$(types_cols)
    app_psql -c "CREATE OR REPLACE VIEW e2e9.src_v AS SELECT $cols FROM $1;
                 CREATE OR REPLACE VIEW e2e9.copy_v AS SELECT $cols FROM $2;" || return 1
    app_psql -c "CREATE TEMP TABLE diff AS (SELECT 'source only' AS side, * FROM (TABLE e2e9.src_v EXCEPT ALL TABLE e2e9.copy_v) a)
                     UNION ALL (SELECT 'loaded only', * FROM (TABLE e2e9.copy_v EXCEPT ALL TABLE e2e9.src_v) b);
                 SELECT CASE WHEN count(*) = 0 THEN (SELECT count(*) FROM $1)::text || ' rows equal (' || (SELECT count(*) FROM $2)::text || ' loaded)'
                             ELSE count(*) || ' rows differ (the first 6 below)' END FROM diff;
                 SELECT z.side || ': ' || (to_jsonb(z) - 'side')::text FROM diff z ORDER BY z.k8, z.kt, z.side LIMIT 6" \
        >"$WORK/types-compare.out" 2>&1 || {
        cat "$WORK/types-compare.out"
        return 1
    }
    cat "$WORK/types-compare.out"
    [[ $(head -n 1 "$WORK/types-compare.out") == *" rows equal "* ]]
}

# types_compare_text SRC COPY: the same on every column's text form (so that
# -0 and 0, or json's spacing, count), unconstrained NUMERIC without its
# trailing fraction zeros (trim_scale), as reconcile compares it.
types_compare_text() {
    local c cols='' n="trim_scale(n)::text"
    [[ $E2E_DECIMAL_MODE == precise ]] && n="trim_scale(nullif(n, 'NaN'))::text"
    for c in k8 kt i2 i4 i8 f4 f8 n102 n3810 n t vc b u j jb d tm ts tstz bo ia ta; do
        if [[ $c == n ]]; then cols+=", $n AS n"; else cols+="${cols:+, }$c::text AS $c"; fi
    done
    app_psql -c "SET extra_float_digits = 1; SET bytea_output = 'hex';
                 WITH d AS ((SELECT 'source only' AS side, s AS r FROM (SELECT $cols FROM $1 EXCEPT ALL SELECT $cols FROM $2) s)
                            UNION ALL (SELECT 'loaded only', s FROM (SELECT $cols FROM $2 EXCEPT ALL SELECT $cols FROM $1) s))
                 SELECT (SELECT count(*) FROM d) || ' rows differ as text'
                        || coalesce(': ' || (SELECT string_agg(side || ' ' || left(replace(r::text, E'\\n', '\\n'), 300), '; ') FROM (SELECT * FROM d LIMIT 6) z), '')" \
        >"$WORK/types-text.out" || {
        cat "$WORK/types-text.out"
        return 1
    }
    if [[ $(cat "$WORK/types-text.out") == "0 rows differ as text" ]]; then
        echo "every column's text equal"
        return 0
    fi
    cat "$WORK/types-text.out"
    return 1
}

# The source's NaNs of the unconstrained NUMERIC column, and what the loaded
# table holds for them (precise mode: NULL, Debezium sends null).
types_nan() {
    local want=NULL got
    [[ $E2E_DECIMAL_MODE == precise ]] || want=NaN
    got=$(app_psql -c "SELECT count(*) || ' NaN at the source, loaded as: ' || coalesce(string_agg(DISTINCT coalesce(c.n::text, 'NULL'), ','), '-')
                       FROM public.alltypes s JOIN e2e9.alltypes c USING (k8, kt) WHERE s.n = 'NaN'") || return 1
    same "unconstrained NUMERIC NaN" "$got" "${got%%:*}: $want" && echo "$got"
}

# types_reconcile DB: cdcstore reconcile of the table, accepting two known
# differences and nothing else:
#  - without a schema (the default configuration) Debezium sends a float4 as
#    Java 17's Float.toString, not always the shortest decimal (1e15::float4
#    arrives as 9.9999999E14, 1e-45 as 1.4E-45), and the decoder, which cannot
#    tell a float4 from a float8, keeps the double's text (999999990000000),
#    not PostgreSQL's (1e+15): the same float4, another text. Accepted when
#    both texts read back to the same float4. With schemas.enable=true the
#    schema says float32 and the decoder prints float4's text: no difference
#    is accepted.
#  - an unconstrained NUMERIC NaN arrives as null in precise mode (types_nan),
#    as "NAN" in string mode (E2E_WORKAROUNDS=1): PostgreSQL reads NAN as NaN
#    (COPY loads it back), but prints NaN, and the decoder cannot tell a
#    NUMERIC from a text column in string mode (both are "string" in the
#    schema), so it keeps the text.
types_reconcile() {
    local db=$1 out=$WORK/reconcile-9 rc n bad nf nn
    "$CDC" reconcile --db "$db" --table public.alltypes --source "$SRC" >"$out.out" 2>"$out.err"
    rc=$?
    n=$(app_psql -c "SELECT count(*) FROM public.alltypes")
    ((rc == 0)) && {
        echo "alltypes $n rows"
        return 0
    }
    if ((rc != 1)); then
        echo "public.alltypes: reconcile exited $rc: $(reason_of "$out.err")"
        tail_of "$out.err"
        return 1
    fi
    jq -R -r --arg f4 "$E2E_SCHEMAS" --arg mode "$E2E_DECIMAL_MODE" 'split("\t") | .[1] as $k
        | if .[0] != "different" then "\(.[0]) \($k)"
          else (.[2] | fromjson) as $a | (.[3] | fromjson) as $b
          | [$a | keys[] | select($a[.] != $b[.])] as $cols
          | ($cols - (if $f4 == "false" then ["f4"] else [] end)
                   - (if $b.n == "NaN" and (($mode == "precise" and $a.n == null) or ($mode == "string" and $a.n == "NAN"))
                      then ["n"] else [] end)) as $rest
          | if ($rest | length) > 0 then "\($k): column \($rest | join(",")) replica \([$rest[] as $c | $a[$c]]) source \([$rest[] as $c | $b[$c]])"
            else (if ($cols | index("n")) then "nan" else empty end),
                 (if ($cols | index("f4")) then "f4\t\($a.f4)\t\($b.f4)" else empty end) end end' \
        "$out.out" >"$out.known" || return 1
    bad=$(grep -v -P '^(nan|f4\t[^\t ]+\t[^\t ]+)$' "$out.known")
    if [[ -n $bad ]]; then
        echo "public.alltypes: reconcile exited 1: $(grep -c . <<<"$bad") differences beyond the known ones, e.g. $(head -n 1 <<<"$bad" | cut -c1-400)"
        head -n 5 <<<"$bad" | cut -c1-400
        return 1
    fi
    nf=$(grep -c '^f4' "$out.known")
    nn=$(grep -c '^nan$' "$out.known")
    if ((nf > 0)); then
        bad=$(awk -F'\t' '/^f4/ { printf "%s%s::float4 = %s::float4", (n++ ? " AND " : ""), q($2), q($3) }
                          function q(s) { return "'"'"'" s "'"'"'" }' "$out.known")
        [[ $(app_psql -c "SELECT $bad") == t ]] || {
            echo "public.alltypes: reconcile: f4 differs in value, not only in text: $(grep '^f4' "$out.known" | cut -f2,3 | tr '\t\n' '/ ')"
            return 1
        }
    fi
    local known=()
    ((nn > 0)) && known+=("$nn NaN sent as $([[ $E2E_DECIMAL_MODE == precise ]] && echo null || echo NAN)")
    ((nf > 0)) && known+=("the f4 text of $nf rows (same float4, replica/source: $(grep '^f4' "$out.known" | cut -f2,3 | sort -u | tr '\t\n' '/ ' | sed 's/ $//'))")
    echo "alltypes $n rows, equal but for the known: $(printf '%s; ' "${known[@]}" | sed 's/; $//')"
}

# types_load CSV: a fresh table e2e9.alltypes of the same definition, filled
# by COPY ... (FORMAT csv, HEADER) from the export.
types_load() {
    app_psql -c "CREATE SCHEMA e2e9; CREATE TABLE e2e9.alltypes (LIKE public.alltypes INCLUDING ALL)" &&
        app_psql -c "\\copy e2e9.alltypes FROM '$1' (FORMAT csv, HEADER)" &&
        echo "$(app_psql -c "SELECT count(*) FROM e2e9.alltypes") rows loaded"
}

# typed_load FILE TABLE: FILE (the CSV a reader printed) loaded by COPY into
# e2e9.TABLE, a fresh table of public.alltypes' definition: PostgreSQL parses
# each value in its column's type, so types_compare then compares values.
typed_load() {
    app_psql -c "CREATE SCHEMA IF NOT EXISTS e2e9; DROP TABLE IF EXISTS e2e9.$2;
                 CREATE TABLE e2e9.$2 (LIKE public.alltypes INCLUDING ALL)" &&
        app_psql -c "\\copy e2e9.$2 FROM '$1' (FORMAT csv, HEADER)" &&
        echo "$(app_psql -c "SELECT count(*) FROM e2e9.$2") rows loaded"
}

# typed_read READER PATH OUT [ARGS...]: tests/export/read_table.py's CSV of
# the Parquet file or Delta table PATH, through READER (pyarrow, duckdb,
# deltalake, spark), into OUT.
typed_read() {
    local reader=$1 path=$2 out=$3
    shift 3
    "$TEST_VENV/bin/python" "$ROOT/tests/export/read_table.py" --reader "$reader" --sort k8,kt "$@" "$path" \
        >"$out" 2>"$out.err" || {
        echo "read_table.py --reader $reader $* $path exited $?: $(tail -n 5 "$out.err" | tr '\n' ' ' | cut -c1-600)"
        return 1
    }
    echo "read"
}

# typed_equal READER PATH NAME [ARGS...]: read, load as e2e9.NAME, compare
# with public.alltypes.
typed_equal() {
    local reader=$1 path=$2 name=$3
    shift 3
    typed_read "$reader" "$path" "$WORK/$name.csv" "$@" && typed_load "$WORK/$name.csv" "$name" &&
        types_compare public.alltypes "e2e9.$name"
}

# typed_schema READER PATH 'COLUMN TYPE'...: the reader's types of the
# Parquet file or Delta table PATH (pyarrow: the Parquet logical types;
# deltalake: the Delta schema) are the ones given.
typed_schema() {
    local reader=$1 path=$2 out=$WORK/alltypes-schema-$1.txt want got=0 c
    shift 2
    "$TEST_VENV/bin/python" "$ROOT/tests/export/read_table.py" --reader "$reader" --schema "$path" >"$out" 2>&1 || {
        cat "$out"
        return 1
    }
    for want in "$@"; do
        c=${want%% *}
        if [[ $(awk -F'\t' -v c="$c" '$1 == c { sub(/\[day\]/, "", $2); print $2 }' "$out") != "${want#* }" ]]; then
            echo "column $c: expected ${want#* }, $reader reads: $(awk -F'\t' -v c="$c" '$1 == c' "$out")"
            got=1
        fi
    done
    ((got == 0)) && echo "types as expected: $(tr '\n' ';' <"$out" | cut -c1-300)"
}
PARQUET_TYPES=('k8 int64' 'i2 int16' 'i4 int32' 'f4 float' 'f8 double' 'n102 decimal128(10, 2)'
    'n3810 decimal128(38, 10)' 'n string' 'b binary' 'd date32' 'ts timestamp[us]' 'tstz timestamp[us, tz=UTC]'
    'bo bool' 'u extension<arrow.uuid>' 'j extension<arrow.json>' 'jb extension<arrow.json>' 'tm time64[us]'
    't string')
# Delta has no time, uuid or json type: those are strings (query/delta.c)
DELTA_TYPES=('k8 long' 'i2 short' 'i4 integer' 'f4 float' 'f8 double' 'n102 decimal(10,2)' 'n3810 decimal(38,10)'
    'n string' 'b binary' 'd date' 'ts timestamp_ntz' 'tstz timestamp' 'bo boolean' 'u string' 'j string'
    'jb string' 'tm string' 't string')

# The second export of the Delta table rewrote only the ranges that changed.
delta_refresh_report() {
    local line
    line=$(grep -E 'version 1: ' "$1") || {
        echo "no version 1 in: $(cat "$1")"
        return 1
    }
    echo "$line"
    [[ $line =~ ([0-9]+)\ of\ ([0-9]+)\ key\ ranges?\ changed ]] || return 1
    ((BASH_REMATCH[1] > 0 && BASH_REMATCH[1] < BASH_REMATCH[2])) || {
        echo "expected some but not all key ranges rewritten"
        return 1
    }
}

# The changes between the Delta table's versions 0 and 1: a few keys only.
types_refresh_sql() {
    cat <<'SQL'
UPDATE public.alltypes SET t = 'refreshed', f8 = 42.5 WHERE k8 IN (1010, 1011);
DELETE FROM public.alltypes WHERE k8 = 1012;
INSERT INTO public.alltypes (k8, kt, i4, t) VALUES (1013, 'new row', 13, 'inserted after version 0');
SQL
}

# scenario9_run a|b SCHEMAS: 9a without schemas (the stack's default): CSV
# loaded back with COPY; 9b with schemas.enable=true and precise decimals,
# where every column's type is known: CSV, then Parquet read by pyarrow and
# DuckDB, then a Delta table read by deltalake and Spark, refreshed after a
# few changes (only the changed key ranges rewritten; version 0 still read
# by time travel), then refreshed after a schema change.
scenario9_run() {
    local v=$1 E2E_SCHEMAS=$2 E2E_DECIMAL_MODE=${E2E_DECIMAL_MODE}
    [[ $v == b ]] && E2E_DECIMAL_MODE=precise
    e2e_log "scenario 9$v: a table of every common type, exported and read back (schemas.enable=$E2E_SCHEMAS)"
    # topics, create_topics, wait_drained and reconcile_all see only this table
    local -a E2E_TABLES=(alltypes)
    local P9=e2e9${v}_$RUN r9=$WORK/replica-9$v g9=e2e9$v-$RUN ing T=public.alltypes csv=$WORK/alltypes-9$v.csv
    local s=9$v pq=$WORK/alltypes-9$v.parquet dl=$WORK/alltypes-9$v.delta dv=$WORK/alltypes-9$v.dv.delta
    # The columns whose type the messages do not carry (the decoder's
    # declarations, as lib.sh's for the four tables): NUMERIC(p,s) scales in
    # precise mode; without schemas bytea (base64), date, time and timestamp
    # (numbers).
    local decl=()
    [[ $E2E_DECIMAL_MODE == precise && $E2E_SCHEMAS == false ]] && decl+=(--decimal "$T.n102=2" --decimal "$T.n3810=10")
    [[ $E2E_SCHEMAS == false ]] && decl+=(--column-type "$T.b=bytea" --column-type "$T.d=date"
        --column-type "$T.tm=time" --column-type "$T.ts=timestamp" --column-type "$T.tstz=timestamptz")
    # years before 1 and past 9999 in 9a only: the typed readers of 9b
    # (pyarrow's and Spark's datetimes) have no year 0 and none before it
    local era=: era_changes=:
    [[ $v == a ]] && era='app_psql -c "$(types_era_sql)"' era_changes='app_psql -c "$(types_era_changes_sql)"'
    check "$s setup: source reset, public.alltypes created and filled, topic created" \
        eval 'reset_source && app_psql -c "$(types_table_sql)" && app_psql -c "$(types_rows_sql)" && '"$era"' &&
              create_topics 1 "$P9"' ||
        return 1
    start_ingest ing "$r9" "$g9" "$WORK/ingest-9$v.log" "" "$P9" "${decl[@]}"
    check "$s connector registered (table.include.list=public.alltypes), snapshot done, streaming" eval '
        E2E_CONNECTOR_OPTS="${E2E_CONNECTOR_OPTS:-} table.include.list=public.alltypes" \
            register_connector e2e9$v "$P9" && wait_streaming e2e9$v 120' || return 1
    check "$s inserts, updates, deletes and key changes while streaming" \
        eval 'app_psql -c "$(types_changes_sql)" && '"$era_changes"
    check "$s drained" wait_drained "e2e9${v}_slot" "$g9" "$P9"
    check "$s ingest stopped by SIGTERM (exit 0)" stop_ingest "$ing"
    check "$s no dead letters" eval 'same "dead letters" "$(stat_of "$r9" total dead_letters)" 0'
    check "$s export as CSV" "$CDC" export --db "$r9" --table "$T" --output "$csv"
    app_psql -c "DROP SCHEMA IF EXISTS e2e9 CASCADE" >/dev/null 2>&1
    check "$s CSV loaded with COPY into e2e9.alltypes (same definition)" types_load "$csv"
    check "$s loaded table equals source (EXCEPT ALL both ways; json as text)" types_compare public.alltypes e2e9.alltypes
    check "$s loaded table equals source as text (numeric n without trailing zeros)" \
        types_compare_text public.alltypes e2e9.alltypes
    check "$s unconstrained NUMERIC NaN loaded back (precise mode: NULL, Debezium sends null)" types_nan
    check "$s reconcile: replica equals source" types_reconcile "$r9"
    [[ $v == b ]] || return 0

    # Parquet and Delta, read by readers this project did not write.
    check "$s test venv (duckdb, pyarrow, deltalake, pyspark, delta-spark)" venv_ensure_all || return 1
    check "$s export as Parquet (snappy, row groups of 100 rows)" \
        "$CDC" export --db "$r9" --table "$T" --format parquet --compression snappy --row-group-rows 100 --output "$pq"
    check "$s Parquet logical types (pyarrow)" typed_schema pyarrow "$pq" "${PARQUET_TYPES[@]}"
    check "$s Parquet read by pyarrow equals source" typed_equal pyarrow "$pq" pq_pyarrow
    check "$s Parquet read by DuckDB equals source" typed_equal duckdb "$pq" pq_duckdb
    check "$s export as a Delta table (ranges of 50 rows): version 0" \
        eval '"$CDC" export --db "$r9" --table "$T" --format delta --file-rows 50 --output "$dl" >"$WORK/delta-9b-0.out" && cat "$WORK/delta-9b-0.out"'
    check "$s Delta version 0 read by deltalake equals source" typed_equal deltalake "$dl" dl0_deltalake
    check "$s Delta schema types (deltalake)" typed_schema deltalake "$dl" "${DELTA_TYPES[@]}"
    check "$s Delta version 0 read by Spark (delta-spark) equals source" typed_equal spark "$dl" dl0_spark
    check "$s export as a Delta table with deletion vectors: version 0" \
        "$CDC" export --db "$r9" --table "$T" --format delta --file-rows 50 --deletion-vectors --output "$dv"
    app_psql -c "DROP TABLE IF EXISTS e2e9.at_v0; CREATE TABLE e2e9.at_v0 AS TABLE public.alltypes" >/dev/null
    # A few changes, streamed into the same replica.
    start_ingest ing "$r9" "$g9" "$WORK/ingest-9$v-2.log" "" "$P9" "${decl[@]}"
    check "$s updates, a delete and an insert among keys 1010 to 1013" app_psql -c "$(types_refresh_sql)"
    check "$s drained (2)" wait_drained "e2e9${v}_slot" "$g9" "$P9"
    check "$s ingest stopped by SIGTERM (exit 0) (2)" stop_ingest "$ing"
    check "$s Delta refresh: version 1 rewrites only the changed key ranges" \
        eval '"$CDC" export --db "$r9" --table "$T" --format delta --file-rows 50 --output "$dl" >"$WORK/delta-9b-1.out" && delta_refresh_report "$WORK/delta-9b-1.out"'
    check "$s Delta version 1 read by deltalake equals source" typed_equal deltalake "$dl" dl1_deltalake
    check "$s Delta version 1 read by Spark equals source" typed_equal spark "$dl" dl1_spark
    check "$s Delta refresh by deletion vectors: version 1 marks the changed keys' old rows deleted" \
        eval '"$CDC" export --db "$r9" --table "$T" --format delta --output "$dv" | tee /dev/stderr |
              grep -q "version 1: .* marked deleted in"'
    check "$s Delta with deletion vectors, version 1, read by deltalake (QueryBuilder) equals source" \
        typed_equal deltalake "$dv" dv1_deltalake
    check "$s Delta with deletion vectors, version 1, read by Spark equals source" typed_equal spark "$dv" dv1_spark
    check "$s Delta with deletion vectors, version 0 (time travel) read by Spark equals the source before" \
        eval 'typed_read spark "$dv" "$WORK/dv0tt.csv" --version 0 && typed_load "$WORK/dv0tt.csv" dv0tt &&
              types_compare e2e9.at_v0 e2e9.dv0tt'
    check "$s Delta version 0 (time travel) read by Spark equals the source before the changes" \
        eval 'typed_read spark "$dl" "$WORK/dl0tt.csv" --version 0 && typed_load "$WORK/dl0tt.csv" dl0tt &&
              types_compare e2e9.at_v0 e2e9.dl0tt'
    check "$s a second refresh with nothing changed commits nothing" \
        eval '"$CDC" export --db "$r9" --table "$T" --format delta --file-rows 50 --output "$dl" | tee /dev/stderr | grep -q "unchanged"'
    # A schema change: a column added with a default.
    start_ingest ing "$r9" "$g9" "$WORK/ingest-9$v-3.log" "" "$P9" "${decl[@]}"
    check "$s ALTER TABLE ADD COLUMN extra int DEFAULT 7, one row updated" \
        app_psql -c "ALTER TABLE public.alltypes ADD COLUMN extra int DEFAULT 7; UPDATE public.alltypes SET extra = 8 WHERE k8 = 1013"
    check "$s drained (3)" wait_drained "e2e9${v}_slot" "$g9" "$P9"
    check "$s ingest stopped by SIGTERM (exit 0) (3)" stop_ingest "$ing"
    check "$s Delta refresh after the schema change: version 2, every file rewritten" \
        eval '"$CDC" export --db "$r9" --table "$T" --format delta --file-rows 50 --output "$dl" | tee /dev/stderr | grep -q "version 2 (schema changed"'
    check "$s Delta version 2 read by Spark: column extra, 7 everywhere but 8 in one row" \
        eval 'typed_read spark "$dl" "$WORK/dl2.csv" --columns k8,extra && delta_extra_check "$WORK/dl2.csv"'
    check "$s Delta with deletion vectors after the schema change: version 2, written anew" \
        eval '"$CDC" export --db "$r9" --table "$T" --format delta --output "$dv" | tee /dev/stderr | grep -q "version 2 (schema changed"'
    check "$s Delta with deletion vectors, version 2, read by deltalake equals source" \
        typed_equal deltalake "$dv" dv2_deltalake
}

# The extra column as Spark read it: every row 7 but key 1013, which is 8.
delta_extra_check() {
    local n want
    want=$(app_psql -c "SELECT count(*) FROM public.alltypes")
    n=$(awk -F, 'NR > 1 && (($1 == 1013 && $2 == 8) || ($1 != 1013 && $2 == 7))' "$1" | wc -l)
    same "rows with the expected extra" "$n" "$want" && echo "$n rows with extra as expected"
}

scenario9() {
    [[ -n $MAIN_PID ]] && main_ingest_stop >/dev/null
    scenario9_run a false
    scenario9_run b true
}

# ---- 10: schema changes under load -------------------------------------------

# Scenario 10 runs twice, on a fresh database, connector, topics and replica
# each time: 10a with the JSON converters' schemas.enable=false (the stack's
# default), 10b with schemas.enable=true; decimal.handling.mode is precise in
# both (in string mode a NUMERIC's scale is in no schema, and the narrowing
# of 10b's last step would not be seen).
# public.inventory: 5,000 rows snapshotted; qty int4 becomes int8, note is
# dropped, label renamed title, region added with DEFAULT 'eu'. Every insert
# and update draws seq from public.inventory_seq, so a row's seq says whether
# it was touched after an ALTER TABLE: each ALTER reads the sequence in its own
# transaction, which holds the table's lock (no change is running) and commits
# before any later change can draw a value. public.bystander is a second
# captured table, whose changes must still apply while public.inventory is
# stopped (10b).
inventory_sql() {
    cat <<'SQL'
CREATE SEQUENCE public.inventory_seq;
CREATE TABLE public.inventory (
    id     int PRIMARY KEY,
    qty    int4 NOT NULL,
    amount numeric(10,2),
    note   text,
    label  text,
    seq    bigint NOT NULL DEFAULT nextval('public.inventory_seq')
);
ALTER TABLE public.inventory OWNER TO shop_owners;
CREATE TABLE public.bystander (id int PRIMARY KEY, v int);
ALTER TABLE public.bystander OWNER TO shop_owners;
INSERT INTO public.bystander SELECT i, 0 FROM generate_series(1, 10) i;
INSERT INTO public.inventory (id, qty, amount, note, label)
SELECT i, i % 1000, round(i / 7.0, 2), 'note ' || i, 'label ' || i FROM generate_series(1, 5000) i;
-- The load's stop flag (not captured).
CREATE TABLE public.inventory_ctl (stop boolean NOT NULL);
INSERT INTO public.inventory_ctl VALUES (false);
-- The load: each transaction updates three rows (one of them maybe inserted
-- by the load), inserts one, deletes one, then sleeps 10 ms; it names only
-- the columns no ALTER TABLE of the scenario drops or renames.
CREATE PROCEDURE public.inventory_load() LANGUAGE plpgsql AS $$
DECLARE
    i int := 0;
BEGIN
    LOOP
        EXIT WHEN (SELECT stop FROM public.inventory_ctl);
        i := i + 1;
        UPDATE public.inventory SET qty = qty + 1, amount = amount + 0.01, seq = nextval('public.inventory_seq')
         WHERE id IN (1 + floor(random() * 5000)::int, 1 + floor(random() * 5000)::int,
                      100000 + 1 + floor(random() * i)::int);
        INSERT INTO public.inventory (id, qty, amount) VALUES (100000 + i, i, i / 100.0);
        DELETE FROM public.inventory WHERE id = 1 + floor(random() * 5000)::int;
        COMMIT;
        PERFORM pg_sleep(0.01);
    END LOOP;
END $$;
SQL
}

# alter_marked NAME SQL [SQL2]: runs one ALTER TABLE and reads the sequence
# in its transaction; the mark (every row with seq above it was written after
# the ALTER) goes into INV_MARK[NAME] and is printed. SQL2 runs after, in the
# same transaction (which holds the table's lock: no deadlock with the load).
declare -A INV_MARK=()
alter_marked() {
    local m
    m=$(app_psql -c "BEGIN; $2; SELECT last_value FROM public.inventory_seq; ${3:-} COMMIT;") || return 1
    [[ $m =~ ^[0-9]+$ ]] || {
        echo "no sequence value read with the ALTER: '$m'"
        return 1
    }
    INV_MARK[$1]=$m
    echo "rows with seq <= $m untouched since, $(app_psql -c "SELECT count(*) FROM public.inventory WHERE seq <= $m") of $(app_psql -c "SELECT count(*) FROM public.inventory")"
}

# inv_load_stop PID: sets the stop flag, waits for the load's psql; prints the
# number of transactions it made (inserts).
inv_load_stop() {
    app_psql -c "UPDATE public.inventory_ctl SET stop = true" || return 1
    wait "$1" || {
        echo "the load (CALL public.inventory_load()) exited $?: $(reason_of "$WORK/load-10$2.err")"
        tail_of "$WORK/load-10$2.err"
        return 1
    }
    echo "$(app_psql -c "SELECT count(*) FROM public.inventory WHERE id > 100000") rows inserted, $(app_psql -c "SELECT last_value FROM public.inventory_seq") sequence values drawn"
}

# inv_header CSV: the export's header is the source's current column list
# (in the replica's order): no note, no label, title and region present.
inv_header() {
    local h want
    h=$(head -n 1 "$1")
    want=$(app_psql -c "SELECT string_agg(attname, ',' ORDER BY attname) FROM pg_attribute
                        WHERE attrelid = 'public.inventory'::regclass AND attnum > 0 AND NOT attisdropped")
    same "export header's columns (sorted)" "$(tr ',' '\n' <<<"$h" | sort | paste -sd,)" "$want" || return 1
    echo "header $h"
}

# inv_no_value NDJSON COL...: no row of the ndjson export has a value for the
# columns.
inv_no_value() {
    local f=$1 c n
    shift
    for c in "$@"; do
        n=$(jq -c --arg c "$c" 'select(has($c))' "$f" | wc -l)
        same "rows of the ndjson export with a value for $c" "$n" 0 || return 1
    done
    echo "$(wc -l <"$f") rows, none with $*"
}

# inv_load CSV: e2e10.inventory, a copy of public.inventory's current
# definition, filled by COPY with the columns of the export's header.
inv_load() {
    local cols
    cols=$(head -n 1 "$1")
    app_psql -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS e2e10 CASCADE; CREATE SCHEMA e2e10;
                 CREATE TABLE e2e10.inventory (LIKE public.inventory INCLUDING ALL)" &&
        app_psql -c "\\copy e2e10.inventory ($cols) FROM '$1' (FORMAT csv, HEADER)" &&
        echo "$(app_psql -c "SELECT count(*) FROM e2e10.inventory") rows loaded"
}

# inv_compare COLS: EXCEPT ALL both ways between the source and the loaded
# table over COLS is empty; prints the row count or the first differing rows.
inv_compare() {
    app_psql -c "CREATE TEMP TABLE diff AS (SELECT 'source only' AS side, * FROM (SELECT $1 FROM public.inventory EXCEPT ALL SELECT $1 FROM e2e10.inventory) a)
                     UNION ALL (SELECT 'loaded only', * FROM (SELECT $1 FROM e2e10.inventory EXCEPT ALL SELECT $1 FROM public.inventory) b);
                 SELECT CASE WHEN count(*) = 0 THEN (SELECT count(*) FROM public.inventory) || ' rows equal over $1'
                             ELSE count(*) || ' rows differ over $1 (the first 6 below)' END FROM diff;
                 SELECT z.side || ': ' || (to_jsonb(z) - 'side')::text FROM diff z ORDER BY z.id, z.side LIMIT 6" \
        >"$WORK/inv-compare.out" 2>&1 || {
        cat "$WORK/inv-compare.out"
        return 1
    }
    cat "$WORK/inv-compare.out"
    [[ $(head -n 1 "$WORK/inv-compare.out") == *" rows equal "* ]]
}

# inv_check_col COL MARK SCHEMAS: the loaded table's COL, row by row against
# the source's: equal in rows touched after the ALTER (seq > MARK); in rows
# untouched since, NULL, except region with schemas (the schema's default,
# 'eu', equal to the source's).
inv_check_col() {
    local c=$1 mark=$2 schemas=$3 want_old="l.$1 IS NULL"
    [[ $c == region && $schemas == true ]] && want_old="l.region IS NOT DISTINCT FROM s.region AND l.region = 'eu'"
    app_psql -c "SELECT count(*) FILTER (WHERE s.seq > $mark AND l.$c IS DISTINCT FROM s.$c)
                      + count(*) FILTER (WHERE s.seq <= $mark AND NOT ($want_old)) || ' ' ||
                        count(*) FILTER (WHERE s.seq > $mark) || ' ' || count(*) FILTER (WHERE s.seq <= $mark) || ' ' ||
                        count(*) FILTER (WHERE s.seq <= $mark AND s.$c IS NOT NULL)
                 FROM public.inventory s JOIN e2e10.inventory l USING (id)" >"$WORK/inv-col.out" || {
        cat "$WORK/inv-col.out"
        return 1
    }
    local bad touched old oldval
    read -r bad touched old oldval <"$WORK/inv-col.out"
    if ((bad != 0)); then
        echo "$c: $bad rows not as expected (touched after the ALTER: equal to the source; untouched: ${want_old/l./}); e.g.:"
        app_psql -c "SELECT s.id, s.seq, s.$c AS source, l.$c AS loaded FROM public.inventory s JOIN e2e10.inventory l USING (id)
                     WHERE (s.seq > $mark AND l.$c IS DISTINCT FROM s.$c) OR (s.seq <= $mark AND NOT ($want_old)) ORDER BY s.id LIMIT 5"
        return 1
    fi
    echo "$touched rows touched after the ALTER equal the source; $old untouched since (mark $mark) read $([[ $want_old == *eu* ]] && echo "'eu'" || echo NULL), $oldval of them non-NULL at the source"
}

# inv_warning ERRFILE SCHEMAS MARK: export's warning about rows with a column
# of unknown value: it counts the rows untouched since the rename (title
# unknown, with schemas too: the new name's default is not what they hold;
# without schemas those untouched since ADD COLUMN, region unknown too, are
# among them).
inv_warning() {
    local err=$1 n got
    n=$(app_psql -c "SELECT count(*) FROM public.inventory WHERE seq <= $3") || return 1
    local want="cdcstore export: warning: public.inventory: $n rows were written before a column appeared at the source, whose default no schema gave (or which a rename made); that column is written as NULL there. Re-read the table (an incremental snapshot) to fill it"
    got=$(grep 'warning' "$err")
    # The line's form is checked by inv_warning_line: here its text.
    same "export's warning" "${got%\\n}" "$want" || return 1
    echo "warning for $n rows (untouched since the rename)"
}

# inv_warning_line EXPORT_ERR RECONCILE_ERR: export's warning and
# reconcile's notes are lines of text, each ending with a newline and not
# with an escaped one.
inv_warning_line() {
    local w bad=0
    w=$(grep -h 'cdcstore export: warning\|cdcstore reconcile: note' "$1" "$2") || { echo "no warning in $1, no note in $2"; return 1; }
    while IFS= read -r l; do
        [[ $l == *'\n' ]] || continue
        ((bad++ == 0)) && echo "lines that end with the two characters '\\' 'n' (an escaped newline) before their newline:"
        echo "${l:0:40} ... ${l: -40}"
    done <<<"$w"
    ((bad == 0)) || return 1
    echo "$(wc -l <<<"$w") lines"
}

# inv_reconcile_notes ERRFILE SCHEMAS: reconcile notes the columns whose
# value it does not know in some rows: without schemas region and title;
# with schemas title (a rename: the default a schema gives the new name is
# not what the rows untouched since hold).
inv_reconcile_notes() {
    local got want=title
    got=$(sed -n 's/^cdcstore reconcile: note: column \([^ ]*\) appeared at the source after rows of the replica were written, and no schema gave its default (or a rename made it): those rows hold NULL for a value the replica does not know (re-read the table, e.g. an incremental snapshot, to fill it)\(\\n\)\{0,1\}$/\1/p' "$1" | sort | paste -sd,)
    [[ $2 == false ]] && want=region,title
    same "columns reconcile notes as of unknown value" "${got:-(none)}" "${want:-(none)}" || { grep note "$1" | head -n 3 | cut -c1-300; return 1; }
    echo "${got:-no note}"
}

# inv_reconcile DB SCHEMAS: cdcstore reconcile of public.inventory; the only
# differences accepted are the expected ones, row by row and column by
# column: title NULL in rows untouched since the rename whose source value
# is not NULL, and without schemas region NULL in rows untouched since the
# ADD COLUMN.
inv_reconcile() {
    local db=$1 schemas=$2 out=$WORK/reconcile-10$3 rc region_sql='NULL'
    "$CDC" reconcile --db "$db" --table public.inventory --source "$SRC" >"$out.out" 2>"$out.err"
    rc=$?
    if ((rc != 0 && rc != 1)); then
        echo "public.inventory: reconcile exited $rc: $(reason_of "$out.err")"
        tail_of "$out.err"
        return 1
    fi
    jq -R -r 'split("\t") | (.[1] | (fromjson? // .) | if type == "array" then .[0] elif type == "object" then .id else . end) as $k
        | if .[0] != "different" then "\($k)\t\(.[0])"
          else (.[2] | fromjson) as $a | (.[3] | fromjson) as $b
          | "\($k)\t\([($a + $b) | keys[] | select($a[.] != $b[.])] | join(","))" end' "$out.out" | sort >"$out.got" ||
        { echo "reconcile's output unreadable: $(head -n 1 "$out.out" | cut -c1-300)"; return 1; }
    [[ $schemas == false ]] && region_sql="CASE WHEN seq <= ${INV_MARK[add]} THEN 'region' END"
    app_psql -c "SELECT id || E'\t' || concat_ws(',', $region_sql,
                        CASE WHEN seq <= ${INV_MARK[rename]} AND title IS NOT NULL THEN 'title' END)
                 FROM public.inventory
                 WHERE ($region_sql) IS NOT NULL OR (seq <= ${INV_MARK[rename]} AND title IS NOT NULL)" | sort >"$out.want" || return 1
    if ! diff "$out.want" "$out.got" >"$out.diff"; then
        echo "reconcile (exit $rc): $(grep -c '^>' "$out.diff") differences not expected, $(grep -c '^<' "$out.diff") expected and not found (< expected, > found: key, columns)"
        head -n 8 "$out.diff"
        return 1
    fi
    echo "reconcile exit $rc: exactly the expected differences: $(cut -f2 "$out.got" | sort | uniq -c | awk '{ printf "%s%s rows %s", (NR > 1 ? ", " : ""), $1, $2 }')"
}

# inv_stopped DB: `cdcstore tables` shows public.inventory stopped, the
# reason naming amount and both types; public.bystander not stopped.
inv_stopped() {
    local out
    out=$("$CDC" tables --db "$1") || { echo "cdcstore tables exited $?"; return 1; }
    local line
    line=$(grep -P '^public\.inventory\t' <<<"$out")
    [[ $line =~ stopped:\ .*column\ amount\ changed\ type\ from\ decimal:2(:[0-9]+)?\ to\ decimal:0(:[0-9]+)? ]] || {
        echo "public.inventory not shown stopped for amount decimal:2 -> decimal:0: ${line:-no line}"
        echo "$out"
        return 1
    }
    grep -q -P '^public\.bystander$' <<<"$out" || {
        echo "public.bystander missing or stopped: $out"
        return 1
    }
    echo "${line:0:200}"
}

# inv_dlq DB TOPIC N: the dead letters are the table's N events after the
# narrowing: the first names the change, the others say the table is
# stopped (each reason after the record's position, TOPIC[P]@OFFSET: ); none
# of another topic.
inv_dlq() {
    "$CDC" dlq list --db "$1" --json >"$WORK/dlq-10.json" || { echo "cdcstore dlq list exited $?"; return 1; }
    jq -r --arg t "$2" 'if .topic != $t then "other topic \(.topic)"
        elif (.reason | test("^\\Q\($t)\\E\\[\\d+\\]@\\d+: table public\\.inventory is stopped: column amount changed type from decimal:2(:\\d+)? to decimal:0(:\\d+)?")) then "stopped"
        elif (.reason | test("^\\Q\($t)\\E\\[\\d+\\]@\\d+: column amount changed type from decimal:2(:\\d+)? to decimal:0(:\\d+)?")) then "change"
        else "other reason: \(.reason)" end' "$WORK/dlq-10.json" | sort | uniq -c | awk '{ $1 = $1; print }' >"$WORK/dlq-10.sum"
    same "dead letters" "$(paste -sd';' "$WORK/dlq-10.sum")" "1 change;$(($3 - 1)) stopped" || return 1
    echo "$(paste -sd';' "$WORK/dlq-10.sum")"
}

# scenario10_run a|b SCHEMAS
scenario10_run() {
    local v=$1 E2E_SCHEMAS=$2 E2E_DECIMAL_MODE=precise
    local -a E2E_TABLES=(inventory bystander) E2E_DECIMALS=()
    local p=e2e10${v}_$RUN g=e2e10$v-$RUN r=$WORK/replica-10$v ing load n csv=$WORK/inventory-10$v.csv
    local s="10$v" all='id, qty, amount, seq, region, title' cols
    INV_MARK=()
    # Without schemas the scale of amount is in no message.
    [[ $E2E_SCHEMAS == false ]] && E2E_DECIMALS=(--decimal public.inventory.amount=2)
    e2e_log "scenario $s: schema changes under load, schemas.enable=$E2E_SCHEMAS"
    check "$s setup: source reset, public.inventory (5000 rows) and public.bystander, topics created" \
        eval 'reset_source && app_psql -c "$(inventory_sql)" && create_topics 1 "$p"' || return 1
    start_ingest ing "$r" "$g" "$WORK/ingest-10$v.log" "" "$p"
    check "$s connector registered (schemas.enable=$E2E_SCHEMAS), snapshot done, streaming" eval '
        E2E_CONNECTOR_OPTS="${E2E_CONNECTOR_OPTS:-} table.include.list=public.inventory,public.bystander" \
            register_connector "e2e10$v" "$p" && wait_streaming "e2e10$v" 120' || return 1
    app_psql -c "CALL public.inventory_load()" >"$WORK/load-10$v.out" 2>"$WORK/load-10$v.err" &
    load=$!
    E2E_PIDS+=("$load")
    sleep 2
    check "$s (1) ADD COLUMN region text DEFAULT 'eu' under load, then region 'us' in rows id % 97 = 0" \
        alter_marked add "ALTER TABLE public.inventory ADD COLUMN region text DEFAULT 'eu'" \
        "UPDATE public.inventory SET region = 'us', seq = nextval('public.inventory_seq') WHERE id % 97 = 0;"
    sleep 2
    check "$s (2) ALTER COLUMN qty TYPE bigint under load" \
        alter_marked qty "ALTER TABLE public.inventory ALTER COLUMN qty TYPE bigint"
    sleep 2
    check "$s (3) DROP COLUMN note under load" alter_marked drop "ALTER TABLE public.inventory DROP COLUMN note"
    sleep 2
    check "$s (4) RENAME COLUMN label TO title under load" \
        alter_marked rename "ALTER TABLE public.inventory RENAME COLUMN label TO title"
    sleep 2
    check "$s load stopped" inv_load_stop "$load" "$v"
    check "$s drained" wait_drained "e2e10${v}_slot" "$g" "$p"
    check "$s ingest stopped by SIGTERM (exit 0)" stop_ingest "$ing"
    check "$s no dead letters" eval 'same "dead letters" "$(stat_of "$r" total dead_letters)" 0'
    check "$s export as CSV" eval '"$CDC" export --db "$r" --table public.inventory --output "$csv" 2>"$csv.err" || { echo "exit $?: $(cat "$csv.err")"; false; }'
    check "$s export as ndjson" eval '"$CDC" export --db "$r" --table public.inventory --format ndjson --output "$csv.ndjson" 2>/dev/null'
    check "$s export's warning on rows of unknown column value" inv_warning "$csv.err" "$E2E_SCHEMAS" "${INV_MARK[rename]:-0}"
    check "$s export's header: the source's current columns (no note, title not label)" inv_header "$csv"
    check "$s no exported row has a value for note or label" inv_no_value "$csv.ndjson" note label
    check "$s CSV loaded with COPY into e2e10.inventory (the current definition)" inv_load "$csv"
    cols='id, qty, amount, seq'
    [[ $E2E_SCHEMAS == true ]] && cols+=', region'
    check "$s loaded table equals source over $cols (EXCEPT ALL both ways)" inv_compare "$cols"
    [[ $E2E_SCHEMAS == false ]] &&
        check "$s region: NULL in rows untouched since ADD COLUMN, else the source's" \
            inv_check_col region "${INV_MARK[add]:-0}" "$E2E_SCHEMAS"
    check "$s title (renamed label): NULL in rows untouched since the rename, else the source's" \
        inv_check_col title "${INV_MARK[rename]:-0}" "$E2E_SCHEMAS"
    check "$s reconcile: equal but for the expected columns of untouched rows" inv_reconcile "$r" "$E2E_SCHEMAS" "$v"
    check "$s reconcile's notes: the columns of unknown value" inv_reconcile_notes "$WORK/reconcile-10$v.err" "$E2E_SCHEMAS"
    [[ $E2E_SCHEMAS == false ]] && check "$s export's warning and reconcile's notes are lines (no escaped newline)" \
        inv_warning_line "$csv.err" "$WORK/reconcile-10$v.err"
    [[ $E2E_SCHEMAS == true ]] || return 0

    # (5) A narrowing type change stops the table; the other table applies.
    start_ingest ing "$r" "$g" "$WORK/ingest-10$v-2.log" "" "$p"
    check "$s (5) ALTER COLUMN amount TYPE numeric(10,0), then two updates of public.inventory and one of public.bystander" \
        app_psql -c "ALTER TABLE public.inventory ALTER COLUMN amount TYPE numeric(10,0);
                     UPDATE public.inventory SET qty = qty + 1 WHERE id = (SELECT min(id) FROM public.inventory);
                     UPDATE public.bystander SET v = 42 WHERE id = 1;
                     UPDATE public.inventory SET qty = qty + 1 WHERE id = (SELECT max(id) FROM public.inventory);"
    check "$s drained" wait_drained "e2e10${v}_slot" "$g" "$p"
    check "$s ingest stopped by SIGTERM (exit 3: dead letters written)" eval 'stop_ingest "$ing" >"$WORK/stop-10.out"; rc=$?; same "ingest exit status" "$rc" 3 || cat "$WORK/stop-10.out"'
    check "$s tables: public.inventory stopped naming amount, decimal:2 and decimal:0" inv_stopped "$r"
    check "$s dead letters: the two updates of public.inventory after the change" inv_dlq "$r" "$p.public.inventory" 2
    check "$s public.bystander still applied (v = 42)" eval '
        "$CDC" get --db "$r" --table public.bystander "{\"id\":1}" >"$WORK/get-10.out" || { echo "get exited $?"; false; }
        jq -e ".row.v == \"42\"" "$WORK/get-10.out" >/dev/null || { echo "public.bystander id 1: $(head -c 300 "$WORK/get-10.out")"; false; }'
    check "$s resume (ingest stopped) clears the stop" eval '
        "$CDC" resume --db "$r" --table public.inventory >"$WORK/resume-10.out" 2>&1 || { echo "resume exited $?: $(cat "$WORK/resume-10.out")"; false; }
        grep -q "public.inventory resumed" "$WORK/resume-10.out" || { echo "resume said: $(cat "$WORK/resume-10.out")"; false; }
        ! "$CDC" tables --db "$r" | grep -q stopped || { echo "still stopped: $("$CDC" tables --db "$r")"; false; }'
    # After resume the table's later events apply again (under the new type).
    start_ingest ing "$r" "$g" "$WORK/ingest-10$v-3.log" "" "$p"
    local id
    id=$(app_psql -c "SELECT min(id) FROM public.inventory")
    check "$s an update after resume" app_psql -c "UPDATE public.inventory SET amount = 7, qty = 0 WHERE id = $id"
    check "$s drained" wait_drained "e2e10${v}_slot" "$g" "$p"
    check "$s ingest stopped by SIGTERM (exit 0)" stop_ingest "$ing"
    check "$s the update after resume applied (id $id: amount 7, qty 0), no new dead letter" eval '
        "$CDC" get --db "$r" --table public.inventory "{\"id\":$id}" >"$WORK/get-10-2.out" || { echo "get exited $?"; false; }
        jq -e ".row.amount == \"7\" and .row.qty == \"0\"" "$WORK/get-10-2.out" >/dev/null || { echo "public.inventory id $id: $(head -c 300 "$WORK/get-10-2.out")"; false; }
        same "dead letters" "$(stat_of "$r" total dead_letters)" 2'
}

scenario10() {
    [[ -n $MAIN_PID ]] && main_ingest_stop >/dev/null
    scenario10_run a false
    scenario10_run b true
}

# ---- Scenario 11: a table without a primary key -------------------------------
# Debezium keys a change by the table's primary key or message.key.columns; a
# table with neither gets records without a Kafka key. The replica cannot tell
# such rows apart (two rows may share every column), so each change goes to
# the dead-letter store with the fix spelled out; with message.key.columns
# set as the dead letter says, the same table replicates.

# nokey_dlq DB TOPIC N: N dead letters, each of TOPIC with its position and
# the reason naming the table and the fix.
nokey_dlq() {
    "$CDC" dlq list --db "$1" --json >"$WORK/dlq-11.json" || { echo "cdcstore dlq list exited $?"; return 1; }
    jq -r --arg t "$2" 'if .topic != $t then "other topic \(.topic)"
        elif (.reason | test("^\\Q\($t)\\E\\[0\\]@\\d+: table public\\.nokey: the Kafka record has no key: .*primary key.*REPLICA IDENTITY.*message\\.key\\.columns \\(e\\.g\\. public\\.nokey:id\\)")) then "no key"
        else "other reason: \(.reason)" end' "$WORK/dlq-11.json" | sort | uniq -c | awk '{ $1 = $1; print }' >"$WORK/dlq-11.sum"
    same "dead letters" "$(paste -sd';' "$WORK/dlq-11.sum")" "$3 no key" || return 1
    echo "$(paste -sd';' "$WORK/dlq-11.sum"); e.g. $(jq -r '.reason' "$WORK/dlq-11.json" | head -n 1 | cut -c1-200)"
}

# nokey_equal DB: the replica's export of public.nokey equals the source's rows.
nokey_equal() {
    "$CDC" export --db "$1" --table public.nokey --output "$WORK/nokey-11.csv" 2>"$WORK/nokey-11.err" ||
        { echo "export exited $?: $(cat "$WORK/nokey-11.err")"; return 1; }
    app_psql -c "COPY (SELECT id, v FROM public.nokey ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)" >"$WORK/nokey-11.src"
    cmp -s "$WORK/nokey-11.csv" "$WORK/nokey-11.src" ||
        { echo "replica/source differ: $(diff "$WORK/nokey-11.csv" "$WORK/nokey-11.src" | head -n 5 | tr '\n' ' ')"; return 1; }
    echo "$(($(wc -l <"$WORK/nokey-11.src") - 1)) rows equal"
}

scenario11() {
    [[ -n $MAIN_PID ]] && main_ingest_stop >/dev/null
    local -a E2E_TABLES=(nokey) E2E_DECIMALS=()
    local p=e2e11a_$RUN g=e2e11a-$RUN r=$WORK/replica-11a ing
    e2e_log "scenario 11: a table without a primary key (no Kafka key), then keyed by message.key.columns"
    check "11 setup: source reset, public.nokey (no primary key, REPLICA IDENTITY FULL, 3 rows), topic created" \
        eval 'reset_source && app_psql -c "CREATE TABLE public.nokey (id int NOT NULL, v text);
            ALTER TABLE public.nokey REPLICA IDENTITY FULL; ALTER TABLE public.nokey OWNER TO shop_owners;
            INSERT INTO public.nokey VALUES (1, '"'a'"'), (2, '"'b'"'), (3, '"'c'"')" && create_topics 1 "$p"' || return 1
    start_ingest ing "$r" "$g" "$WORK/ingest-11a.log" "" "$p"
    check "11 connector registered (table.include.list=public.nokey), snapshot done, streaming" eval '
        E2E_CONNECTOR_OPTS="${E2E_CONNECTOR_OPTS:-} table.include.list=public.nokey" \
            register_connector e2e11a "$p" && wait_streaming e2e11a 120' || return 1
    check "11 an insert, an update and a delete" app_psql -c "INSERT INTO public.nokey VALUES (4, 'd');
        UPDATE public.nokey SET v = 'B' WHERE id = 2; DELETE FROM public.nokey WHERE id = 3"
    check "11 drained" wait_drained e2e11a_slot "$g" "$p"
    check "11 ingest stopped by SIGTERM (exit 3: dead letters written)" eval 'stop_ingest "$ing" >"$WORK/stop-11.out"; rc=$?; same "ingest exit status" "$rc" 3 || cat "$WORK/stop-11.out"'
    check "11 dead letters: the 3 snapshot reads and the 3 changes, each naming the table and the fix" \
        nokey_dlq "$r" "$p.public.nokey" 6
    check "11 no row of public.nokey applied" eval 'same "rows applied" "$(stat_of "$r" public.nokey applied)" 0'
    # The fix the dead letters name: message.key.columns (id is unique here).
    p=e2e11b_$RUN g=e2e11b-$RUN r=$WORK/replica-11b
    check "11 with message.key.columns=public.nokey:id: connector registered, snapshot done, streaming" eval '
        create_topics 1 "$p" && "$CONN" delete e2e11a >>"$WORK/connector.log" 2>&1 &&
        E2E_CONNECTOR_OPTS="${E2E_CONNECTOR_OPTS:-} table.include.list=public.nokey message.key.columns=public.nokey:id" \
            register_connector e2e11b "$p" && wait_streaming e2e11b 120' || return 1
    start_ingest ing "$r" "$g" "$WORK/ingest-11b.log" "" "$p"
    check "11 an update and a delete, keyed" app_psql -c "UPDATE public.nokey SET v = 'A' WHERE id = 1;
        DELETE FROM public.nokey WHERE id = 4"
    check "11 drained (keyed)" wait_drained e2e11b_slot "$g" "$p"
    check "11 ingest stopped by SIGTERM (exit 0)" stop_ingest "$ing"
    check "11 no dead letters with message.key.columns" eval 'same "dead letters" "$(stat_of "$r" total dead_letters)" 0'
    check "11 public.nokey equals the source" nokey_equal "$r"
}

# recreate_topic NAME PREFIX: the connector deleted (offsets, slot and
# publication), its topic deleted and created again, empty.
recreate_topic() {
    "$CONN" delete "$1" >>"$WORK/connector.log" 2>&1 || { echo "connector.sh delete $1 failed"; return 1; }
    "$E2EK" "$KAFKA_BROKERS" delete-topics "$2" >/dev/null || return 1
    create_topics 1 "$2" && echo "topic $(topics "$2") created again, high watermark $(topic_hw "$2")"
}
topic_hw() { "$E2EK" "$KAFKA_BROKERS" hw $(topics "$1"); }

# wait_hw PREFIX N: the topic holds at least N records.
wait_hw() {
    local deadline=$((SECONDS + 120)) hw
    until hw=$(topic_hw "$1") && ((hw >= $2)); do
        ((SECONDS >= deadline)) && { echo "high watermark ${hw:-?} after 120 s, expected $2 or more"; return 1; }
        sleep 0.5
    done
    echo "high watermark $hw"
}

# rt_equal DB [TABLE]: the replica's export of public.TABLE (rt) equals the
# source's rows (columns id, v).
rt_equal() {
    local t=${2:-rt}
    "$CDC" export --db "$1" --table "public.$t" --output "$WORK/$t-eq.csv" 2>"$WORK/$t-eq.err" ||
        { echo "export exited $?: $(cat "$WORK/$t-eq.err")"; return 1; }
    app_psql -c "COPY (SELECT id, v FROM public.$t ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)" >"$WORK/$t-eq.src"
    cmp -s "$WORK/$t-eq.csv" "$WORK/$t-eq.src" ||
        { echo "replica/source differ: $(diff "$WORK/$t-eq.csv" "$WORK/$t-eq.src" | head -n 5 | tr '\n' ' ')"; return 1; }
    echo "$(($(wc -l <"$WORK/$t-eq.src") - 1)) rows equal"
}

# recreated_noticed LOG: the ingest said the topic was created again.
recreated_noticed() {
    grep -q "deleted and created again" "$1" || { echo "no warning in the ingest's log: $(grep -E 'assigned|WARN|ERROR' "$1" | tail -n 3)"; return 1; }
    grep "deleted and created again" "$1" | tail -n 1 | cut -c1-300
}

scenario12() {
    [[ -n $MAIN_PID ]] && main_ingest_stop >/dev/null
    local -a E2E_TABLES=(rt) E2E_DECIMALS=()
    local p=e2e12_$RUN g=e2e12-$RUN r=$WORK/replica-12 ing read
    e2e_log "scenario 12: the topic deleted and created again while the ingest is stopped"
    check "12 setup: source reset, public.rt (100 rows), topic created" \
        eval 'reset_source && app_psql -c "CREATE TABLE public.rt (id int PRIMARY KEY, v text);
            ALTER TABLE public.rt OWNER TO shop_owners;
            INSERT INTO public.rt SELECT g, '"'a'"' FROM generate_series(1, 100) g" && create_topics 1 "$p"' || return 1
    start_ingest ing "$r" "$g" "$WORK/ingest-12a.log" "" "$p"
    check "12 connector registered, snapshot done, streaming" eval '
        E2E_CONNECTOR_OPTS="${E2E_CONNECTOR_OPTS:-} table.include.list=public.rt" \
            register_connector e2e12 "$p" && wait_streaming e2e12 120' || return 1
    check "12 every row updated (the topic holds 200 records)" app_psql -c "UPDATE public.rt SET v = 'b'"
    check "12 drained" wait_drained e2e12_slot "$g" "$p"
    check "12 ingest stopped by SIGTERM (exit 0)" stop_ingest "$ing"
    check "12 replica equals the source" rt_equal "$r"

    # A: the new topic grows past the replica's position before the ingest
    # starts again; resuming after the old position would skip its snapshot.
    check "12A connector deleted, topic deleted and created again" recreate_topic e2e12 "$p" || return 1
    check "12A changes with no connector: 10 rows deleted, 10 updated" \
        app_psql -c "DELETE FROM public.rt WHERE id > 90; UPDATE public.rt SET v = 'c' WHERE id <= 10"
    check "12A connector registered again: a new snapshot" eval '
        E2E_CONNECTOR_OPTS="${E2E_CONNECTOR_OPTS:-} table.include.list=public.rt" \
            register_connector e2e12 "$p" && wait_streaming e2e12 120' || return 1
    check "12A 80 rows updated three times" app_psql -c "UPDATE public.rt SET v = 'd1' WHERE id > 10;
        UPDATE public.rt SET v = 'd2' WHERE id > 10; UPDATE public.rt SET v = 'd3' WHERE id > 10"
    check "12A the new topic is longer than the replica's position (330 records)" wait_hw "$p" 330
    start_ingest ing "$r" "$g" "$WORK/ingest-12b.log" "" "$p"
    check "12A drained" wait_drained e2e12_slot "$g" "$p"
    check "12A ingest stopped by SIGTERM (exit 0)" stop_ingest "$ing"
    check "12A the ingest noticed the topic was created again" recreated_noticed "$WORK/ingest-12b.log"
    check "12A replica equals the source" rt_equal "$r"
    check "12A reconcile: replica equals source" reconcile_all "$r" 12a

    # B: the new topic is shorter than the replica's position.
    check "12B connector deleted, topic deleted and created again" recreate_topic e2e12 "$p" || return 1
    check "12B changes with no connector: 5 rows deleted, 5 updated" \
        app_psql -c "DELETE FROM public.rt WHERE id <= 5; UPDATE public.rt SET v = 'e' WHERE id BETWEEN 6 AND 10"
    check "12B connector registered again: a new snapshot (85 records)" eval '
        E2E_CONNECTOR_OPTS="${E2E_CONNECTOR_OPTS:-} table.include.list=public.rt" \
            register_connector e2e12 "$p" && wait_streaming e2e12 120 && wait_hw "$p" 85' || return 1
    start_ingest ing "$r" "$g" "$WORK/ingest-12c.log" "" "$p"
    check "12B drained" wait_drained e2e12_slot "$g" "$p"
    check "12B ingest stopped by SIGTERM (exit 0)" stop_ingest "$ing"
    check "12B the ingest noticed the topic was created again" recreated_noticed "$WORK/ingest-12c.log"
    check "12B replica equals the source" rt_equal "$r"

    # C: the same topic: the ingest checks the record at its position and
    # reads on after it, nothing again.
    read=$(stat_of "$r" total events_read)
    check "12C one more update" app_psql -c "UPDATE public.rt SET v = 'f' WHERE id = 50"
    start_ingest ing "$r" "$g" "$WORK/ingest-12d.log" "" "$p"
    check "12C drained" wait_drained e2e12_slot "$g" "$p"
    check "12C ingest stopped by SIGTERM (exit 0)" stop_ingest "$ing"
    check "12C no warning of a topic created again" eval '! grep "created again" "$WORK/ingest-12d.log"'
    check "12C only the new record read" eval 'same "records read" "$(stat_of "$r" total events_read)" "$((read + 1))"'
    check "12C replica equals the source" rt_equal "$r"
    "$CONN" delete e2e12 >>"$WORK/connector.log" 2>&1
}

# rp_updates N: N rounds of updates of a seventh of public.rp, 0.2 s apart.
rp_updates() {
    local i
    for ((i = 1; i <= $1; i++)); do
        app_psql -c "UPDATE public.rp SET v = v + 1 WHERE id % 7 = $((i % 7))" || return 1
        sleep 0.2
    done
}

scenario13() {
    [[ -n $MAIN_PID ]] && main_ingest_stop >/dev/null
    local -a E2E_TABLES=(rp) E2E_DECIMALS=()
    local p=e2e13_$RUN g=e2e13-$RUN r=$WORK/replica-13 ing upd
    e2e_log "scenario 13: partitions added to the topic while the ingest runs"
    check "13 setup: source reset, public.rp (200 rows), topic created with 1 partition" \
        eval 'reset_source && app_psql -c "CREATE TABLE public.rp (id int PRIMARY KEY, v int);
            ALTER TABLE public.rp OWNER TO shop_owners;
            INSERT INTO public.rp SELECT g, 0 FROM generate_series(1, 200) g" && create_topics 1 "$p"' || return 1
    # the consumer and Debezium's producer see a new partition count within seconds
    printf 'topic.metadata.refresh.interval.ms=2000\n' >"$WORK/kafka-13.properties"
    start_ingest ing "$r" "$g" "$WORK/ingest-13.log" "" "$p" --kafka-config "$WORK/kafka-13.properties"
    check "13 connector registered (its producer's metadata max age 3 s), snapshot done, streaming" eval '
        E2E_CONNECTOR_OPTS="${E2E_CONNECTOR_OPTS:-} table.include.list=public.rp producer.override.metadata.max.age.ms=3000" \
            register_connector e2e13 "$p" && wait_streaming e2e13 120' || return 1
    rp_updates 75 >"$WORK/updates-13.log" 2>&1 &
    upd=$!
    E2E_PIDS+=("$upd")
    sleep 3
    check "13 the topic taken from 1 to 4 partitions while updates stream" "$E2EK" "$KAFKA_BROKERS" add-partitions 4 $(topics "$p")
    check "13 the updates done" wait "$upd"
    check "13 drained, every partition (the group's committed offsets reach every high watermark)" \
        wait_drained e2e13_slot "$g" "$p" 90
    check "13 ingest stopped by SIGTERM (exit 0)" stop_ingest "$ing"
    check "13 the ingest saw the new partition count and joined its group again" \
        grep -q "partition count changed: joining the group again" "$WORK/ingest-13.log"
    check "13 the replica holds positions in the new partitions" eval '
        n=$("$CDC" status --db "$r" --json | jq "[.partitions[] | select(.partition > 0)] | length");
        echo "$n new partitions read"; ((n > 0))'
    check "13 replica equals the source" rt_equal "$r" rp
    check "13 reconcile: replica equals source" reconcile_all "$r" 13
    "$CONN" delete e2e13 >>"$WORK/connector.log" 2>&1
}

# ---- Main ---------------------------------------------------------------------

e2e_log "work directory $WORK"
e2e_build
e2e_log "starting the stack (tests/stack/stack.sh up; the first run fetches the Java artifacts)"
if ! e2e_stack_up 2>"$WORK/stack-up.err"; then
    fail "stack up (see $WORK/stack-up.log and the stack's logs)" "$WORK/stack-up.err"
    echo "$PASSED passed, $FAILED failed"
    exit 1
fi
e2e_log "configuration: $(e2e_config)"
ok "stack up: PostgreSQL $PGHOST:$PGPORT, Kafka $KAFKA_BROKERS, Connect $CONNECT_URL ($((SECONDS - E2E_T0))s)"
# Topics of earlier runs (a stack kept with E2E_KEEP_STACK=1).
"$E2EK" "$KAFKA_BROKERS" delete-topics e2e >/dev/null 2>&1

for s in 1 2 3 4 5 6 7 8 9 10 11 12 13; do
    if runs "$s"; then
        t0=$SECONDS
        "scenario$s"
        e2e_log "scenario $s took $((SECONDS - t0))s"
    fi
done
[[ -n $MAIN_PID ]] && main_ingest_stop >/dev/null

[[ -n $LATENCY_LINE ]] && echo "# $LATENCY_LINE" && echo "# $LATENCY_STAGES"
echo "# total $((SECONDS - E2E_T0))s"
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
