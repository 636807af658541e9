#!/usr/bin/env bash
# bench/backlog.sh: `cdcstore ingest` draining a Kafka backlog against `cdcstore apply` of the same
# events file, side by side in one run (the `backlog` step of bench/run.sh).
#
# Starts the stack's Kafka broker alone (tests/stack/stack.sh up kafka) unless it already runs, then
# hands over to bench/peer_backlog.py: the events go into a new topic of 4 partitions (bench/produce.c,
# keys and values as in the file, partitioned by key, acks=all), then `cdcstore ingest` of the topic and
# `cdcstore apply --batch-size 10000` of the file, each into a new replica, twice and interleaved, each
# replica checked against the expected CSV. With --tables N, the same again for a whole schema of N
# single-partition topics (bench/gen_tables.py, bench/produce.c --file-topics, ingest --topic-regex).
# A broker started here is stopped at the end and its directory removed (BACKLOG_KEEP_STACK=1 keeps
# both for the next run).
#
# Usage: bash bench/backlog.sh --bin CDCSTORE --events F --expected E --workdir W [--results R]
#                              [--produce BIN] [--partitions 4] [--batch 10000] [--repeat 2]
#                              [--tables 0] [--table-rows 1000]
#   (the options of bench/peer_backlog.py; --produce defaults to bench/out/bin/produce, built here)
#
# Environment: the stack's STACK_DIR, STACK_PG_PORT, STACK_KAFKA_PORT, STACK_KAFKA_CONTROLLER_PORT and
# STACK_CONNECT_PORT; when unset, a stack of its own: STACK_DIR=${TMPDIR:-/tmp}/cdcstore-stack-backlog,
# ports 56432, 56492, 56493, 56483 (only Kafka is started). BACKLOG_KEEP_STACK (0).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

export STACK_DIR=${STACK_DIR:-${TMPDIR:-/tmp}/cdcstore-stack-backlog}
export STACK_PG_PORT=${STACK_PG_PORT:-56432}
export STACK_KAFKA_PORT=${STACK_KAFKA_PORT:-56492}
export STACK_KAFKA_CONTROLLER_PORT=${STACK_KAFKA_CONTROLLER_PORT:-56493}
export STACK_CONNECT_PORT=${STACK_CONNECT_PORT:-56483}
KEEP_STACK=${BACKLOG_KEEP_STACK:-0}
STACK=(bash tests/stack/stack.sh)

say() { printf '[backlog %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

args=("$@")
have_produce=0
for x in "$@"; do [ "$x" = --produce ] && have_produce=1; done
if [ "$have_produce" = 0 ]; then
    make -s -f bench/bench.mk bench/out/bin/produce BENCH_OUT=bench/out >&2 || { say "building bench/produce.c failed"; exit 1; }
    args+=(--produce bench/out/bin/produce)
fi

# The broker: the one running under STACK_DIR, or one started here.
kafka_pid() { [ -f "$STACK_DIR/run/kafka.pid" ] && cat "$STACK_DIR/run/kafka.pid"; }
started=0
created_dir=0
pid=$(kafka_pid)
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    # A running stack recorded its ports: use them, not the environment's.
    # shellcheck disable=SC1091
    [ -f "$STACK_DIR/ports.env" ] && . "$STACK_DIR/ports.env"
    say "Kafka already runs under $STACK_DIR (pid $pid, port $STACK_KAFKA_PORT)"
else
    [ -d "$STACK_DIR" ] || created_dir=1
    say "starting Kafka alone under $STACK_DIR (port $STACK_KAFKA_PORT)"
    if ! "${STACK[@]}" up kafka >&2; then
        say "Kafka did not start; see $STACK_DIR/logs"
        "${STACK[@]}" down >&2 2>/dev/null
        [ "$created_dir" = 1 ] && rm -rf "$STACK_DIR"
        exit 1
    fi
    started=1
    pid=$(kafka_pid)
fi
cleanup() {
    if [ "$started" = 1 ] && [ "$KEEP_STACK" != 1 ]; then
        "${STACK[@]}" down >&2 || say "stack.sh down failed"
        [ "$created_dir" = 1 ] && rm -rf "$STACK_DIR"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

python3 bench/peer_backlog.py --brokers "127.0.0.1:$STACK_KAFKA_PORT" --broker-pid "$pid" "${args[@]}"
