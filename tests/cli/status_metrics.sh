#!/usr/bin/env bash
# tests/cli/status_metrics.sh (make test-status): `cdcstore status` and the
# ingest's /metrics endpoint without a Kafka stack.  Two captured Debezium
# fixtures (kcat -J lines with topic, partition and offset) are applied with
# `cdcstore apply`; status must report, in text and --json, each partition's
# highest offset, each table's counters as `cdcstore stats` gives them, the
# newest applied change's source ts_ms and LSN (the largest in the fixture)
# and how far behind that is, the tombstones kept and the dead letters.  A
# missing replica and unreachable brokers exit 1 (the latter after printing
# what the replica knows).  Then `cdcstore ingest --metrics-addr` against a
# broker that does not answer (ingest keeps retrying) must serve /metrics:
# the metric names and types, zeros for this run, the replica's per-table
# counters.  Last, an ingest from a broker in another process (librdkafka's
# mock cluster, tests/cli/mock_kafka.c) under a steady load: /metrics shows
# cdcstore_applied_total growing and, once drained, one latency per change
# and no lag; `status --brokers` finds the position at the high watermark,
# and so does `status --kafka-config` with the brokers in the file.
# The end-to-end suite (tests/e2e/run.sh, scenario 1) checks /metrics during
# an ingest on the real stack.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${BUILD:-build}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
BIN=${CDCSTORE:-$B/cdcstore}
DATA=$ROOT/tests/data/debezium
T=$(mktemp -d /tmp/cdcstatus-test.XXXXXX)
INGEST_PID= MOCK_PID=
cleanup() {
    if [ -n "$INGEST_PID" ]; then kill "$INGEST_PID" 2>/dev/null || true; wait "$INGEST_PID" 2>/dev/null || true; fi
    if [ -n "$MOCK_PID" ]; then kill "$MOCK_PID" 2>/dev/null || true; wait "$MOCK_PID" 2>/dev/null || true; fi
    rm -rf "$T"
}
trap cleanup EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # check DESCRIPTION EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$2', got '$3'"; fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

FIXTURES=("$DATA/snapshot_stream.jsonl" "$DATA/composite_key.jsonl")
DB=$T/db
"$BIN" apply --db "$DB" "${FIXTURES[@]}" 2>"$T/apply.err"

# What the fixtures say: the highest offset per partition, the largest
# source ts_ms and LSN per topic.
cat "${FIXTURES[@]}" >"$T/all.jsonl"
jq -sc 'group_by([.topic, .partition]) | map({topic: .[0].topic, partition: .[0].partition,
        offset: (map(.offset) | max)})' "$T/all.jsonl" >"$T/want_pos.json"
