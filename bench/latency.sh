#!/usr/bin/env bash
# bench/latency.sh: end-to-end latency of the pipeline under a steady load,
# for one or more configurations side by side, with where the time goes.
#
#   PostgreSQL commit -> Debezium event -> Kafka append -> cdcstore apply
#
# For each configuration, in turn (and again for every --repeat): deletes the
# stack's connectors, recreates database shop with --keys orders, creates the
# four topics with message.timestamp.type=LogAppendTime (a record's timestamp
# is then the broker's append time), starts `cdcstore ingest`, registers the
# connector (snapshot.mode=no_data: streaming only), runs changegen for 10 s
# to warm up, waits until the replica has it, then measures a window of
# --seconds at --rate. Per configuration it reports, over the window:
#   end to end   apply time minus source.ts_ms, every streamed change
#                (cdcstore ingest --latency-report)
#   stage 1      commit -> Debezium event: ts_ms - source.ts_ms
#   stage 2      Debezium event -> Kafka append: record timestamp - ts_ms
#                (stages 1 and 2 from every orders record of the window)
#   stage 3      Kafka append -> cdcstore apply, every record of the window
#                (cdcstore ingest --kafka-latency-report)
# and the 1-minute load average at the end of the window.
#
# Usage: bench/latency.sh [--config 'LABEL: SETTING...']... [--rate N]
#                         [--seconds N] [--keys N] [--repeat N]
#                         [--results FILE] [--keep-stack]
#   --config   a configuration (default: one, "stack defaults", with no
#              setting). Each SETTING is one of
#                KEY=VALUE           a connector config override (connector.sh
#                                    register), e.g. poll.interval.ms=500 or
#                                    producer.override.linger.ms=5
#                consumer:KEY=VALUE  a librdkafka property of cdcstore ingest
#                                    (its --kafka-config file)
#                ingest:--FLAG=VALUE an option of cdcstore ingest
#                postgres:KEY=VALUE  a PostgreSQL setting of reload context
#                                    (ALTER SYSTEM, reset after the run), e.g.
#                                    postgres:wal_writer_delay=200ms
#   --rate     changegen statements/s (default 1300: about 1,050 row changes/s,
#              a fifth of the statements find no row)
#   --seconds  length of the measured window (default 45)
#   --keys     orders in the source and the generator's key range (20000)
#   --repeat   runs of every configuration, interleaved (default 1)
#   --results  append one JSON record per run to FILE (bench/run.sh's
#              results.jsonl; "peer": "latency")
#   --keep-stack  leave the stack up (by default it is stopped at the end
#              when this script started it)
# The stack is tests/stack/stack.sh's, with its STACK_* environment (ports,
# STACK_DIR); it is started when it is not running. The scratch files stay in
# $LAT_WORK (default a new directory in /tmp).
set -uo pipefail
export LC_ALL=C.UTF-8

CONFIGS=()
RATE=1300
SECS=45
KEYS=20000
REPEAT=1
RESULTS=
KEEP=0
while (($# > 0)); do
    case $1 in
    --config) CONFIGS+=("${2:?}"); shift ;;
    --rate) RATE=${2:?}; shift ;;
    --seconds) SECS=${2:?}; shift ;;
    --keys) KEYS=${2:?}; shift ;;
    --repeat) REPEAT=${2:?}; shift ;;
    --results) RESULTS=${2:?}; shift ;;
    --keep-stack) KEEP=1 ;;
    -h | --help)
        sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
        exit 0
        ;;
    *)
        echo "latency: unknown argument $1 (--help)" >&2
        exit 2
        ;;
    esac
    shift
