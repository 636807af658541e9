#!/usr/bin/env bash
# Captures real Debezium output into tests/data/debezium/*.jsonl as kcat -J
# lines, one scenario per file, from a running test stack. The SQL of each
# scenario is in tests/data/debezium/sql/; tests/data/debezium/README.md says
# what each file shows.
#
# Usage: tests/stack/capture-fixtures.sh [SCENARIO...]
#   scenarios: snapshot_stream precise_decimal schemas_enabled toast_unchanged
#              inflight_handover inflight_single_tx composite_key text_uuid_keys
#              resnapshot
#   (default: all). Each scenario starts from scratch: it deletes every
#   connector, every shop.* topic and recreates database shop.
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

ALL="snapshot_stream precise_decimal schemas_enabled toast_unchanged inflight_handover inflight_single_tx composite_key resnapshot"

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
