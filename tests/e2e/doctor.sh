#!/usr/bin/env bash
# tests/e2e/doctor.sh: `cdcstore doctor` on the real stack (tests/stack/):
# PostgreSQL 15 -> Debezium 3.6.1 on Kafka Connect 4.3 -> Kafka 4.3 ->
# `cdcstore ingest`.  `make test-e2e` runs it after run.sh.
#
#   1  a connector of its own, a change per table ingested: every line OK,
#      exit 0 (connector, task, source, slot, retained WAL, publication,
#      consumer lag, the change topics not compacted, the replica's age); a
#      replica holding a position in a compacted topic: WARN naming it
#   2  a publication that misses tables the replica holds: a FAIL line
#      naming them, exit 2
#   3  Kafka Connect unreachable (a closed port): a FAIL line naming the URL
#      and the error, exit 2, the other lines still printed
#   4  the connector paused: its line WARN, exit 1; resumed: OK again
#   5  the connector stopped, max_slot_wal_keep_size set to 64MB for the
#      test (ALTER SYSTEM, restored at the end): the connector line FAIL; the
#      slot inactive (WARN, exit 1) while WAL is generated (rows of a table
#      outside the publication): the retained WAL line WARN past 50% of the
#      limit (exit 1), FAIL past 80% (exit 2); with the limit -1
#      (unlimited) the absolute thresholds --wal-warn/--wal-fail apply; past
#      the limit and a CHECKPOINT, the slot lost: FAIL
# At the end the connector is deleted (its slot and publication dropped),
# its topics and the filler table too, and the setting restored.
#
# The stack is started when it does not run (tests/stack/stack.sh up) and
# stopped again at the end unless E2E_KEEP_STACK=1; a stack that already ran
# is left running.  Output: `ok`/`FAIL` lines, `#` lines for progress, then
# `N passed, M failed`; exit 0 when all pass.  Every wait polls a condition
# with a time limit.
#
# Environment: E2E_KEEP_STACK, E2E_WORK (scratch directory, kept when a check
# fails), E2E_BUILD, STACK_* (ports, STACK_DIR) as for tests/e2e/run.sh.
# shellcheck disable=SC2016
set -uo pipefail
export LC_ALL=C.UTF-8

WORK=${E2E_WORK:-$(mktemp -d /tmp/cdcstore-doctor.XXXXXX)}
mkdir -p "$WORK"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUN=$(date +%s)
NAME=doctor_$RUN          # connector; its slot is ${NAME}_slot, its publication ${NAME}_pub
SLOT=${NAME}_slot
PUB=${NAME}_pub
P=doctor_$RUN             # topic prefix
GROUP=doctor-$RUN
R=$WORK/replica
FILLER=public.doctor_filler_$RUN
PASSED=0
FAILED=0
ING=
STARTED_STACK=0
WAL_SET=0
REGISTERED=0

# doctor OUT ARGS...: runs cdcstore doctor (60 s at most) against the
# stack's source; stdout in OUT, stderr in OUT.err, the exit status in $DRC.
doctor() {
    local out=$1
    shift
    timeout 60 "$CDC" doctor --source "$SRC" "$@" >"$out" 2>"$out.err"
    DRC=$?
}
# expect OUT RC PATTERN...: doctor's exit status was RC and every PATTERN
# (an extended regular expression) matches a line of OUT; else says what
# doctor printed.
expect() {
    local out=$1 want=$2 pat bad=0
    shift 2
    if [[ $DRC != "$want" ]]; then
        echo "exit status $DRC, expected $want"
        bad=1
    fi
    for pat in "$@"; do
        grep -qE -- "$pat" "$out" || {
            echo "no line matches /$pat/"
            bad=1
        }
    done
    if ((bad)); then
        cat "$out" "$out.err"
        return 1
    fi
}
CONNECT_ARGS=()