done
((${#CONFIGS[@]} > 0)) || CONFIGS=("stack defaults:")

WORK=${LAT_WORK:-$(mktemp -d /tmp/cdcstore-latency.XXXXXX)}
mkdir -p "$WORK"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib.sh"

RUN=$(date +%s)
STARTED_STACK=0
ING=
PG_RESET=()   # PostgreSQL settings a configuration changed, reset after its run

# Gives the PostgreSQL settings that a configuration changed their stack values back.
pg_reset() {
    local k
    ((${#PG_RESET[@]} > 0)) || return 0
    for k in "${PG_RESET[@]}"; do su_psql -d postgres -c "ALTER SYSTEM RESET $k"; done
    su_psql -d postgres -c "SELECT pg_reload_conf()" >/dev/null
    PG_RESET=()
}

say() { printf '[latency %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# shellcheck disable=SC2317 # called by the trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    e2e_kill_started
    pg_reset 2>/dev/null
    if ((STARTED_STACK && !KEEP)); then
        "$STACK" down >>"$WORK/stack.log" 2>&1 || say "stack.sh down failed; see $WORK/stack.log"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

loadavg() { cut -d' ' -f1 /proc/loadavg; }

# measure LABEL SETTINGS RUN_NO: one run of one configuration; its JSON
# record goes into $WORK/lat<RUN_NO>_<time>/record.json, named by RECORD.
measure() {
    local label=$1 settings=$2 runno=$3 w copts=() iargs=() cprops=() pgset=()
    for w in $settings; do
        case $w in
        consumer:*=*) cprops+=("${w#consumer:}") ;;
        postgres:*=*) pgset+=("${w#postgres:}") ;;
        ingest:--*) iargs+=("${w#ingest:}") ;;
        *=*) copts+=("$w") ;;
        *) e2e_die "setting $w: not KEY=VALUE, consumer:KEY=VALUE, ingest:--FLAG=VALUE or postgres:KEY=VALUE" ;;
        esac
    done
    local id=lat${runno}_$RUN prefix dir
    prefix=$id
    dir=$WORK/$id
    mkdir -p "$dir"
    RECORD=$dir/record.json
    printf '%s\n' "${cprops[@]}" >"$dir/consumer.properties"

    reset_source >"$dir/reset.out" 2>&1 || e2e_die "resetting the source failed: $(cat "$dir/reset.out")"
    for w in "${pgset[@]}"; do
        su_psql -d postgres -c "ALTER SYSTEM SET ${w%%=*} = '${w#*=}'" || e2e_die "postgres setting $w refused"
        PG_RESET+=("${w%%=*}")
    done
    ((${#pgset[@]} == 0)) || su_psql -d postgres -c "SELECT pg_reload_conf()" >/dev/null
    "$CHANGEGEN" --seed 1 --keys "$KEYS" --init-rows "$KEYS" --count 2000 --rate 0 >"$dir/seed.out" 2>&1 ||
        e2e_die "seeding failed: $(reason_of "$dir/seed.out")"
    create_topics 1 "$prefix" --config message.timestamp.type=LogAppendTime ||
        e2e_die "creating the topics failed: $(cat "$WORK/create-topics.err")"
    start_ingest ING "$dir/replica" "$id" "$dir/ingest.log" "$dir/latency.txt" "$prefix" \
        --kafka-latency-report "$dir/kafka-latency.txt" --kafka-config "$dir/consumer.properties" "${iargs[@]}"
    E2E_CONNECTOR_OPTS="snapshot.mode=no_data ${copts[*]}" register_connector lat "$prefix" >"$dir/register.out" ||
        e2e_die "registering the connector failed: $(cat "$dir/register.out")"
    wait_streaming lat 180 >"$dir/wait.out" || e2e_die "the connector is not streaming: $(cat "$dir/wait.out")"
    "$CONN" config lat >"$dir/connector.json" 2>/dev/null

    local gen
    start_gen gen "$dir/gen-warm.out" --seed 2 --keys "$KEYS" --rate "$RATE" --duration 10
    gen_wait "$gen" "$dir/gen-warm.out" >/dev/null || e2e_die "changegen (warm-up) failed: $(reason_of "$dir/gen-warm.out.err")"
    wait_drained lat_slot "$id" "$prefix" 180 >"$dir/drain.out" || e2e_die "$(cat "$dir/drain.out")"

    local l0 k0 o0 l1 k1 o1
    l0=$(wc -l <"$dir/latency.txt")
    k0=$(wc -l <"$dir/kafka-latency.txt")
    o0=$("$E2EK" "$KAFKA_BROKERS" hw "$prefix.public.orders")
    start_gen gen "$dir/gen.out" --seed 3 --keys "$KEYS" --rate "$RATE" --duration "$SECS"
    gen_wait "$gen" "$dir/gen.out" >/dev/null || e2e_die "changegen failed: $(reason_of "$dir/gen.out.err")"
    local load
    load=$(loadavg)
    wait_drained lat_slot "$id" "$prefix" 180 >"$dir/drain.out" || e2e_die "$(cat "$dir/drain.out")"
    l1=$(wc -l <"$dir/latency.txt")
    k1=$(wc -l <"$dir/kafka-latency.txt")
    o1=$("$E2EK" "$KAFKA_BROKERS" hw "$prefix.public.orders")
    stop_ingest "$ING" >"$dir/stop.out" || say "cdcstore ingest: $(cat "$dir/stop.out")"
    ING=

    sed -n "$((l0 + 1)),${l1}p" "$dir/latency.txt" >"$dir/total.txt"
    sed -n "$((k0 + 1)),${k1}p" "$dir/kafka-latency.txt" >"$dir/stage3.txt"
    kcat -b "$KAFKA_BROKERS" -C -e -q -t "$prefix.public.orders" -o "$o0" -c "$((o1 - o0))" -f '%T\t%s\n' |
        jq -R -r "$JQ_UNWRAP"'split("\t") | [(.[0] | tonumber), (.[1] | fromjson? // null | unwrap)]
            | select(.[1] != null and .[1].source != null)
            | "\(.[1].ts_ms - .[1].source.ts_ms) \(.[0] - .[1].ts_ms)"' >"$dir/stages.txt"
    cut -d' ' -f1 "$dir/stages.txt" >"$dir/stage1.txt"
    cut -d' ' -f2 "$dir/stages.txt" >"$dir/stage2.txt"
    "$CONN" delete lat >>"$WORK/connector.log" 2>&1 || true
    pg_reset

    python3 - "$label" "$settings" "$runno" "$(gen_rate "$dir/gen.out")" "$RATE" "$SECS" "$load" \
        "$(percentiles "$dir/total.txt")" "$(percentiles "$dir/stage1.txt")" \
        "$(percentiles "$dir/stage2.txt")" "$(percentiles "$dir/stage3.txt")" "$dir/connector.json" \
        >"$RECORD" <<'EOF'
import json, sys
label, settings, runno, rate, arg, secs, load, tot, s1, s2, s3, cfg = sys.argv[1:]
def pct(s):
    f = s.split()
    d = dict(zip(f[0::2], f[1::2]))
    return {k: (int(v) if v.lstrip("-").isdigit() else None) for k, v in d.items()}
try:
    c = json.load(open(cfg))
except (OSError, ValueError):
    c = {}
keys = ("poll.interval.ms", "max.batch.size", "max.queue.size")
t = pct(tot)
rec = {"peer": "latency", "batch": -1, "config": label, "settings": settings, "run": int(runno),
       "status": "ok" if t.get("n") else "failed",
       "changes_per_s": int(rate or 0), "changegen_rate": int(arg), "seconds": int(secs),
       "loadavg_1m": float(load), "p50_ms": t.get("p50"), "p99_ms": t.get("p99"),
       "max_ms": t.get("max"), "changes": t.get("n"),
       "commit_to_event": pct(s1), "event_to_kafka": pct(s2), "kafka_to_apply": pct(s3),
       "connector": {k: c[k] for k in keys if k in c} | {k: v for k, v in c.items() if k.startswith("producer.")}}
print(json.dumps(rec))
EOF
}

e2e_build
say "starting the stack (STACK_DIR ${STACK_DIR:-default})"
if ! "$STACK" status >/dev/null 2>&1; then STARTED_STACK=1; fi
e2e_stack_up >"$WORK/stack-up.out" || e2e_die "the stack did not start; see $WORK/stack-up.log"

n=0
for ((r = 1; r <= REPEAT; r++)); do
    for cfg in "${CONFIGS[@]}"; do
        n=$((n + 1))
        label=${cfg%%:*}
        settings=${cfg#*:}
        say "run $n: $label (${settings# }), changegen --rate $RATE for ${SECS}s"
        measure "$label" "$settings" "$n" || exit 1
        [[ -n $RESULTS ]] && cat "$RECORD" >>"$RESULTS"
        jq -r '"\(.config): end to end p50 \(.p50_ms) p99 \(.p99_ms) max \(.max_ms) ms over \(.changes) changes at \(.changes_per_s)/s, load \(.loadavg_1m); commit->event p50 \(.commit_to_event.p50) p99 \(.commit_to_event.p99); event->Kafka p50 \(.event_to_kafka.p50) p99 \(.event_to_kafka.p99); Kafka->apply p50 \(.kafka_to_apply.p50) p99 \(.kafka_to_apply.p99)"' "$RECORD"
    done
done
