#!/usr/bin/env bash
# Captures real Debezium output into tests/data/debezium/*.jsonl as kcat -J
# lines, one scenario per file, from a running test stack. The SQL of each
# scenario is in tests/data/debezium/sql/; tests/data/debezium/README.md says
# what each file shows.
#
# Usage: tests/stack/capture-fixtures.sh [SCENARIO...]
#   scenarios: snapshot_stream precise_decimal schemas_enabled toast_unchanged
#              inflight_handover inflight_single_tx composite_key text_uuid_keys
#              resnapshot incremental_adhoc incremental_added_table
#              incremental_connect_crash
#   (default: all). Each scenario starts from scratch: it deletes every
#   connector, every shop.* topic and recreates database shop. The
#   incremental_* scenarios also write <name>.expected.csv, the source table
#   at the end, and check that the capture shows the case they are about;
#   incremental_connect_crash kills and restarts Kafka Connect.
#
# Needs: the stack up (tests/stack/stack.sh up), kcat, jq. CAPTURE_OUT=DIR
# writes the files there instead of tests/data/debezium/.

set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/../.." && pwd)
SQL=$REPO/tests/data/debezium/sql
# CAPTURE_OUT: where the .jsonl files go (to compare a new capture with the
# committed one without overwriting it).
OUT=${CAPTURE_OUT:-$REPO/tests/data/debezium}
mkdir -p "$OUT"
STACK=$SCRIPT_DIR/stack.sh
CONN=$SCRIPT_DIR/connector.sh
eval "$("$STACK" env)"

log() { printf 'capture: %s\n' "$*" >&2; }
die() { printf 'capture: error: %s\n' "$*" >&2; exit 1; }

command -v kcat >/dev/null 2>&1 || die "kcat not found (apt-get install -y kcat)"
"$STACK" status >/dev/null || die "the stack is not up (tests/stack/stack.sh up)"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

app_psql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
su_psql() { psql -X -q -v ON_ERROR_STOP=1 -U "$STACK_PG_SUPERUSER" "$@"; }

shop_topics() {
    kcat -b "$KAFKA_BROKERS" -L -J 2>/dev/null | jq -r '.topics[].topic | select(startswith("shop."))'
}

# Deletes every connector (offsets, slots, publications too), every shop.*
# topic, and recreates database shop from schema.sql.
clean() {
    local c
    for c in $(curl -fsS "$CONNECT_URL/connectors" | jq -r '.[]'); do
        "$CONN" delete "$c"
    done
    if [[ -n $(shop_topics) ]]; then
        "$STACK" kafka-topics --delete --topic 'shop\..*' >/dev/null
        local deadline=$((SECONDS + 60))
        while [[ -n $(shop_topics) ]]; do
            ((SECONDS < deadline)) || die "shop.* topics still listed 60s after deletion"
            sleep 0.5
        done
    fi
    "$STACK" reset-db >/dev/null
}

count_topic() {
    { kcat -b "$KAFKA_BROKERS" -C -J -e -q -t "$1" 2>/dev/null || true; } | wc -l
}

count_all() {
    local n=0 t
    for t in "$@"; do n=$((n + $(count_topic "$t"))); done
    echo "$n"
}

# wait_count N TOPIC...: polls until the topics hold N messages together, then
# until the count has stayed the same for three polls, so that a surplus
# would show.
wait_count() {
    local want=$1 n deadline=$((SECONDS + 120)) same=0 last=-1
    shift
    while :; do
        n=$(count_all "$@")
        if ((n >= want)); then
            if ((n == last)); then
                same=$((same + 1))
                ((same >= 3)) && break
            else
                same=0
            fi
        fi
        last=$n
        ((SECONDS < deadline)) || die "only $n of $want messages in $* after 120s"
        sleep 0.7
    done
    ((n == want)) || log "warning: $n messages in $*, expected $want"
}

dump() {
    local file=$1 t
    shift
    : >"$file"
    for t in "$@"; do
        kcat -b "$KAFKA_BROKERS" -C -J -e -q -t "$t" >>"$file"
    done
    log "wrote $(wc -l <"$file") lines to $file"
}