# set_keep VALUE: max_slot_wal_keep_size (ALTER SYSTEM, reloaded); waits
# until a new session sees it.
set_keep() {
    local deadline=$((SECONDS + 10))
    su_psql -c "ALTER SYSTEM SET max_slot_wal_keep_size = '$1'" && su_psql -c "SELECT pg_reload_conf()" >/dev/null || return 1
    until [[ $(su_psql -c "SHOW max_slot_wal_keep_size") == "$1" ]]; do
        ((SECONDS < deadline)) || {
            echo "max_slot_wal_keep_size is $(su_psql -c "SHOW max_slot_wal_keep_size") after 10 s, expected $1"
            return 1
        }
        sleep 0.1
    done
}

retained() {
    su_psql -c "SELECT coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint, -1)
                FROM pg_replication_slots WHERE slot_name = '$SLOT'"
}
# wal_until BYTES: inserts rows of about 1 kB into the filler table (outside
# the publication: no change event) until the slot retains BYTES of WAL.
wal_until() {
    local want=$1 deadline=$((SECONDS + 120)) r
    while r=$(retained) && ((r < want)); do
        ((SECONDS < deadline)) || {
            echo "slot $SLOT retains $r bytes of WAL after 120 s, expected $want"
            return 1
        }
        app_psql -c "INSERT INTO $FILLER SELECT g, repeat(md5(g::text), 32) FROM generate_series(1, 2000) g" || return 1
    done
    echo "$r"
}
# connector_state STATE: waits (60 s) until the connector is in STATE.
connector_state() {
    local want=$1 deadline=$((SECONDS + 60)) st
    while :; do
        st=$(curl -fsS --max-time 5 "$CONNECT_URL/connectors/$NAME/status" | jq -r '.connector.state + "/" + ([.tasks[].state] | join(","))')
        [[ $st == "$want"* ]] && return 0
        ((SECONDS < deadline)) || {
            echo "connector $NAME is $st after 60 s, expected $want"
            return 1
        }
        sleep 0.3
    done
}
# slot_active t|f: waits (60 s) until the slot is active / inactive.
slot_active() {
    local want=$1 deadline=$((SECONDS + 60))
    until [[ $(su_psql -c "SELECT active FROM pg_replication_slots WHERE slot_name = '$SLOT'") == "$want" ]]; do
        ((SECONDS < deadline)) || {
            echo "slot $SLOT active=$(su_psql -c "SELECT active FROM pg_replication_slots WHERE slot_name = '$SLOT'") after 60 s, expected $want"
            return 1
        }
        sleep 0.3
    done
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [[ -n $ING ]] && stop_ingest "$ING" >/dev/null 2>&1
    e2e_kill_started
    if ((WAL_SET)); then
        su_psql -c "ALTER SYSTEM RESET max_slot_wal_keep_size" >/dev/null 2>&1
        su_psql -c "SELECT pg_reload_conf()" >/dev/null 2>&1
    fi
    if ((REGISTERED)); then
        "$CONN" delete "$NAME" >>"$WORK/connector.log" 2>&1 || echo "# connector.sh delete $NAME failed: see $WORK/connector.log"
        app_psql -c "DROP TABLE IF EXISTS $FILLER" >/dev/null 2>&1
        "$E2EK" "$KAFKA_BROKERS" delete-topics "$P" >/dev/null 2>&1
    fi
    if ((STARTED_STACK)) && [[ ${E2E_KEEP_STACK:-0} != 1 ]]; then
        "$STACK" down >>"$WORK/stack.log" 2>&1 || echo "doctor: stack.sh down failed; see $WORK/stack.log" >&2
    fi
    if ((FAILED == 0 && rc == 0)) && [[ -z ${E2E_WORK:-} ]]; then
        rm -rf "$WORK"
    else
        echo "# logs and replica kept in $WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- Main ---------------------------------------------------------------------

e2e_log "work directory $WORK"
e2e_build
"$STACK" status >/dev/null 2>&1 || STARTED_STACK=1
e2e_log "starting the stack (tests/stack/stack.sh up)"
if ! e2e_stack_up 2>"$WORK/stack-up.err"; then
    fail "stack up (see $WORK/stack-up.log)" "$WORK/stack-up.err"
    echo "$PASSED passed, $FAILED failed"
    exit 1
fi
ok "stack up: PostgreSQL $PGHOST:$PGPORT, Kafka $KAFKA_BROKERS, Connect $CONNECT_URL ($((SECONDS - E2E_T0))s)"
CONNECT_ARGS=(--connect "$CONNECT_URL" --connector "$NAME")

# 1: everything OK.
e2e_log "1: connector $NAME, a change per table, cdcstore ingest"
check "1 topics created" create_topics 1 "$P" || exit 1
REGISTERED=1
check "1 connector registered" register_connector "$NAME" "$P" || exit 1
check "1 connector streaming" wait_streaming "$NAME" || exit 1
start_ingest ING "$R" "$GROUP" "$WORK/ingest.log" "" "$P"
check "1 a change in each table" app_psql -c "
    INSERT INTO public.orders (order_id, status, amount) VALUES (990000001, 'new', 1.50)
        ON CONFLICT (order_id) DO UPDATE SET note = 'doctor $RUN';
    INSERT INTO public.order_lines (order_id, line_no, sku) VALUES (990000001, 1, 'doctor')
        ON CONFLICT (order_id, line_no) DO UPDATE SET qty = order_lines.qty + 1;
    INSERT INTO public.customers (customer_id, email) VALUES ('00000000-0000-0000-0000-000000990001', 'doctor@example.com')
        ON CONFLICT (customer_id) DO UPDATE SET name = 'doctor $RUN';
    INSERT INTO public.products (sku, title) VALUES ('doctor', 'doctor')
        ON CONFLICT (sku) DO UPDATE SET title = 'doctor $RUN'"
check "1 drained into the replica" wait_drained "$SLOT" "$GROUP" "$P" 120
# A TRUNCATE of the source reaches the replica (the stack's connector sends
# truncates: skipped.operations=none, checked by doctor below).
products_live() { "$CDC" stats --db "$R" --json | jq -r '.tables["public.products"].rows_live'; }
check "1 public.products has rows in the replica ($(products_live))" test "$(products_live)" -gt 0
check "1 TRUNCATE public.products at the source" su_psql -c "TRUNCATE public.products"
check "1 the truncate drained into the replica" wait_drained "$SLOT" "$GROUP" "$P" 120
check "1 public.products has no row in the replica after the truncate ($(products_live))" test "$(products_live)" = 0
check "1 ingest stopped by SIGTERM (exit 0)" stop_ingest "$ING"
ING=
doctor "$WORK/d1.out" "${CONNECT_ARGS[@]}" --db "$R" --brokers "$KAFKA_BROKERS"
check "1 doctor: every line OK, exit 0" expect "$WORK/d1.out" 0 \
    "^OK   connector $NAME RUNNING" "^OK   task $NAME/0 RUNNING" "^OK   source .*PostgreSQL 15" \
    "^OK   slot $SLOT active" "^OK   slot $SLOT retained WAL .* of max_slot_wal_keep_size .*\([0-9]+%" \
    "^OK   publication $PUB covers the 4 tables the replica holds" "^OK   consumer lag 0 records over 4 partitions" \
    "^OK   replica [0-9.]+ s behind the source" \
    "^OK   connector $NAME sends every change, truncates too \(skipped.operations=none\)" \
    "^OK   4 topics not compacted \(cleanup.policy\)"
check "1 no line but OK" bash -c "! grep -v '^OK   ' '$WORK/d1.out'"
doctor "$WORK/d1j.out" "${CONNECT_ARGS[@]}" --db "$R" --brokers "$KAFKA_BROKERS" --json
check "1 doctor --json: status OK, exit 0, 10 checks, the WAL figure in bytes" eval '
    [[ $DRC == 0 ]] && jq -e ".status == \"OK\" and .exit == 0 and (.checks | length) == 10 and
        ([.checks[] | select(.check == \"wal\")][0] | .unit == \"bytes\" and .value >= 0 and .fail > .warn)" \
        "$WORK/d1j.out" >/dev/null || { echo "exit $DRC"; cat "$WORK/d1j.out"; false; }'

printf 'bootstrap.servers=%s\ngroup.id=%s\n' "$KAFKA_BROKERS" "$GROUP" >"$WORK/kafka.properties"
doctor "$WORK/d1k.out" "${CONNECT_ARGS[@]}" --db "$R" --kafka-config "$WORK/kafka.properties"
check "1 doctor --kafka-config (the brokers in the ingest's file): lag 0, exit 0" expect "$WORK/d1k.out" 0 \
    "^OK   consumer lag 0 records over 4 partitions"
# 1c: a compacted change topic (cleanup.policy=compact): compaction can drop
# a delete's event and keep only its tombstone, which the replica does not
# take for a delete: WARN naming the topic.
CT="${P}c.public.compacted"
check "1c a compacted topic created" "$E2EK" "$KAFKA_BROKERS" create-topics 1 --config cleanup.policy=compact "$CT"
printf '{"topic":"%s","partition":0,"offset":0,"key":"{\\"id\\":1}","payload":"{\\"op\\":\\"c\\",\\"after\\":{\\"id\\":1},\\"source\\":{\\"schema\\":\\"public\\",\\"table\\":\\"compacted\\",\\"lsn\\":5}}"}\n' "$CT" >"$WORK/compacted.jsonl"
check "1c a replica holding a position in it" "$CDC" apply --db "$WORK/rc" --quiet "$WORK/compacted.jsonl"
doctor "$WORK/d1c.out" --db "$WORK/rc" --brokers "$KAFKA_BROKERS"
check "1c doctor: the compacted topic WARN" grep -qE \
    "^WARN 1 of 1 topic compacted: $CT \(compact\); compaction removes a delete's event" "$WORK/d1c.out"
"$E2EK" "$KAFKA_BROKERS" delete-topics "$CT" >/dev/null 2>&1
# 2: a publication that misses tables of the replica.
e2e_log "2: a publication of public.orders alone"
su_psql -c "CREATE PUBLICATION ${NAME}_narrow FOR TABLE public.orders" >/dev/null
doctor "$WORK/d2.out" "${CONNECT_ARGS[@]}" --db "$R" --publication "${NAME}_narrow"
check "2 doctor --publication ${NAME}_narrow: FAIL naming the 3 tables it misses, exit 2" expect "$WORK/d2.out" 2 \
    "^FAIL publication ${NAME}_narrow does not cover public.customers, public.order_lines, public.products: .*\(3 of the 4 tables the replica holds\)"
su_psql -c "DROP PUBLICATION ${NAME}_narrow" >/dev/null
doctor "$WORK/d2b.out" "${CONNECT_ARGS[@]}" --db "$R" --publication nosuchpub_$RUN
check "2 doctor --publication of none: FAIL, it does not exist, exit 2" expect "$WORK/d2b.out" 2 \
    "^FAIL publication nosuchpub_$RUN does not exist in database shop"

# 3: Kafka Connect unreachable.
e2e_log "3: Kafka Connect at a closed port"
doctor "$WORK/d3.out" --connect http://127.0.0.1:1 --connector "$NAME" --db "$R" --timeout-ms 3000
check "3 doctor with Connect unreachable: FAIL naming the URL and the error, the rest still checked, exit 2" \
    expect "$WORK/d3.out" 2 "^FAIL connector $NAME: Kafka Connect http://127.0.0.1:1/connectors/$NAME: .*([Cc]onnect|refused)" \
    "^OK   slot " "^OK   replica "
doctor "$WORK/d3b.out" "${CONNECT_ARGS[@]}" --db "$R" --brokers 127.0.0.1:1 --timeout-ms 2000
check "3 doctor with the brokers unreachable: FAIL naming them, exit 2" expect "$WORK/d3b.out" 2 \
    "^FAIL consumer lag unknown: brokers 127.0.0.1:1: "

# 4: paused.
e2e_log "4: the connector paused, then resumed"
curl -fsS --max-time 10 -X PUT "$CONNECT_URL/connectors/$NAME/pause" >/dev/null
check "4 connector PAUSED" connector_state PAUSED/PAUSED
doctor "$WORK/d4.out" "${CONNECT_ARGS[@]}"
check "4 doctor: connector and task WARN, exit 1" expect "$WORK/d4.out" 1 \
    "^WARN connector $NAME PAUSED" "^WARN task $NAME/0 PAUSED"
curl -fsS --max-time 10 -X PUT "$CONNECT_URL/connectors/$NAME/resume" >/dev/null
check "4 connector RUNNING again" connector_state RUNNING/RUNNING
check "4 slot streaming again" wait_streaming "$NAME" 60
doctor "$WORK/d4b.out" "${CONNECT_ARGS[@]}"
check "4 doctor after resume: exit 0" expect "$WORK/d4b.out" 0 "^OK   connector $NAME RUNNING"
# skipped.operations: unset, Debezium skips truncates (a TRUNCATE of the
# source would never reach the replica): WARN; skipping updates: FAIL.
CFG=$(curl -fsS --max-time 10 "$CONNECT_URL/connectors/$NAME/config")
put_config() { curl -fsS --max-time 30 -X PUT -H 'Content-Type: application/json' --data "$1" \
    "$CONNECT_URL/connectors/$NAME/config" >/dev/null; }
put_config "$(jq -c 'del(."skipped.operations")' <<<"$CFG")"
doctor "$WORK/d4c.out" "${CONNECT_ARGS[@]}"
check "4 doctor, skipped.operations unset: WARN, truncates not replicated" \
    grep -q "^WARN connector $NAME skips truncates (skipped.operations=t, Debezium's default)" "$WORK/d4c.out"
put_config "$(jq -c '."skipped.operations" = "t,u"' <<<"$CFG")"
doctor "$WORK/d4d.out" "${CONNECT_ARGS[@]}"
check "4 doctor, skipped.operations=t,u: FAIL, updates lost" \
    grep -q "^FAIL connector $NAME skips u events (skipped.operations=t,u)" "$WORK/d4d.out"
put_config "$CFG"
check "4 connector RUNNING with its configuration back" connector_state RUNNING/RUNNING
check "4 slot streaming again" wait_streaming "$NAME" 60

# 5: stopped; the slot's WAL grows against a small max_slot_wal_keep_size.
e2e_log "5: the connector stopped, max_slot_wal_keep_size 64MB, WAL generated"
"$CONN" stop "$NAME" >>"$WORK/connector.log" 2>&1
check "5 connector STOPPED" connector_state STOPPED
check "5 slot inactive" slot_active f
WAL_SET=1
check "5 max_slot_wal_keep_size 64MB" set_keep 64MB
app_psql -c "CREATE TABLE $FILLER (id int, pad text)"
doctor "$WORK/d5.out" "${CONNECT_ARGS[@]}"
check "5 doctor: connector STOPPED FAIL, no task FAIL, slot inactive WARN, exit 2" expect "$WORK/d5.out" 2 \
    "^FAIL connector $NAME STOPPED" "^FAIL connector $NAME has no task" "^WARN slot $SLOT inactive"
doctor "$WORK/d5a.out" --slot "$SLOT"
check "5 doctor --slot: slot inactive WARN, WAL OK against 64.0 MiB, exit 1" expect "$WORK/d5a.out" 1 \
    "^WARN slot $SLOT inactive" "^OK   slot $SLOT retained WAL .* of max_slot_wal_keep_size 64.0 MiB"
e2e_log "5: generating WAL past 50% of 64MB"
check "5 slot retains 36 MiB of WAL" wal_until $((36 << 20))
doctor "$WORK/d5b.out" --slot "$SLOT"
check "5 doctor --slot: retained WAL WARN past 50%, exit 1" expect "$WORK/d5b.out" 1 \
    "^WARN slot $SLOT retained WAL [0-9.]+ MiB of max_slot_wal_keep_size 64.0 MiB \((5[0-9]|6[0-9]|7[0-9])%"
check "5 max_slot_wal_keep_size -1 (unlimited)" set_keep -1
doctor "$WORK/d5u.out" --slot "$SLOT" --wal-warn 16MB --wal-fail 1GB
check "5 doctor --wal-warn 16MB --wal-fail 1GB, unlimited: retained WAL WARN against the absolute thresholds, exit 1" \
    expect "$WORK/d5u.out" 1 "^WARN slot $SLOT retained WAL [0-9.]+ MiB \(max_slot_wal_keep_size unlimited: warn at 16.0 MiB, fail at 1.0 GiB\)"
doctor "$WORK/d5v.out" --slot "$SLOT" --wal-warn 8MB --wal-fail 32MB
check "5 doctor --wal-warn 8MB --wal-fail 32MB, unlimited: FAIL, exit 2" \
    expect "$WORK/d5v.out" 2 "^FAIL slot $SLOT retained WAL [0-9.]+ MiB \(max_slot_wal_keep_size unlimited: warn at 8.0 MiB, fail at 32.0 MiB\)"
check "5 max_slot_wal_keep_size 64MB again" set_keep 64MB
e2e_log "5: generating WAL past 80% of 64MB"
check "5 slot retains 54 MiB of WAL" wal_until $((54 << 20))
doctor "$WORK/d5c.out" --slot "$SLOT" --json
check "5 doctor --slot --json: retained WAL FAIL past 80%, exit 2" eval '
    [[ $DRC == 2 ]] && jq -e "[.checks[] | select(.check == \"wal\")][0] | .level == \"FAIL\" and .value >= 54 * 1048576" \
        "$WORK/d5c.out" >/dev/null || { echo "exit $DRC"; cat "$WORK/d5c.out"; false; }'
doctor "$WORK/d5d.out" --slot "$SLOT" --wal-warn-pct 95 --wal-fail-pct 99
check "5 doctor --wal-warn-pct 95 --wal-fail-pct 99: the same WAL OK again, exit 1 (the slot inactive)" \
    expect "$WORK/d5d.out" 1 "^OK   slot $SLOT retained WAL .*warn at 95%, fail at 99%"
e2e_log "5: generating WAL past the limit, then a CHECKPOINT"
# PostgreSQL invalidates the slot at a checkpoint whose redo point is more
# segments (16 MiB) past the slot's restart_lsn than the limit allows.
check "5 slot retains 100 MiB of WAL" wal_until $((100 << 20))
lost() {
    local deadline=$((SECONDS + 60))
    while :; do
        su_psql -c "SELECT pg_switch_wal()" >/dev/null && su_psql -c "CHECKPOINT" >/dev/null || return 1
        doctor "$WORK/d5e.out" --slot "$SLOT"
        grep -qE "^FAIL slot $SLOT (lost|.*unreserved)" "$WORK/d5e.out" && break
        ((SECONDS < deadline)) || break
        app_psql -c "INSERT INTO $FILLER SELECT g, repeat(md5(g::text), 32) FROM generate_series(1, 2000) g" || return 1
    done
    expect "$WORK/d5e.out" 2 "^FAIL slot $SLOT (lost|.*unreserved)"
}
check "5 doctor --slot past the limit and a CHECKPOINT: the slot lost (or unreserved), FAIL, exit 2" lost

echo "# total $((SECONDS - E2E_T0))s"
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
