#!/usr/bin/env bash
# tests/e2e/pipeline-demo.sh: the whole pipeline locally, in one command.
#
#   PostgreSQL 15 -> Debezium 3.6.1 (Kafka Connect 4.3) -> Kafka 4.3 -> cdcstore ingest
#
# Starts the stack of tests/stack/ (the first run fetches the Java artifacts
# from Maven Central), recreates database shop with 20,000 orders, starts
# `cdcstore ingest` into a replica, registers the Debezium connector (initial
# snapshot, then streaming), runs the change generator for a while, waits
# until the replica has everything, stops ingest, reconciles every table with
# the source, prints the replica's counters and the end-to-end latency of
# streamed changes (p50/p99 of apply time minus the change's commit time;
# first under the steady load, then over the whole run), and stops the stack.
# Snapshot reads have no such latency: their ts_ms says when the snapshot
# ran, so cdcstore leaves them out of its latency figures.
#
# Usage: tests/e2e/pipeline-demo.sh [--keep-stack] [--seconds N] [--rate N]
#   --keep-stack  leave the stack (and the connector) running at the end
#   --seconds N   how long the generator runs (default 20)
#   --rate N      changegen statements per second (default 1300, about 1,000
#                 row changes/s)
# The connector is configured as tests/e2e/run.sh does (JSON without schemas,
# decimal.handling.mode precise; E2E_WORKAROUNDS=1 and the other E2E_*
# settings of tests/e2e/lib.sh apply here too).
#
# The replica stays in $DEMO_DIR (default /tmp/cdcstore-pipeline-demo) for
# `build/cdcstore get/export/stats --db $DEMO_DIR/replica ...`. Note: it
# deletes the stack's connectors and recreates its database shop.
set -uo pipefail
export LC_ALL=C.UTF-8

KEEP=0
SECS=20
RATE=1300
while (($# > 0)); do
    case $1 in
    --keep-stack) KEEP=1 ;;
    --seconds) SECS=${2:?}; shift ;;
    --rate) RATE=${2:?}; shift ;;
    -h | --help)
        sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
        exit 0
        ;;
    *)
        echo "pipeline-demo: unknown argument $1 (--help)" >&2
        exit 2
        ;;
    esac
    shift
done

DEMO_DIR=${DEMO_DIR:-/tmp/cdcstore-pipeline-demo}
rm -rf "$DEMO_DIR"
mkdir -p "$DEMO_DIR"
WORK=$DEMO_DIR/work
mkdir -p "$WORK"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

R=$DEMO_DIR/replica
PREFIX=demo
GROUP=cdcstore-demo
ING=
GEN=
STATUS=0

say() { printf '\n== %s\n' "$*"; }

# shellcheck disable=SC2317 # called by the trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    e2e_kill_started
    if ((KEEP)); then
        echo "The stack is still up: tests/stack/stack.sh status; stop it with tests/stack/stack.sh down"
    else
        "$STACK" down >>"$WORK/stack.log" 2>&1 && echo "stack stopped"
    fi
    echo "replica: $R; logs: $WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "building (make)"
e2e_build
say "starting the stack: PostgreSQL, Kafka (KRaft), Kafka Connect with Debezium"
e2e_stack_up || e2e_die "the stack did not start; see $WORK/stack-up.log"
echo "PostgreSQL $PGHOST:$PGPORT (database $PGDATABASE), Kafka $KAFKA_BROKERS, Connect $CONNECT_URL"
echo "connector: $(e2e_config)"

say "source: database shop recreated, 20,000 orders (10% with TOASTed notes), lines, customers"
reset_source || e2e_die "resetting the source failed; see $WORK/connector.log and $WORK/stack.log"
"$CHANGEGEN" --seed 1 --keys 20000 --init-rows 20000 --count 2000 --rate 0 >"$WORK/seed.out" 2>&1 ||
    e2e_die "seeding failed: $(cat "$WORK/seed.out")"
app_psql -c "INSERT INTO public.products (sku, title, price)
             SELECT 'SKU-' || i, 'product ' || i, i * 1.125 FROM generate_series(1, 200) i"
"$E2EK" "$KAFKA_BROKERS" delete-topics "$PREFIX." >/dev/null
create_topics 1 "$PREFIX" || e2e_die "creating the topics failed"

say "cdcstore ingest into $R"
start_ingest ING "$R" "$GROUP" "$WORK/ingest.log" "$WORK/latency.txt" "$PREFIX"
echo "build/cdcstore ingest --db $R --brokers $KAFKA_BROKERS --group $GROUP $(topics "$PREFIX" | sed 's/^/--topic /' | tr '\n' ' ')${E2E_DECIMALS[*]} --latency-report $WORK/latency.txt"

say "registering the Debezium connector 'demo' (initial snapshot, then streaming)"
t0=$SECONDS
register_connector demo "$PREFIX" || e2e_die "registering the connector failed; see $WORK/connector.log"
wait_streaming demo 180 || e2e_die "the connector is not streaming; see $WORK/connector.log and $STACK_DIR/logs/connect.log"
echo "snapshot done and streaming after $((SECONDS - t0))s"

say "changegen: ${SECS}s at --rate $RATE (inserts, updates, deletes, key changes, TOASTed notes, NULLs, NUMERICs)"
start_gen GEN "$WORK/gen.out" --seed 2 --keys 20000 --rate "$RATE" --duration "$SECS"
# Latency in the steady state: the changes applied in the second half of
# the load (Debezium catches up after the snapshot, its JIT warms up).
sleep $((SECS / 2))
steady_from=$(($(wc -l <"$WORK/latency.txt") + 1))
wait "$GEN" || e2e_die "changegen failed: $(cat "$WORK/gen.out.err")"
cat "$WORK/gen.out"
echo "load: $(gen_rate "$WORK/gen.out") row changes/s"

say "waiting until the replica has everything"
wait_drained demo_slot "$GROUP" "$PREFIX" 180 || STATUS=1
stop_ingest "$ING" || STATUS=1
ING=
# The ingest's summary without its latency, which the last section gives
# under the steady load first.
grep 'cdcstore ingest:' "$WORK/ingest.log" | tail -n 1 | sed 's/; end-to-end latency.*/ (latency: see the last section)/'

say "reconcile: every table against PostgreSQL"
if out=$(reconcile_all "$R" demo); then
    echo "equal: $out"
else
    echo "$out"
    STATUS=1
fi

say "cdcstore stats --db $R"
"$CDC" stats --db "$R" | sed -n '/^total/,$p'

say "end-to-end latency of streamed changes (apply time - source.ts_ms, ms; snapshot reads have none)"
read -r _ p50 _ p99 _ max _ n <<<"$(percentiles "$WORK/latency.txt" "$steady_from")"
echo "under the steady load (its second half, $(gen_rate "$WORK/gen.out") changes/s): p50 $p50 ms, p99 $p99 ms, max $max ms over $n changes"
read -r _ p50 _ p99 _ max _ n <<<"$(percentiles "$WORK/latency.txt")"
echo "every streamed change of the run, the warm-up included: p50 $p50 ms, p99 $p99 ms, max $max ms over $n changes"
exit "$STATUS"