# sql_phase FILE PHASE: the statements of one phase of resnapshot.sql.
sql_phase() {
    awk -v p="-- @phase $2:" 'index($0, "-- @phase ") == 1 { on = (index($0, p) == 1); next } on' "$1"
}

# ---- Scenarios -------------------------------------------------------------

# The same SQL under three converter settings.
orders_scenario() {
    local file=$1
    shift
    clean
    app_psql -f "$SQL/orders.pre.sql"
    "$CONN" register fixture "$@"
    "$CONN" wait-running fixture
    app_psql -f "$SQL/orders.stream.sql"
    wait_count 18 shop.public.orders
    dump "$OUT/$file" shop.public.orders
    "$CONN" delete fixture
}

sc_snapshot_stream() { orders_scenario snapshot_stream.jsonl decimal.handling.mode=string; }
sc_precise_decimal() { orders_scenario precise_decimal.jsonl; }
sc_schemas_enabled() { orders_scenario schemas_enabled.jsonl schemas.enable=true; }

sc_toast_unchanged() {
    clean
    app_psql -f "$SQL/toast.pre.sql"
    su_psql -tAc "SELECT 'toast rows of orders: ' || count(*) FROM pg_toast.pg_toast_$(app_psql -tAc "SELECT 'public.orders'::regclass::oid")" >&2
    "$CONN" register fixture decimal.handling.mode=string
    "$CONN" wait-running fixture
    app_psql -f "$SQL/toast.stream.sql"
    wait_count 9 shop.public.orders
    dump "$OUT/toast_unchanged.jsonl" shop.public.orders
    "$CONN" delete fixture
}

sc_composite_key() {
    clean
    app_psql -f "$SQL/keys.pre.sql"
    "$CONN" register fixture decimal.handling.mode=string
    "$CONN" wait-running fixture
    app_psql -f "$SQL/keys.stream.sql"
    wait_count 29 shop.public.order_lines shop.public.customers shop.public.products
    dump "$OUT/composite_key.jsonl" shop.public.order_lines
    dump "$OUT/text_uuid_keys.jsonl" shop.public.customers shop.public.products
    "$CONN" delete fixture
}
sc_text_uuid_keys() { sc_composite_key; }

sc_resnapshot() {
    clean
    sql_phase "$SQL/resnapshot.sql" pre | app_psql
    "$CONN" register fixture decimal.handling.mode=string
    "$CONN" wait-running fixture
    sql_phase "$SQL/resnapshot.sql" stream1 | app_psql
    wait_count 5 shop.public.orders
    # Gone: connector, its offsets, its slot and publication.
    "$CONN" delete fixture
    sql_phase "$SQL/resnapshot.sql" gap | app_psql
    "$CONN" register fixture decimal.handling.mode=string
    "$CONN" wait-running fixture
    sql_phase "$SQL/resnapshot.sql" stream2 | app_psql
    wait_count 10 shop.public.orders
    dump "$OUT/resnapshot.jsonl" shop.public.orders
    "$CONN" delete fixture
}

# ---- The snapshot/stream handover --------------------------------------------
#
# A logical slot's consistent point C is reached only when every transaction
# that was running when the slot's snapshot builder reached its FULL_SNAPSHOT
# state has ended; transactions that started after that state are decoded in
# full and, when they commit after C, streamed although part of their WAL lies
# before C. Three sessions produce that case:
#   A  holds a write while the slot is created: the builder waits (BUILDING)
#   X  starts a write after that; A commits: FULL_SNAPSHOT, the builder waits for X
#   B  starts after FULL_SNAPSHOT and updates order 1; X commits: CONSISTENT (C)
#   The snapshot is taken at C without B's update; B commits after the
#   snapshot, is streamed, and its change record has an LSN below C.