newest() { # newest TOPIC FIELD
    jq -r --arg t "$1" --arg f "$2" 'select(.topic == $t and .payload != null) | .payload | fromjson
        | (.payload // .) | .source[$f]' "$T/all.jsonl" | sort -n | tail -1
}
ORD_TS=$(newest shop.public.orders ts_ms)
ORD_LSN=$(newest shop.public.orders lsn)
LIN_TS=$(newest shop.public.order_lines ts_ms)

# ---- status, text ----
"$BIN" status --db "$DB" >"$T/status.txt"
check "status exits 0" 0 $?
for row in $(jq -r '.[] | "\(.topic)[\(.partition)]=\(.offset)"' "$T/want_pos.json"); do
    if grep -qF "  ${row%=*}  offset ${row#*=}" "$T/status.txt"; then ok "text: position ${row}"
    else bad "text: no position ${row}"; cat "$T/status.txt"; fi
done
grep -qF "source ts_ms $ORD_TS " "$T/status.txt" && ok "text: newest ts_ms of public.orders" || bad "text: newest ts_ms $ORD_TS missing"
grep -qF "lsn $ORD_LSN:" "$T/status.txt" && ok "text: newest lsn of public.orders" || bad "text: newest lsn $ORD_LSN missing"
grep -qE "^  rows +[0-9]+ live, [0-9]+ tombstones? kept" "$T/status.txt" && ok "text: rows and tombstones kept" || bad "text: rows line"
grep -qE "behind the source" "$T/status.txt" && ok "text: age behind the source" || bad "text: no age"
grep -qE "high watermarks and lag need --brokers" "$T/status.txt" && ok "text: says lag needs --brokers" || bad "text: lag note"
grep -qE "latency +unknown: no cdcstore ingest has written it for this replica" "$T/status.txt" && ok "text: no latency without an ingest" || bad "text: latency line: $(grep latency "$T/status.txt")"

# ---- status --json ----
"$BIN" status --db "$DB" --json >"$T/status.json"
jq -e . "$T/status.json" >/dev/null && ok "json: one valid object" || bad "json: invalid"
check "json: positions" "$(jq -c . "$T/want_pos.json")" \
    "$(jq -c '[.partitions[] | {topic, partition, offset}]' "$T/status.json")"
check "json: orders newest_ts_ms" "$ORD_TS" "$(jq -r '.tables["public.orders"].newest_ts_ms' "$T/status.json")"
check "json: orders newest_lsn" "$ORD_LSN" "$(jq -r '.tables["public.orders"].newest_lsn' "$T/status.json")"
check "json: order_lines newest_ts_ms" "$LIN_TS" "$(jq -r '.tables["public.order_lines"].newest_ts_ms' "$T/status.json")"
MAXTS=$(printf '%s\n%s\n' "$ORD_TS" "$LIN_TS" | sort -n | tail -1)
check "json: total newest_ts_ms is the largest" "$MAXTS" "$(jq -r '.total.newest_ts_ms' "$T/status.json")"
check "json: behind_ms = now_ms - newest_ts_ms" true \
    "$(jq '.tables["public.orders"] as $t | .now_ms - $t.newest_ts_ms == $t.behind_ms' "$T/status.json")"
"$BIN" stats --db "$DB" --json >"$T/stats.json"
check "json: counters equal stats --json" "$(jq -Sc '.tables | map_values(del(.unknown_columns))' "$T/stats.json")" \
    "$(jq -Sc '.tables | map_values(.counters)' "$T/status.json")"
check "json: total counters equal stats --json" "$(jq -Sc '.total' "$T/stats.json")" \
    "$(jq -Sc '.total.counters' "$T/status.json")"
check "json: tombstones kept" "$(jq '.total.rows_deleted' "$T/stats.json")" "$(jq '.total.tombstones_kept' "$T/status.json")"
check "json: no dead letters" 0 "$(jq '.total.dead_letters' "$T/status.json")"
check "json: lag null without --brokers" null "$(jq -c '[.partitions[].lag] | unique | .[0]' "$T/status.json")"
check "json: no latency without an ingest" true "$(jq '.latency.p50_ms == null and .latency.samples == 0 and (.latency.note | test("no cdcstore ingest"))' "$T/status.json")"

# A dead letter shows.
echo '{"topic":"shop.public.orders","partition":0,"offset":100,"key":"{\"id\":1}","payload":"{not json"}' >"$T/bad.jsonl"
set +e
"$BIN" apply --db "$DB" "$T/bad.jsonl" 2>/dev/null
check "apply of a bad record exits 3" 3 $?
set -e
"$BIN" status --db "$DB" --json >"$T/status2.json"
check "json: one dead letter" 1 "$(jq '.total.dead_letters' "$T/status2.json")"
check "json: its position is stored" 100 \
    "$(jq '.partitions[] | select(.topic == "shop.public.orders" and .partition == 0) | .offset' "$T/status2.json")"
"$BIN" status --db "$DB" | grep -qE "dead letters +1 \(cdcstore dlq list\)" && ok "text: dead letters" || bad "text: dead letters"

# ---- cannot answer ----
set +e
"$BIN" status --db "$T/none" >"$T/none.out" 2>"$T/none.err"
check "missing replica exits 1" 1 $?
grep -q "cannot answer" "$T/none.err" && grep -q "$T/none" "$T/none.err" && ok "missing replica: clear message" \
    || { bad "missing replica: message"; cat "$T/none.err"; }
check "missing replica: nothing on stdout" "" "$(cat "$T/none.out")"
start=$(date +%s.%N)
"$BIN" status --db "$DB" --brokers 127.0.0.1:1 --timeout-ms 1000 --json >"$T/nobroker.json" 2>"$T/nobroker.err"
rc=$?
check "unreachable brokers exit 1" 1 $rc
check "unreachable brokers: positions still printed" "$(jq -c '[.partitions[] | {topic, partition}]' "$T/status2.json")" \
    "$(jq -c '[.partitions[] | {topic, partition}]' "$T/nobroker.json")"
check "unreachable brokers: an error per partition" true "$(jq '[.partitions[] | has("error")] | all' "$T/nobroker.json")"
grep -q "cannot answer in full" "$T/nobroker.err" && ok "unreachable brokers: says so" || bad "unreachable brokers: message"
el=$(echo "$(date +%s.%N) - $start" | bc)
if (( $(echo "$el < 5" | bc) )); then ok "unreachable brokers: answered in ${el}s"; else bad "unreachable brokers took ${el}s"; fi
"$BIN" status --help >/dev/null
check "--help exits 0" 0 $?
"$BIN" status --db "$DB" --bogus >/dev/null 2>&1
check "an unknown option exits 2" 2 $?
"$BIN" status --db "$DB" --timeout-ms abc >/dev/null 2>&1
check "a malformed --timeout-ms exits 2" 2 $?
set -e

# ---- ingest --metrics-addr, no broker ----
PORT=$(free_port)
"$BIN" ingest --db "$DB" --brokers 127.0.0.1:1 --topic shop.public.orders --metrics-addr "127.0.0.1:$PORT" \
    2>"$T/ingest.err" &
INGEST_PID=$!
for _ in $(seq 50); do curl -fsS "http://127.0.0.1:$PORT/metrics" >"$T/metrics.txt" 2>/dev/null && break; sleep 0.1; done
if [ -s "$T/metrics.txt" ]; then ok "/metrics answers while ingest waits for a broker"; else bad "/metrics did not answer"; cat "$T/ingest.err"; fi
for m in cdcstore_events_total:counter cdcstore_applied_total:counter cdcstore_stale_total:counter \
    cdcstore_duplicate_total:counter cdcstore_tombstones_total:counter cdcstore_dead_letters_total:counter \
    cdcstore_batches_total:counter cdcstore_records_per_second:gauge cdcstore_batch_apply_seconds:histogram \
    cdcstore_latency_seconds:histogram cdcstore_table_applied_total:counter cdcstore_table_rows_live:gauge \
    cdcstore_table_rows_deleted:gauge cdcstore_table_newest_change_timestamp_seconds:gauge \
    cdcstore_table_behind_source_seconds:gauge; do
    grep -qx "# TYPE ${m%:*} ${m#*:}" "$T/metrics.txt" && ok "metrics: ${m%:*} is a ${m#*:}" || bad "metrics: no ${m%:*} ${m#*:}"
done
check "metrics: run counters start at 0" "0 0 0" \
    "$(awk '$1 == "cdcstore_events_total" || $1 == "cdcstore_applied_total" || $1 == "cdcstore_dead_letters_total" {printf "%s%s", s, $2; s=" "}' "$T/metrics.txt")"
check "metrics: latency buckets" '0.05 0.1 0.25 0.5 1 2.5 5 10 +Inf' \
    "$(sed -n 's/^cdcstore_latency_seconds_bucket{le="\([^"]*\)"}.*/\1/p' "$T/metrics.txt" | paste -sd' ')"
check "metrics: table counters equal stats" "$(jq '.tables["public.orders"].applied' "$T/stats.json")" \
    "$(awk '$1 == "cdcstore_table_applied_total{table=\"public.orders\"}" {print $2}' "$T/metrics.txt")"
check "metrics: newest change timestamp" "$(echo "scale=3; $ORD_TS / 1000" | bc)" \
    "$(awk '$1 == "cdcstore_table_newest_change_timestamp_seconds{table=\"public.orders\"}" {print $2}' "$T/metrics.txt")"
"$BIN" status --db "$DB" --json >"$T/status3.json"
check "status answers while ingest holds the replica" 0 $?
check "status while ingest runs: the same positions" "$(jq -c .partitions "$T/status2.json")" "$(jq -c .partitions "$T/status3.json")"
# name[] picks families (the filter of Prometheus' Java client): only those asked for, each whole
check "metrics: name[] serves only the families asked for" \
    "cdcstore_events_total cdcstore_table_rows_live" \
    "$(curl -fsS -g "http://127.0.0.1:$PORT/metrics?name[]=cdcstore_table_rows_live&name[]=cdcstore_events_total" | sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' | paste -sd' ')"
check "metrics: name[] gives the family's samples as the whole page does" \
    "$(grep '^cdcstore_table_rows_live{' "$T/metrics.txt")" \
    "$(curl -fsS -g "http://127.0.0.1:$PORT/metrics?name%5B%5D=cdcstore_table_rows_live" | grep -v '^#')"
check "metrics: a histogram by its family name" "$(grep -c '^cdcstore_latency_seconds_' "$T/metrics.txt")" \
    "$(curl -fsS -g "http://127.0.0.1:$PORT/metrics?name[]=cdcstore_latency_seconds" | grep -c '^cdcstore_latency_seconds_')"
check "metrics: name[] of no family gives an empty page" 0 \
    "$(curl -fsS -g "http://127.0.0.1:$PORT/metrics?name[]=cdcstore_nothing" | wc -c)"
check "metrics: other paths are 404" 404 "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/")"
# A second process cannot listen on the same port: exit 1.
set +e
"$BIN" ingest --db "$T/db2" --brokers 127.0.0.1:1 --topic t --metrics-addr "127.0.0.1:$PORT" 2>"$T/busy.err"
check "metrics port in use exits 1" 1 $?
"$BIN" ingest --db "$T/db3" --brokers 127.0.0.1:1 --topic t --metrics-addr nonsense 2>/dev/null
check "malformed --metrics-addr exits 2" 2 $?
kill -TERM "$INGEST_PID"
wait "$INGEST_PID"
check "ingest stops on SIGTERM with 0" 0 $?
INGEST_PID=
set -e

# ---- ingest from a mock broker: /metrics under load, status --brokers ----
# tests/cli/mock_kafka produces RATE creates a second for SECS seconds to
# one partition; the ingest applies them while /metrics is scraped twice.
MOCK=${MOCK_KAFKA:-$B/tests/mock_kafka}
RATE=200 SECS=8 N=$((200 * 8)) TOPIC=shop.public.items
mkfifo "$T/mock.in"
exec 3<>"$T/mock.in"            # the mock broker stays up until fd 3 closes
"$MOCK" "$TOPIC" "$RATE" "$SECS" <"$T/mock.in" 3>&- >"$T/mock.out" 2>"$T/mock.err" &
MOCK_PID=$!
for _ in $(seq 50); do [ -s "$T/mock.out" ] && break; sleep 0.1; done
BOOT=$(head -1 "$T/mock.out")
[ -n "$BOOT" ] && ok "mock broker at $BOOT" || { bad "mock broker did not start: $(cat "$T/mock.err")"; }
PORT=$(free_port)
LIVE=$T/live
"$BIN" ingest --db "$LIVE" --brokers "$BOOT" --topic "$TOPIC" --batch-max-ms 50 \
    --metrics-addr "127.0.0.1:$PORT" --latency-report "$T/latency.txt" 2>"$T/ingest-live.err" 3>&- &
INGEST_PID=$!
scrape() { curl -fsS --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$1" 2>/dev/null; }
value() { awk -v n="$2" '$1 == n {print $2}' "$1"; }
# the first scrape once the ingest applies (its group join takes seconds)
for _ in $(seq 100); do
    scrape "$T/m1.txt" && [ "$(value "$T/m1.txt" cdcstore_applied_total)" -gt 0 ] && break
    sleep 0.1
done
sleep 2
scrape "$T/m2.txt" || true
a=$(value "$T/m1.txt" cdcstore_applied_total) b=$(value "$T/m2.txt" cdcstore_applied_total)
if [ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ]; then ok "metrics: cdcstore_applied_total grows under load ($a -> $b in 2 s)"
else bad "metrics: cdcstore_applied_total did not grow: '$a' then '$b'"; tail -5 "$T/ingest-live.err"; fi
r=$(value "$T/m2.txt" cdcstore_records_per_second)
if awk -v r="${r:-0}" 'BEGIN { exit !(r > 50) }'; then ok "metrics: records_per_second $r under a load of $RATE/s"
else bad "metrics: records_per_second '$r' under a load of $RATE/s"; fi
for _ in $(seq 100); do grep -q "^produced" "$T/mock.out" && break; sleep 0.2; done
grep -q "^produced $N" "$T/mock.out" && ok "mock broker produced $N records" || bad "mock broker: $(cat "$T/mock.out" "$T/mock.err")"
# drained: the stored position reaches the last offset
for _ in $(seq 100); do
    [ "$("$BIN" status --db "$LIVE" --json 2>/dev/null | jq '.partitions[0].offset // -1')" = $((N - 1)) ] && break
    sleep 0.2
done
set +e
"$BIN" status --db "$LIVE" --brokers "$BOOT" --json >"$T/live.json" 2>"$T/live.err"
check "status --brokers exits 0 with a broker" 0 $?
set -e
check "status --brokers: offset, high watermark, lag" "$((N - 1)) $N 0 0" \
    "$(jq -r '"\(.partitions[0].offset) \(.partitions[0].high_watermark) \(.partitions[0].lag) \(.total.lag)"' "$T/live.json")"
check "status --brokers: every change applied" "$N" "$(jq '.tables["public.items"].counters.applied' "$T/live.json")"
"$BIN" status --db "$LIVE" --brokers "$BOOT" | grep -qE "^  $TOPIC\[0\]  offset $((N - 1))  high watermark $N  lag 0$" \
    && ok "status --brokers: text" || bad "status --brokers: text: $("$BIN" status --db "$LIVE" --brokers "$BOOT" | grep "$TOPIC")"
# --kafka-config: the ingest's librdkafka file (its consumer properties
# unused), whose bootstrap.servers serves without --brokers; --brokers set
# over a file's wrong address; a bad line and an unknown property named
# with FILE:LINE.
printf '# the ingest'"'"'s file\nbootstrap.servers = %s\ngroup.id=cdcstore\nauto.offset.reset=earliest\n' "$BOOT" >"$T/k.properties"
set +e
"$BIN" status --db "$LIVE" --kafka-config "$T/k.properties" --json >"$T/kc.json" 2>"$T/kc.err"
check "status --kafka-config exits 0" 0 $?
check "status --kafka-config: high watermark and lag from the file's brokers" "$N 0" \
    "$(jq -r '"\(.partitions[0].high_watermark) \(.partitions[0].lag)"' "$T/kc.json")"
printf 'bootstrap.servers=127.0.0.1:1\n' >"$T/k2.properties"
"$BIN" status --db "$LIVE" --kafka-config "$T/k2.properties" --brokers "$BOOT" --json >"$T/kc2.json" 2>"$T/kc2.err"
check "status: --brokers over the file's bootstrap.servers" "0 $N" \
    "$? $(jq -r '.partitions[0].high_watermark' "$T/kc2.json")"
printf 'bootstrap.servers=%s\nsecurity.protocol\n' "$BOOT" >"$T/k3.properties"
"$BIN" status --db "$LIVE" --kafka-config "$T/k3.properties" >"$T/kc3.out" 2>"$T/kc3.err"
check "status --kafka-config with a bad line exits 1" 1 $?
grep -q "$T/k3.properties:2: expected key=value" "$T/kc3.err" && ok "status --kafka-config: the bad line named" \
    || bad "status --kafka-config: bad line message: $(cat "$T/kc3.err")"
printf 'bootstrap.servers=%s\nno.such.property=1\n' "$BOOT" >"$T/k4.properties"
"$BIN" status --db "$LIVE" --kafka-config "$T/k4.properties" >"$T/kc4.out" 2>"$T/kc4.err"
check "status --kafka-config with an unknown property exits 1" 1 $?
grep -q "$T/k4.properties:2: property no.such.property" "$T/kc4.err" && ok "status --kafka-config: the property named" \
    || bad "status --kafka-config: unknown property message: $(cat "$T/kc4.err")"
"$BIN" status --db "$LIVE" --kafka-config "$T/missing.properties" >/dev/null 2>"$T/kc5.err"
check "status --kafka-config with a missing file exits 1" 1 $?
grep -q "$T/missing.properties: cannot open" "$T/kc5.err" && ok "status --kafka-config: the missing file named" \
    || bad "status --kafka-config: missing file message: $(cat "$T/kc5.err")"
set -e
behind=$(jq '.tables["public.items"].behind_ms' "$T/live.json")
if [ "$behind" -ge 0 ] && [ "$behind" -lt 60000 ]; then ok "status: ${behind} ms behind the source"; else bad "status: behind_ms $behind"; fi
# the last minute's latency, written down by the running ingest every second
"$BIN" status --db "$LIVE" --json >"$T/lat-run.json"
check "status: the running ingest's latency (pid, p50 <= p99 <= max, 1 to $N changes in 60 s)" true \
    "$(jq --argjson n "$N" --argjson pid "$INGEST_PID" '.latency | .running and (.stale | not) and .pid == $pid
        and .window_s == 60 and .samples >= 1 and .samples <= $n and .p50_ms <= .p99_ms and .p99_ms <= .max_ms' "$T/lat-run.json")"
"$BIN" status --db "$LIVE" | grep -qE "^  latency +p50 [0-9]+ ms, p99 [0-9]+ ms, max [0-9]+ ms over [0-9]+ changes? in the last 60 s \(ingest pid $INGEST_PID, " \
    && ok "status: latency line of the running ingest" || bad "status: latency line: $("$BIN" status --db "$LIVE" | grep latency)"
sleep 0.3
scrape "$T/m3.txt" || true
check "metrics: applied_total = every change" "$N" "$(value "$T/m3.txt" cdcstore_applied_total)"
check "metrics: one latency per change" "$N $N" \
    "$(value "$T/m3.txt" cdcstore_latency_seconds_count) $(value "$T/m3.txt" 'cdcstore_latency_seconds_bucket{le="+Inf"}')"
check "metrics: consumer lag 0 once drained" 0 "$(value "$T/m3.txt" cdcstore_consumer_lag_records)"
check "metrics: table counters" "$N" "$(value "$T/m3.txt" 'cdcstore_table_applied_total{table="public.items"}')"
nb=$(value "$T/m3.txt" cdcstore_batches_total)
check "metrics: one apply time per batch" "$nb" "$(value "$T/m3.txt" cdcstore_batch_apply_seconds_count)"
kill -TERM "$INGEST_PID"
set +e
wait "$INGEST_PID"
check "ingest from the mock broker stops on SIGTERM with 0" 0 $?
INGEST_PID=
# After the stop: every change in the window, its p50 and p99 within the
# histogram's 5% of the exact figures of --latency-report.
"$BIN" status --db "$LIVE" --json >"$T/lat-stop.json"
sort -n "$T/latency.txt" >"$T/latency.sorted"
n=$(wc -l <"$T/latency.sorted")
e50=$(sed -n "$(((n + 1) / 2))p" "$T/latency.sorted") e99=$(sed -n "$((n - n / 100))p" "$T/latency.sorted")
check "status after the stop: not running, all $N changes" "false $N $N" \
    "$(jq -r '"\(.latency.running) \(.latency.samples)"' "$T/lat-stop.json") $n"
check "status: p50 and p99 within 5% above the exact $e50 and $e99 ms" true \
    "$(jq --argjson a "${e50:-0}" --argjson b "${e99:-0}" '.latency | .p50_ms >= $a and .p50_ms <= $a * 1.05 + 1
        and .p99_ms >= $b and .p99_ms <= $b * 1.05 + 1' "$T/lat-stop.json")"
"$BIN" status --db "$LIVE" | grep -qE "^  latency +p50 .* in the last 60 s; the ingest \(pid [0-9]+\) stopped [0-9]+ s ago" \
    && ok "status: says the ingest stopped" || bad "status: latency line: $("$BIN" status --db "$LIVE" | grep latency)"
exec 3>&-
wait "$MOCK_PID"
check "mock broker exits 0" 0 $?
MOCK_PID=
set -e

echo "# status_metrics: $pass passed, $fail failed"
[ "$fail" = 0 ]