# Sessions are psql processes reading statements from a FIFO.
declare -A SESSION_FD
session_start() {
    local name=$1 fd
    rm -f "$TMP/$name.in"
    mkfifo "$TMP/$name.in"
    PGAPPNAME=fx_$name psql -X -q -v ON_ERROR_STOP=1 -At <"$TMP/$name.in" >"$TMP/$name.out" 2>&1 &
    exec {fd}>"$TMP/$name.in"
    SESSION_FD[$name]=$fd
}
session_send() { printf '%s\n' "$2" >&"${SESSION_FD[$1]}"; }
session_end() {
    local fd=${SESSION_FD[$1]}
    session_send "$1" '\q'
    exec {fd}>&-
}

# Polls until session NAME's transaction holds an xid (its write ran).
wait_xid() {
    local deadline=$((SECONDS + 30))
    until [[ $(su_psql -tAc "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'fx_$1' AND backend_xid IS NOT NULL") == 1 ]]; do
        ((SECONDS < deadline)) || die "session $1 has no transaction id after 30s: $(cat "$TMP/$1.out")"
        sleep 0.2
    done
}

# Polls the PostgreSQL log, from byte offset $2, for the message $1.
wait_pglog() {
    local msg=$1 from=$2 deadline=$((SECONDS + 60))
    until tail -c +"$((from + 1))" "$STACK_DIR/logs/postgres.log" | grep -q "$msg"; do
        ((SECONDS < deadline)) || die "PostgreSQL never logged '$msg'; see $STACK_DIR/logs/postgres.log"
        sleep 0.2
    done
    tail -c +"$((from + 1))" "$STACK_DIR/logs/postgres.log" | grep -A1 "$msg" | head -n 2 >&2
}

sc_inflight_handover() {
    clean
    app_psql -c "INSERT INTO public.orders (order_id, status, amount, created_at) VALUES
        (1, 'new', 10.00, '2026-04-01 10:00:00'),
        (2, 'new', 20.00, '2026-04-01 10:01:00'),
        (3, 'new', 30.00, '2026-04-01 10:02:00')"
    local logpos
    logpos=$(stat -c %s "$STACK_DIR/logs/postgres.log")

    session_start A
    session_send A "BEGIN; UPDATE public.orders SET status = 'by-A' WHERE order_id = 3;"
    wait_xid A
    "$CONN" register fixture decimal.handling.mode=string
    wait_pglog 'logical decoding found initial starting point' "$logpos"

    session_start X
    session_send X "BEGIN; UPDATE public.orders SET status = 'by-X' WHERE order_id = 2;"
    wait_xid X
    session_send A "COMMIT;"
    wait_pglog 'logical decoding found initial consistent point' "$logpos"

    session_start B
    session_send B "BEGIN; UPDATE public.orders SET status = 'in-flight', amount = 11.00 WHERE order_id = 1;"
    wait_xid B
    session_send B "SELECT 'B wrote before ' || pg_current_wal_lsn() || ', xid ' || pg_current_xact_id();"
    session_send X "COMMIT;"
    wait_pglog 'logical decoding found consistent point' "$logpos"

    # The snapshot runs now, without B's update; B stays open until it is over.
    "$CONN" wait-running fixture
    session_send B "COMMIT;"
    session_end A
    session_end X
    session_end B
    wait
    cat "$TMP/B.out" >&2
    app_psql -c "UPDATE public.orders SET status = 'after' WHERE order_id = 1"
    wait_count 5 shop.public.orders
    dump "$OUT/inflight_handover.jsonl" shop.public.orders
    "$CONN" delete fixture
}

# The naive variant: one transaction writes, then stays open while the
# connector is registered. The slot cannot become consistent while it runs,
# so no snapshot is taken before it commits: its write ends up in the
# snapshot and is never streamed.
sc_inflight_single_tx() {
    clean
    app_psql -c "INSERT INTO public.orders (order_id, status, amount, created_at) VALUES
        (1, 'new', 10.00, '2026-04-01 10:00:00'),
        (2, 'new', 20.00, '2026-04-01 10:01:00')"
    local logpos
    logpos=$(stat -c %s "$STACK_DIR/logs/postgres.log")
    session_start A
    session_send A "BEGIN; UPDATE public.orders SET status = 'held-open' WHERE order_id = 1;"
    wait_xid A
    "$CONN" register fixture decimal.handling.mode=string
    wait_pglog 'logical decoding found initial starting point' "$logpos"
    # Hold A for 5 s on purpose and show that the slot stays unusable meanwhile.
    local until=$((SECONDS + 5))
    while ((SECONDS < until)); do
        [[ $(su_psql -tAc "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'walsender'
                           AND query LIKE 'CREATE_REPLICATION_SLOT%' AND state = 'active'") == 1 ]] ||
            die "CREATE_REPLICATION_SLOT finished while transaction A was still open"
        [[ $(count_topic shop.public.orders) == 0 ]] || die "snapshot records appeared while A was open"
        sleep 0.5
    done
    log "CREATE_REPLICATION_SLOT still waiting for transaction A after 5 s; committing A"
    session_send A "COMMIT;"
    session_end A
    wait
    "$CONN" wait-running fixture
    app_psql -c "UPDATE public.orders SET status = 'after' WHERE order_id = 1"
    wait_count 3 shop.public.orders
    dump "$OUT/inflight_single_tx.jsonl" shop.public.orders
    "$CONN" delete fixture
}

# ---- Incremental snapshots -----------------------------------------------------
#
# An incremental snapshot (Debezium's watermark-based one) reads a table in
# chunks of primary keys while streaming goes on: per chunk it inserts a
# snapshot-window-open row into the signal table, SELECTs the chunk, inserts a
# snapshot-window-close row, drops from the chunk every key the stream
# touched between the two, and emits the rest as reads (op r, snapshot
# "incremental", lsn null, sequence ["<lastCommitLsn>","<lsn>"] of the close
# watermark). The hard case for an ordering guard: a transaction that
# changed a row before the chunk was read and commits after it. The read
# carries the old value; the commit is streamed after it with an LSN below
# the window's.

# The connector settings of the incremental-snapshot scenarios (the table
# list comes first in each call).
INC_OPTS=(decimal.handling.mode=string signal.data.collection=public.dbz_signal
    incremental.snapshot.chunk.size=100)

# Polls Kafka Connect's log, from byte offset $2, for the message $1.
wait_connectlog() {
    local msg=$1 from=$2 deadline=$((SECONDS + ${3:-120}))
    until tail -c +"$((from + 1))" "$STACK_DIR/logs/connect.log" | grep -q "$msg"; do
        ((SECONDS < deadline)) || die "Connect never logged '$msg'; see $STACK_DIR/logs/connect.log"
        sleep 0.3
    done
    tail -c +"$((from + 1))" "$STACK_DIR/logs/connect.log" | grep "$msg" | head -n 1 | cut -c1-240 >&2
}

# wait_reads TOPIC KEYCOL KEY...: polls until the topic holds an incremental
# read of each key.
wait_reads() {
    local topic=$1 col=$2 deadline=$((SECONDS + 120)) want n
    shift 2
    want=$(printf '%s\n' "$@" | jq -s -c 'map(tonumber)')
    while :; do
        n=$({ kcat -b "$KAFKA_BROKERS" -C -e -q -t "$topic" -f '%s\n' 2>/dev/null || true; } |
            jq -r --arg c "$col" --argjson w "$want" 'select(. != null and .source.snapshot == "incremental")
                | .after[$c] | select(. as $k | $w | index($k))' | sort -u | wc -l)
        ((n == $#)) && break
        ((SECONDS < deadline)) || die "only $n of the reads of $* on $topic after 120s"
        sleep 0.3
    done
    log "incremental reads of $* are on $topic"
}

# wait_marker TOPIC JQ: polls until a message of TOPIC matches the jq filter
# (on the value), then until the topic's count stays the same for three polls.
wait_marker() {
    local topic=$1 filter=$2 deadline=$((SECONDS + 120)) n last=-1 same=0
    until { kcat -b "$KAFKA_BROKERS" -C -e -q -t "$topic" -f '%s\n' 2>/dev/null || true; } |
        jq -e "select(. != null) | select($filter)" >/dev/null; do
        ((SECONDS < deadline)) || die "no message matching $filter on $topic after 120s"
        sleep 0.5
    done
    while ((same < 3)); do
        n=$(count_topic "$topic")
        if ((n == last)); then same=$((same + 1)); else same=0; fi
        last=$n
        sleep 0.7
    done
}

# expected_csv TABLE KEY FILE: the source table at the end of a capture, as
# the replica's CSV export writes it (COPY's CSV: NULL unquoted empty, the
# empty string "", header line), in key order.
expected_csv() {
    app_psql -c "COPY (SELECT * FROM $1 ORDER BY $2) TO STDOUT WITH (FORMAT csv, HEADER)" >"$3"
    log "wrote $(($(wc -l <"$3") - 1)) rows of $1 to $3"
}

# hard_cases FILE TOPIC KEYCOL: per key, an incremental read followed (later
# offset) by a streamed change of the same key whose lsn is below the read's
# window (sequence[1]): "key, read offset, its sequence and row, change op,
# offset, lsn, sequence and row", one a line.
hard_cases() {
    jq -r --arg t "$2" --arg c "$3" 'select(.topic == $t and .payload != null)
        | .offset as $o | .payload | fromjson
        | [$o, ((.after // .before)[$c]), .op, (.source.snapshot == "incremental"), .source.lsn,
           .source.sequence, (.after | tojson)] | @json' "$1" |
        jq -s -r 'group_by(.[1])[] | . as $ev | $ev[] | select(.[3]) as $r
            | ($r[5] | fromjson | .[1] | tonumber) as $w
            | $ev[] | select(.[0] > $r[0] and (.[3] | not) and .[4] < $w)
            | "key \($r[1]): read at offset \($r[0]) sequence \($r[5]) after \($r[6]); then \(.[2]) at offset \(.[0]) lsn \(.[4]) sequence \(.[5]) after \(.[6])"'
}

# read_sequences FILE TOPIC: the distinct sequences of the incremental reads,
# with their number of reads, in order.
read_sequences() {
    jq -r --arg t "$2" 'select(.topic == $t and .payload != null) | .payload | fromjson
        | select(.source.snapshot == "incremental") | .source.sequence' "$1" | uniq -c
}

# The load of items.load.sql in the background (session "load").
start_load() {
    local n=$1 held=$2 sleep=$3
    PGAPPNAME=fx_load psql -X -q -v ON_ERROR_STOP=1 \
        -c "SELECT set_config('fx.n', '$n', false), set_config('fx.keys', '2000', false),
                   set_config('fx.newbase', '100000', false), set_config('fx.sleep', '$sleep', false),
                   set_config('fx.held', '$held', false)" \
        -f "$SQL/items.load.sql" >"$TMP/load.out" 2>&1 &
    LOAD_PID=$!
}
wait_load() { wait "$LOAD_PID" || die "the load session failed: $(cat "$TMP/load.out")"; }

# A held transaction: session NAME runs SQL (BEGIN included) and stays open.
hold_tx() {
    session_start "$1"
    session_send "$1" "$2"
    wait_xid "$1"
}

# hard_case_check FILE TOPIC KEYCOL KEY...: every KEY shows the hard case.
hard_case_check() {
    local file=$1 topic=$2 col=$3 k out
    shift 3
    out=$(hard_cases "$file" "$topic" "$col")
    printf '%s\n' "$out" >&2
    for k in "$@"; do
        grep -q "^key $k: " <<<"$out" || die "no late-committed change below the read's window for key $k in $file"
    done
    log "hard case seen for keys $*; $(grep -c . <<<"$out") such pairs in all"
}

# incremental_adhoc: an ad hoc incremental snapshot of items (2,000 rows,
# chunks of 100) started by a signal, under a concurrent load, with two
# transactions held open across the reads of their rows. snapshot.mode
# no_data: the incremental reads are the only reads.
sc_incremental_adhoc() {
    clean
    app_psql -f "$SQL/signal.sql"
    app_psql -v rows=2000 -f "$SQL/items.sql"
    "$CONN" register fixture table.include.list=public.items,public.dbz_signal snapshot.mode=no_data "${INC_OPTS[@]}"
    "$CONN" wait-running fixture
    local logpos
    logpos=$(stat -c %s "$STACK_DIR/logs/connect.log")
    # Before the snapshot starts: U updates 1234 and 1235, D deletes 1250.
    hold_tx U "BEGIN; UPDATE public.items SET label = 'held-update', qty = qty + 1000, price = 0.99 WHERE item_id IN (1234, 1235);"
    hold_tx D "BEGIN; DELETE FROM public.items WHERE item_id = 1250;"
    start_load 400 1234,1235,1250 0.03
    sleep 1
    app_psql -c "INSERT INTO public.dbz_signal (id, type, data) VALUES ('adhoc-1', 'execute-snapshot',
                 '{\"data-collections\": [\"public.items\"], \"type\": \"INCREMENTAL\"}')"
    # The chunk holding them is read with the old values; then both commit.
    wait_reads shop.public.items item_id 1234 1235 1250
    session_send U "COMMIT;"
    session_send D "COMMIT;"
    session_end U
    session_end D
    wait_connectlog "incremental snapshotting of table 'public.items' finished" "$logpos"
    wait_load
    wait
    app_psql -c "UPDATE public.items SET label = 'after', price = 1.50 WHERE item_id = 1"
    app_psql -c "DELETE FROM public.items WHERE item_id = 2"
    app_psql -c "INSERT INTO public.items (item_id, label, qty, price, note) VALUES (99999, 'last', 1, 9.99, NULL)"
    wait_marker shop.public.items '.after.item_id == 99999'
    dump "$OUT/incremental_adhoc.jsonl" shop.public.items shop.public.dbz_signal
    expected_csv public.items item_id "$OUT/incremental_adhoc.expected.csv"
    read_sequences "$OUT/incremental_adhoc.jsonl" shop.public.items >&2
    hard_case_check "$OUT/incremental_adhoc.jsonl" shop.public.items item_id 1234 1235 1250
    "$CONN" delete fixture
}

# incremental_added_table: a running connector captures orders (initial
# snapshot, then streaming); items (1,000 rows) is created, added to
# table.include.list (the config PUT restarts the task) and signalled, with the
# load on items and a transaction held across the read of item 345. No
# initial snapshot of items ever runs: its rows reach Kafka only as
# incremental reads.
sc_incremental_added_table() {
    clean
    app_psql -f "$SQL/signal.sql"
    app_psql -f "$SQL/orders.pre.sql"
    "$CONN" register fixture table.include.list=public.orders,public.dbz_signal "${INC_OPTS[@]}"
    "$CONN" wait-running fixture
    app_psql -f "$SQL/orders.stream.sql"
    wait_count 18 shop.public.orders
    app_psql -v rows=1000 -f "$SQL/items.sql"
    local logpos
    logpos=$(stat -c %s "$STACK_DIR/logs/connect.log")
    "$CONN" register fixture table.include.list=public.orders,public.items,public.dbz_signal "${INC_OPTS[@]}"
    wait_connectlog "Updating Publication with statement" "$logpos"
    "$CONN" wait-running fixture
    su_psql -d "$PGDATABASE" -tAc "SELECT 'publication fixture_pub: ' || string_agg(schemaname || '.' || tablename, ', ' ORDER BY tablename) FROM pg_publication_tables WHERE pubname = 'fixture_pub'" >&2
    hold_tx U "BEGIN; UPDATE public.items SET label = 'held-update', note = 'held' WHERE item_id = 345;"
    start_load 250 345 0.03
    sleep 1
    app_psql -c "INSERT INTO public.dbz_signal (id, type, data) VALUES ('add-items', 'execute-snapshot',
                 '{\"data-collections\": [\"public.items\"], \"type\": \"INCREMENTAL\"}')"
    wait_reads shop.public.items item_id 345
    session_send U "COMMIT;"
    session_end U
    wait_connectlog "incremental snapshotting of table 'public.items' finished" "$logpos"
    wait_load
    wait
    app_psql -c "UPDATE public.orders SET status = 'after-items' WHERE order_id = 1"
    app_psql -c "INSERT INTO public.items (item_id, label, qty, price, note) VALUES (99999, 'last', 1, 9.99, NULL)"
    wait_marker shop.public.items '.after.item_id == 99999'
    dump "$OUT/incremental_added_table.jsonl" shop.public.items shop.public.orders shop.public.dbz_signal
    expected_csv public.items item_id "$OUT/incremental_added_table.expected.csv"
    read_sequences "$OUT/incremental_added_table.jsonl" shop.public.items >&2
    hard_case_check "$OUT/incremental_added_table.jsonl" shop.public.items item_id 345
    "$CONN" delete fixture
}

# incremental_connect_crash: as incremental_adhoc, without held transactions,
# but the Kafka Connect worker is killed (SIGKILL) in the middle of the
# snapshot, once the read of item 800 is on the topic, and started again:
# the connector resumes from its last flushed offsets
# (offset.flush.interval.ms=1000), which hold the incremental snapshot's
# position, so Kafka receives streamed changes and chunk reads a second time.
sc_incremental_connect_crash() {
    clean
    app_psql -f "$SQL/signal.sql"
    app_psql -v rows=2000 -f "$SQL/items.sql"
    "$CONN" register fixture table.include.list=public.items,public.dbz_signal snapshot.mode=no_data "${INC_OPTS[@]}"
    "$CONN" wait-running fixture
    local logpos pid n0
    logpos=$(stat -c %s "$STACK_DIR/logs/connect.log")
    start_load 500 0 0.03
    sleep 1
    app_psql -c "INSERT INTO public.dbz_signal (id, type, data) VALUES ('crash-1', 'execute-snapshot',
                 '{\"data-collections\": [\"public.items\"], \"type\": \"INCREMENTAL\"}')"
    wait_reads shop.public.items item_id 800
    pid=$(cat "$STACK_DIR/run/connect.pid")
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
    n0=$(count_topic shop.public.items)
    log "Connect (pid $pid) killed with $n0 messages on shop.public.items"
    sleep 3
    "$STACK" up >&2
    "$CONN" wait-running fixture 300
    wait_connectlog "incremental snapshotting of table 'public.items' finished" "$logpos" 400
    wait_load
    wait
    app_psql -c "INSERT INTO public.items (item_id, label, qty, price, note) VALUES (99999, 'last', 1, 9.99, NULL)"
    wait_marker shop.public.items '.after.item_id == 99999'
    dump "$OUT/incremental_connect_crash.jsonl" shop.public.items shop.public.dbz_signal
    expected_csv public.items item_id "$OUT/incremental_connect_crash.expected.csv"
    read_sequences "$OUT/incremental_connect_crash.jsonl" shop.public.items >&2
    log "messages delivered twice (same key, op and sequence): $(jq -r 'select(.topic == "shop.public.items" and .payload != null)
        | .key + " " + (.payload | fromjson | .op + " " + .source.sequence)' "$OUT/incremental_connect_crash.jsonl" |
        sort | uniq -d | wc -l)"
    "$CONN" delete fixture
}

ALL="snapshot_stream precise_decimal schemas_enabled toast_unchanged inflight_handover inflight_single_tx composite_key resnapshot incremental_adhoc incremental_added_table incremental_connect_crash"

main() {
    local s scenarios
    if (($# > 0)); then scenarios=("$@"); else read -ra scenarios <<<"$ALL"; fi
    for s in "${scenarios[@]}"; do
        declare -F "sc_$s" >/dev/null || die "unknown scenario $s (known: $ALL text_uuid_keys)"
        log "---- $s"
        "sc_$s"
    done
    clean
}

main "$@"
