#!/usr/bin/env bash
# tests/cli/run.sh (make test-install): the command as a newcomer meets it.
# A failed apply prints no made-up counters, says why once and leaves no
# empty replica behind (but never removes one that was there); every
# numeric option refuses a value that is not a number in its range, naming
# the option and the value, with exit status 2; --version; get names a bad
# key once; counts are singular or plural as English wants; the
# shared --db/--table options of get, resume and tables; gc's --older-than
# (a bad duration refused with exit 2; the horizon it derives purges the
# old tombstone only, and a late older update stays stale); and, against a
# throw-away PostgreSQL (skipped without one), reconcile's summary counts a
# row whose column differs as "different" and says what the other counts
# are.  Takes a few seconds.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${CDCSTORE:-$ROOT/build/cdcstore}
EVENTS=$ROOT/tests/data/doc/events.jsonl
T=$(mktemp -d /tmp/cdccli.XXXXXX)
chmod 755 "$T"
. "$ROOT/tests/lib/pg.sh"
trap 'pg_stop "$T/pg"; rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
# check NAME CMD...: CMD succeeds
check() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
# run ARGS...: runs the command (10 s at most); exit status in $rc, stdout in $T/out,
# stderr in $T/err
run() {
    timeout 10 "$BIN" "$@" >"$T/out" 2>"$T/err"
    rc=$?
}
has() { grep -qF -- "$1" "$T/err"; }
# count WORD FILE: lines holding WORD
count() { grep -cF -- "$1" "$2"; }

# ---- apply: an input that cannot be read ----
cd "$T" || exit 1
run apply --db "$T/new" "$T/missing-file"
check "apply of a missing file: exit 1 (got $rc)" test "$rc" = 1
check "apply of a missing file: no replica directory left behind" test ! -e "$T/new"
check "apply of a missing file: the reason once ($(head -c 300 "$T/err"))" \
    test "$(grep -o 'No such file or directory' "$T/err" | wc -l)" = 1
check "apply of a missing file: no counters made up (no number of 6 digits or more)" \
    bash -c "! grep -qE '[0-9]{6,}' '$T/err'"
mkdir "$T/adir"
run apply --db "$T/new" "$T/adir"
check "apply of an unreadable input (a directory): exit 1, the replica it created is removed (got $rc)" \
    bash -c "test $rc = 1 && test ! -e '$T/new'"
run apply --db "$T/new" --column-type public.orders.amount=nosuchtype "$EVENTS"
check "apply with an unknown --column-type: exit 1, the replica it created is removed (got $rc)" \
    bash -c "test $rc = 1 && test ! -e '$T/new'"
run apply --db "$T/db" "$EVENTS"
check "apply of the document's events: exit 0 (got $rc)" test "$rc" = 0
run apply --db "$T/db" "$T/missing-file"
check "apply of a missing file to an existing replica: exit 1, the replica stays (got $rc)" \
    bash -c "test $rc = 1 && test -d '$T/db'"
run apply --db "$T/db" "$T/adir"
run stats --db "$T/db" --table public.orders
check "apply of an unreadable input to an existing replica: it stays and reads as before" \
    grep -q 'rows_live *3' "$T/out"
mkdir "$T/empty"
run apply --db "$T/empty" "$T/missing-file"
check "apply of a missing file into an existing empty directory: the directory stays" test -d "$T/empty"
mkdir -p "$T/adir"
run apply --db "$T/dirdb" "$EVENTS" "$T/adir"
check "apply of a file and a directory: exit 1 naming the directory, nothing applied, no replica ($rc: $(cat "$T/err"))" \
    bash -c "test $rc = 1 && grep -q 'adir: a directory, not a file of records; nothing was applied' '$T/err' && test ! -e '$T/dirdb'"

# ---- numeric options ----
# bad_number WHAT VALUE ARGS...: exit 2 and a message naming WHAT and VALUE
# (VALUE empty: WHAT holds it, as "--decimal S.T.C=X")
bad_number() {
    local what=$1 value=$2
    shift 2
    run "$@"
    if [[ $rc == 2 ]] && has "$what${value:+ $value}: expected"; then
        ok "$* : exit 2, names $what $value"
    else
        bad "$* : exit $rc, $(head -c 300 "$T/err")"
    fi
}
for v in abc -1 10x 0 ' 5' 99999999999999999999999; do
    bad_number --batch-size "$v" apply --db "$T/nodb" --batch-size "$v" "$EVENTS"
done
check "refused numbers: no replica directory created" test ! -e "$T/nodb"
bad_number "--decimal public.orders.amount=x" "" apply --db "$T/nodb" --decimal public.orders.amount=x "$EVENTS"
bad_number "--decimal public.orders.amount=1001" "" apply --db "$T/nodb" --decimal public.orders.amount=1001 "$EVENTS"
bad_number "--decimal public.orders.amount=x" "" ingest --db "$T/nodb" --brokers 127.0.0.1:9 --topic t \
    --decimal public.orders.amount=x
bad_number --batch-max-events abc ingest --db "$T/nodb" --brokers 127.0.0.1:9 --topic t --batch-max-events abc
bad_number --batch-max-ms 1x ingest --db "$T/nodb" --brokers 127.0.0.1:9 --topic t --batch-max-ms 1x
bad_number --batch-max-ms -5 ingest --db "$T/nodb" --brokers 127.0.0.1:9 --topic t --batch-max-ms -5
bad_number --ranges abc hash --db "$T/db" --table public.orders --ranges abc
bad_number --range-width 0 hash --db "$T/db" --table public.orders --range-width 0
for f in --ranges --range-width --threshold --rechecks --recheck-wait; do
    bad_number "$f" 7q reconcile --db "$T/db" --table public.orders --source "host=/nonexistent" "$f" 7q
done
bad_number --rechecks 1000 reconcile --db "$T/db" --table public.orders --source "host=/nonexistent" --rechecks 1000
bad_number --row-group-rows 0 export --db "$T/db" --table public.orders --format parquet --row-group-rows 0
bad_number --file-rows 1e6 export --db "$T/db" --table public.orders --format delta --file-rows 1e6 --output "$T/delta"
bad_number --horizon-lsn 1/zz gc --db "$T/db" --horizon-lsn 1/zz
bad_number --horizon-lsn 12a gc --db "$T/db" --horizon-lsn 12a
check "refused numbers: still no replica directory" test ! -e "$T/nodb"
run apply --db "$T/b1" --batch-size 1 --quiet "$EVENTS"
check "apply --batch-size 1: accepted (got $rc)" test "$rc" = 0
run gc --db "$T/b1" --horizon-lsn 0/A
check "gc --horizon-lsn 0/A: accepted, LSN 10 ($(cat "$T/err"))" has "below LSN 10"
# the largest LSN as the horizon purges every tombstone (the document's
# events hold one), as any horizon above them does
run apply --db "$T/b2" --quiet "$EVENTS"
run gc --db "$T/b2" --horizon-lsn FFFFFFFF/FFFFFFFF
check "gc --horizon-lsn FFFFFFFF/FFFFFFFF: the tombstone removed (exit $rc: $(cat "$T/err"))" \
    bash -c "[ $rc = 0 ] && grep -q '^cdcstore gc: 1 tombstone removed' '$T/err'"
for v in 7x 0d abc 12 -1h 1.5h; do
    bad_number --older-than "$v" gc --db "$T/b1" --older-than "$v"
done
run gc --db "$T/b1"
check "gc without --horizon-lsn or --older-than: exit 2 and the usage (got $rc)" \
    bash -c "test $rc = 2 && grep -q -- '--older-than DURATION' '$T/err'"
run gc --help
check "gc --help: exit 0, names both ways to give the horizon" \
    bash -c "test $rc = 0 && grep -q -- '--horizon-lsn LSN' '$T/out' && grep -q -- '--older-than DURATION' '$T/out'"

# ---- gc --older-than: the horizon from the tombstones' source ts_ms ----
# Key 1 was deleted long ago (1970), key 2 today: --older-than 1d purges the
# first tombstone only, with the horizon just above it (LSN 21, below the
# newer rows' LSN 30); a late update of key 1 older than the horizon stays
# stale, a newer one inserts.
now=$(($(date +%s) * 1000))
ev() { # ev OFFSET KEY OP LSN TS
    local after=null before=null
    if [[ $3 == d ]]; then before="{\\\"id\\\":$2}"; else after="{\\\"id\\\":$2,\\\"v\\\":\\\"$3$4\\\"}"; fi
    printf '{"topic":"shop.public.t","partition":0,"offset":%d,"key":"{\\"id\\":%d}","payload":"{\\"op\\":\\"%s\\",\\"before\\":%s,\\"after\\":%s,\\"source\\":{\\"lsn\\":%d,\\"ts_ms\\":%d},\\"ts_ms\\":%d}"}\n' \
        "$1" "$2" "$3" "$before" "$after" "$4" "$5" "$5"
}
{ ev 1 1 c 10 1000; ev 2 1 d 20 2000; ev 3 2 c 30 "$now"; ev 4 2 d 40 "$now"; } >"$T/old.jsonl"
run apply --db "$T/o" "$T/old.jsonl"
check "gc --older-than: the input applies ($(head -c 300 "$T/err"))" test "$rc" = 0
run gc --db "$T/o" --older-than 1d
check "gc --older-than 1d: exit 0, 1 tombstone removed below LSN 21 ($(cat "$T/err"))" \
    bash -c "test $rc = 0 && grep -q ': 1 tombstone removed below LSN 21; table files: ' '$T/err'"
run get --db "$T/o" --table public.t '[1]'
check "gc --older-than 1d: key 1's tombstone is gone (got $rc)" test "$rc" != 0
run stats --db "$T/o" --table public.t
check "gc --older-than 1d: tombstones_purged 1, rows_deleted 1" \
    bash -c "grep -q 'tombstones_purged *1\$' '$T/out' && grep -q 'rows_deleted *1\$' '$T/out'"
{ ev 5 1 u 15 3000; ev 6 3 c 50 "$now"; } >"$T/late.jsonl"
run apply --db "$T/o" "$T/late.jsonl"
run get --db "$T/o" --table public.t '[1]'
check "gc --older-than 1d: a late update of key 1 below the horizon stays stale (got $rc)" test "$rc" != 0
run get --db "$T/o" --table public.t '[3]'
check "gc --older-than 1d: a newer insert applies ($(head -c 200 "$T/out"))" grep -q c50 "$T/out"
run gc --db "$T/o" --older-than 1d
check "gc --older-than 1d again: nothing more to remove ($(cat "$T/err"))" \
    bash -c "test $rc = 0 && grep -q ': 0 tombstones removed' '$T/err'"

# ---- --version ----
run --version
check "cdcstore --version: exit 0, prints the version ($(cat "$T/out"))" \
    bash -c "test $rc = 0 && grep -qE '^cdcstore [0-9]+\.[0-9]+\.[0-9]+$' '$T/out'"
"$BIN" version >"$T/version"
check "cdcstore --version prints what cdcstore version prints" cmp -s "$T/out" "$T/version"
run --log-format yaml version
check "--log-format yaml: refused, exit 2 (got $rc)" bash -c "test $rc = 2 && grep -q 'text or json' '$T/err'"

# ---- get, resume, tables: the shared --db/--table ----
run get --db "$T/db" --table public.orders '{bad'
check "get with a malformed key: exit 1, the key named once ($(cat "$T/err"))" \
    bash -c "test $rc = 1 && test \$(grep -o '{bad' '$T/err' | wc -l) = 1"
run get --db "$T/db" --table public.orders '{"order_id":3}'
check "get: the row (exit $rc)" grep -q '"status":"paid"' "$T/out"
for c in get resume; do
    run "$c" --db "$T/db"
    check "$c without --table: usage, exit 2 (got $rc)" bash -c "test $rc = 2 && grep -q 'usage: cdcstore $c' '$T/err'"
    run "$c" --help
    check "$c --help: usage on stdout, exit 0 (got $rc)" bash -c "test $rc = 0 && grep -q 'usage: cdcstore $c' '$T/out'"
done
run get --db "$T/db" --table public.orders
check "get without a key: usage, exit 2 (got $rc)" test "$rc" = 2
run resume --db "$T/nodb" --table public.orders
check "resume of a replica that does not exist: exit 1, nothing created (got $rc)" \
    bash -c "test $rc = 1 && test ! -e '$T/nodb'"
run resume --db "$T/db" --table public.orders
check "resume: exit 0 ($(cat "$T/err"))" bash -c "test $rc = 0 && grep -q 'was not stopped' '$T/err'"
# An existing empty directory is no replica: gc and resume refuse it and leave it empty.
mkdir -p "$T/emptydir"
for c in "resume --table public.orders" "gc --horizon-lsn 5"; do
    # shellcheck disable=SC2086
    run $c --db "$T/emptydir"
    check "$c on an empty directory: exit 1, 'not a replica (empty)', still empty (got $rc)" \
        bash -c "test $rc = 1 && grep -q 'not a replica (empty)' '$T/err' && test -z \"\$(ls -A '$T/emptydir')\""
done
run tables --help
check "tables --help: usage, exit 0 (got $rc)" bash -c "test $rc = 0 && grep -q 'usage: cdcstore tables' '$T/out'"
run tables --db "$T/db"
check "tables: the table (exit $rc)" bash -c "test $rc = 0 && test \"\$(cat '$T/out')\" = public.orders"

# ---- a column's declaration (--decimal, --column-type) cannot change ----
run apply --db "$T/decl" --quiet --decimal public.orders.amount=2 --column-type public.orders.created_at=timestamp "$EVENTS"
run apply --db "$T/decl" --quiet --decimal public.orders.amount=2 --column-type public.orders.created_at=timestamp "$EVENTS"
check "declarations: the same again is accepted (exit $rc: the file's amounts are not base64, dead letters)" \
    bash -c "test $rc = 3 && ! grep -q 'declared before' '$T/err'"
run apply --db "$T/decl" --quiet --decimal public.orders.amount=5 "$EVENTS"
check "declarations: another scale for the column is refused, naming both (exit $rc)" \
    bash -c "test $rc = 1 && grep -q 'reads its values as NUMERIC of scale 2, declared before; NUMERIC of scale 5' '$T/err'"
run apply --db "$T/decl" --quiet --column-type public.orders.created_at=date "$EVENTS"
check "declarations: another type for the column is refused (exit $rc)" \
    bash -c "test $rc = 1 && grep -q 'as type timestamp, declared before; type date' '$T/err'"
run apply --db "$T/decl2" --decimal public.orders.amount=2 --decimal public.orders.amount=3 "$EVENTS"
check "declarations: a column declared twice differently in one command: usage error, no replica (exit $rc)" \
    bash -c "test $rc = 2 && grep -q 'declared twice, differently' '$T/err' && test ! -e '$T/decl2'"
run apply --db "$T/decl3" --quiet --decimal public.orders.amount=2 --column-type public.orders.amount=numeric:2 \
    --decimal public.orders.amount=02 --column-type public.orders.created_at=timestamp \
    --column-type public.orders.created_at=timestamp-us "$EVENTS"
check "declarations: one meaning spelt several ways in one command is accepted (exit $rc)" \
    bash -c "test $rc = 3 && ! grep -q 'declared twice' '$T/err'"
run apply --db "$T/decl2" --column-type public.orders=date "$EVENTS"
check "declarations: SCHEMA.TABLE without a column is a usage error (exit $rc)" \
    bash -c "test $rc = 2 && grep -q 'expected SCHEMA.TABLE.COLUMN=TYPE' '$T/err'"

# ---- a table stopped by a type change: status says so, resume clears it ----
cat > "$T/stop.jsonl" <<'EOF2'
{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"int64","optional":true,"field":"v"}],"optional":true,"field":"after"}]},"payload":{"op":"c","after":{"id":1,"v":5},"source":{"schema":"public","table":"s","lsn":10},"ts_ms":1}}
{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":true,"field":"v"}],"optional":true,"field":"after"}]},"payload":{"op":"u","after":{"id":1,"v":"x"},"source":{"schema":"public","table":"s","lsn":20},"ts_ms":2}}
EOF2
run apply --db "$T/stop" "$T/stop.jsonl"
check "type change: exit 3, the message says resume then re-read ($rc)" \
    bash -c "test $rc = 3 && grep -q 'resume --db DIR --table public.s\`, then re-read the table' '$T/err'"
run status --db "$T/stop"
check "status: the stopped table says STOPPED and why (exit $rc)" \
    bash -c "grep -q '^  STOPPED  *column v changed type from int64 to string' '$T/out'"
run status --db "$T/stop" --json
check "status --json: \"stopped\" holds the reason" \
    python3 -c "import json,sys; d=json.load(open('$T/out')); sys.exit(0 if 'int64 to string' in d['tables']['public.s']['stopped'] else 1)"
run export --db "$T/stop" --table public.s
check "export of the stopped table: exit 0, warned that its rows may differ from the source ($rc)" \
    bash -c "test $rc = 0 && grep -q 'warning: public.s is stopped (column v changed type' '$T/err' && grep -q '^1,5$' '$T/out'"
run resume --db "$T/stop" --table public.s
run export --db "$T/stop" --table public.s
check "export after resume: no warning ($rc)" bash -c "test $rc = 0 && ! grep -q 'is stopped' '$T/err'"
run status --db "$T/stop" --json
check "status --json after resume: \"stopped\" is null" \
    python3 -c "import json,sys; d=json.load(open('$T/out')); sys.exit(0 if d['tables']['public.s']['stopped'] is None else 1)"

# ---- the summary accounts for every record: heartbeats, transaction records and messages ----
cat > "$T/other.jsonl" <<'EOF2'
{"topic":"__debezium-heartbeat.shop","partition":0,"offset":0,"key":"{\"serverName\":\"shop\"}","payload":"{\"ts_ms\":1796232054200}"}
{"topic":"shop.transaction","partition":0,"offset":0,"key":"{\"id\":\"774:1\"}","payload":"{\"status\":\"BEGIN\",\"id\":\"774:1\",\"event_count\":null,\"data_collections\":null,\"ts_ms\":1796232054200}"}
{"topic":"shop.transaction","partition":0,"offset":1,"key":"{\"id\":\"774:1\"}","payload":"{\"status\":\"END\",\"id\":\"774:1\",\"event_count\":0,\"data_collections\":[],\"ts_ms\":1796232054200}"}
{"topic":"shop.public.t","partition":0,"offset":0,"key":"{\"id\":1}","payload":"{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"schema\":\"public\",\"table\":\"t\",\"lsn\":5}}"}
EOF2
run apply --db "$T/other" "$T/other.jsonl"
check "apply summary: 4 records = 1 applied + 3 other ($(cat "$T/err"))" \
    bash -c "test $rc = 0 && grep -q '4 records in .*: 1 applied, .*, 3 other (heartbeats, transaction records, messages)' '$T/err'"

# ---- --log-format json: every line on stderr is a JSON object ----
printf '{bad\n' > "$T/bad1.jsonl"
: > "$T/jlog"
for args in "apply --db $T/jl $T/bad1.jsonl" "apply --db $T/jl $T/other.jsonl" "apply --db $T/jl $T/missing.jsonl" \
    "get --db $T/jl --table public.t [1]" "stats --db $T/nosuch" "gc --db $T/jl --horizon-lsn 5" \
    "resume --db $T/jl --table public.t" "dlq list --db $T/jl"; do
  # shellcheck disable=SC2086
  "$BIN" --log-format json $args >/dev/null 2>>"$T/jlog" || true
done
check "--log-format json: $(wc -l <"$T/jlog") lines on stderr, each a JSON object with ts, level, msg" \
    python3 -c "
import json, sys
lines = open('$T/jlog').read().splitlines()
bad = [l for l in lines if not (l.startswith('{') and all(k in json.loads(l) for k in ('ts', 'level', 'msg')))]
levels = {json.loads(l)['level'] for l in lines if l.startswith('{')}
sys.exit(1 if bad or len(lines) < 8 or not {'info', 'warn', 'error'} <= levels else 0)"

# ---- singular and plural ----
run apply --db "$T/p" "$EVENTS"
check "apply summary: 1 tombstone, 0 dead letters ($(cat "$T/err"))" \
    bash -c "grep -q '11 records in' '$T/err' && grep -q ', 1 tombstone, 0 dead letters' '$T/err'"
run apply --db "$T/p" - <<<'not json'
check "apply summary: 1 record, 1 dead letter ($(paste -sd' ' "$T/err" | head -c 400))" \
    bash -c "grep -q ': 1 record in' '$T/err' && grep -q ', 1 dead letter\$' '$T/err' &&
             grep -q '1 dead letter written' '$T/err'"
run dlq list --db "$T/p"
check "dlq list: 1 dead letter" grep -qx '1 dead letter' "$T/err"
# The same bad record again (a replay): counted, said, stored once.
run apply --db "$T/p" - <<<'not json'
check "apply again: the dead letter met again, exit 3 ($rc: $(paste -sd' ' "$T/err" | head -c 400))" \
    bash -c "test $rc = 3 && grep -q ', 1 dead letter\$' '$T/err' &&
             grep -q '0 dead letters written, 1 met again (in the dead-letter store already' '$T/err'"
run dlq list --db "$T/p"
check "dlq list after the replay: still 1 dead letter" grep -qx '1 dead letter' "$T/err"
run gc --db "$T/p" --horizon-lsn 0 --older-than 1s
check "gc --horizon-lsn 0 --older-than: the lower horizon, 0: nothing removed ($(cat "$T/err"))" \
    has "nothing lies below LSN 0: 0 tombstones removed"
run gc --db "$T/p" --horizon-lsn 1000
check "gc: 1 tombstone removed ($(cat "$T/err"))" has ": 1 tombstone removed below"

# ---- doctor: its arguments, and endpoints that do not answer ----
run doctor
check "doctor without --source: exit 2, the usage says why (got $rc)" \
    bash -c "test $rc = 2 && grep -q -- '--source CONNINFO is required' '$T/err' && grep -q '^usage: cdcstore doctor' '$T/err'"
run doctor --help
check "doctor --help: exit 0, the usage on stdout (got $rc)" bash -c "test $rc = 0 && grep -q '^usage: cdcstore doctor' '$T/out'"
run doctor --source "host=127.0.0.1 port=1" --connect http://127.0.0.1:1
check "doctor --connect without --connector: exit 2 (got $rc)" \
    bash -c "test $rc = 2 && grep -q -- '--connect URL and --connector NAME go together' '$T/err'"
run doctor --source "host=127.0.0.1 port=1" --brokers 127.0.0.1:1
check "doctor --brokers without --db: exit 2 (got $rc)" bash -c "test $rc = 2 && grep -q -- '--brokers needs --db' '$T/err'"
run doctor --source "host=127.0.0.1 port=1" --kafka-config /dev/null
check "doctor --kafka-config without --db: exit 2 (got $rc)" bash -c "test $rc = 2 && grep -q -- '--kafka-config needs --db' '$T/err'"
bad_number --wal-warn-pct 101 doctor --source x --wal-warn-pct 101
run doctor --source x --wal-warn 5XB
check "doctor --wal-warn 5XB: exit 2, names the option and the value (got $rc)" \
    bash -c "test $rc = 2 && grep -q -- '--wal-warn 5XB: expected a size' '$T/err'"
run doctor --source x --lag-warn 10 --lag-fail 5
check "doctor --lag-warn above --lag-fail: exit 2 (got $rc)" test "$rc" = 2
run doctor --source "host=127.0.0.1 port=1 dbname=shop user=app password=hunter2" --db "$T/no-replica"
check "doctor, a source that cannot be reached: a FAIL line naming it, exit 2 (got $rc: $(head -c 200 "$T/out"))" \
    bash -c "test $rc = 2 && grep -q '^FAIL source user=app dbname=shop host=127.0.0.1 port=1: cannot connect' '$T/out'"
check "doctor: the other checks still run (the missing replica is a FAIL line too)" \
    grep -q "^FAIL replica $T/no-replica: cannot read it" "$T/out"
check "doctor: no password in its output" bash -c "! grep -q hunter2 '$T/out' '$T/err'"
check "doctor: one line per check (the libpq message's newlines joined)" test "$(wc -l <"$T/out")" = 2
check "doctor: a summary on stderr" grep -q '^cdcstore doctor: FAIL: 2 checks, 0 OK, 0 WARN, 2 FAIL' "$T/err"
run doctor --source "host=127.0.0.1 port=1 dbname=shop user=app" --json
check "doctor --json, a source that cannot be reached: status FAIL, exit 2 (got $rc)" \
    bash -c "test $rc = 2 && jq -e '.status == \"FAIL\" and .exit == 2 and .checks[0].check == \"source\"' '$T/out' >/dev/null"

# ---- reconcile's summary (a throw-away PostgreSQL) ----
if pg_start "$T/pg" 55497 2>"$T/pg.err"; then
    SRC="host=$PGHOST port=$PGPORT user=postgres dbname=postgres"
    psql -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE orders (order_id int PRIMARY KEY, status text, amount numeric(10, 2));
INSERT INTO orders VALUES (1, 'shipped', 25.00), (3, 'refunded', 60.00), (4, 'paid', 15.00);
SQL
    run reconcile --db "$T/db" --table public.orders --source "$SRC" --recheck-wait 10
    summary=$(grep 'cdcstore reconcile:' "$T/err")
    check "reconcile, one column differs: exit 1, one 'different' line (got $rc)" \
        bash -c "test $rc = 1 && test \"\$(cut -f1,2 '$T/out')\" = \$'different\t{\"order_id\":3}'"
    check "reconcile summary: the row counted as 1 different, 0 columns on one side only ($summary)" \
        bash -c "grep -q 'rows: 0 missing, 0 extra, 1 different; 0 columns on one side only;' <<<'$summary'"
    check "reconcile summary: says what the recheck counted" \
        bash -c "grep -q '0 suspected differences gone when read again (changes in flight, not reported)' <<<'$summary'"
    check "reconcile summary: 3 rows in the replica" grep -q '3 rows in the replica' <<<"$summary"
    psql -q -c "ALTER TABLE orders ADD COLUMN note text"
    run reconcile --db "$T/db" --table public.orders --source "$SRC" --recheck-wait 10
    summary=$(grep 'cdcstore reconcile:' "$T/err")
    check "reconcile summary: a column of the source only is 1 column on one side only ($summary)" \
        bash -c "grep -q 'missing-column' '$T/out' && grep -q '; 1 column on one side only;' <<<'$summary'"
    # timestamptz as Debezium's ZonedTimestamp: Java's ISO years (44 BC is
    # -0043, 1 BC 0000, past 9999 signed) and the words for the infinities.
    # The replica with those forms equals the source; one that holds NULL
    # for the infinities, or AD years for BC ones, differs in those rows.
    psql -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE tz (id int PRIMARY KEY, v timestamptz, w timestamptz(3));
INSERT INTO tz VALUES (1, '2024-01-01 12:00:00.5+00', '2024-01-01 12:00:00.5+00'), (2, 'infinity', '-infinity'),
  (3, '0044-03-15 12:00:00+00 BC', '0001-01-01 00:00:00+00 BC'), (4, '10000-01-01 00:00:00+00', '0002-06-01 01:02:03.25+00 BC'),
  (5, NULL, NULL), (6, '0001-01-01 00:00:00+00', '9999-12-31 23:59:59.999+00');
SQL
    tzev() { # tzev FILE ID V W (V, W: JSON values)
        printf '{"topic":"shop.public.tz","partition":0,"offset":%d,"key":"{\\"id\\":%d}","payload":"{\\"op\\":\\"c\\",\\"after\\":{\\"id\\":%d,\\"v\\":%s,\\"w\\":%s},\\"source\\":{\\"lsn\\":%d}}"}\n' \
            "$2" "$2" "$2" "$3" "$4" "$((10 + $2))" >>"$1"
    }
    q='\"'
    for f in good bad; do
        : >"$T/tz-$f.jsonl"
        tzev "$T/tz-$f.jsonl" 1 "${q}2024-01-01T12:00:00.500000Z$q" "${q}2024-01-01T12:00:00.500Z$q"
        tzev "$T/tz-$f.jsonl" 5 null null
        tzev "$T/tz-$f.jsonl" 6 "${q}0001-01-01T00:00:00.000000Z$q" "${q}9999-12-31T23:59:59.999Z$q"
    done
    tzev "$T/tz-good.jsonl" 2 "${q}infinity$q" "${q}-infinity$q"
    tzev "$T/tz-good.jsonl" 3 "${q}-0043-03-15T12:00:00.000000Z$q" "${q}0000-01-01T00:00:00.000Z$q"
    tzev "$T/tz-good.jsonl" 4 "${q}+10000-01-01T00:00:00.000000Z$q" "${q}-0001-06-01T01:02:03.250Z$q"
    tzev "$T/tz-bad.jsonl" 2 null null
    tzev "$T/tz-bad.jsonl" 3 "${q}0044-03-15T12:00:00.000000Z$q" "${q}0001-01-01T00:00:00.000Z$q"
    tzev "$T/tz-bad.jsonl" 4 "${q}10000-01-01T00:00:00.000000Z$q" "${q}-0001-06-01T01:02:03.250Z$q"
    run apply --db "$T/tzgood" --quiet "$T/tz-good.jsonl"
    run reconcile --db "$T/tzgood" --table public.tz --source "$SRC" --recheck-wait 10
    check "reconcile timestamptz: infinities, BC and year 10000 in Debezium's forms equal the source (exit $rc: $(head -c 300 "$T/out"))" \
        test "$rc" = 0
    # hash --sql --ranges for keys whose source type is not text: uuid and
    # numeric keys (text in the replica) bucket by their text, and the
    # query's hashes are cdcstore hash's.
    psql -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE ku (id uuid PRIMARY KEY, v int);
INSERT INTO ku VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 1), ('00000000-0000-0000-0000-000000000001', 2),
  ('ffffffff-0000-0000-0000-000000000001', 3), ('5a0eebc9-9c0b-4ef8-bb6d-6bb9bd380a11', 4);
CREATE TABLE kn (id numeric PRIMARY KEY, v int);
INSERT INTO kn VALUES (1.5, 1), (10, 2), (2, 3), (-3.25, 4);
SQL
    python3 - "$T/keys.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for t, keys in (("ku", ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "00000000-0000-0000-0000-000000000001",
                            "ffffffff-0000-0000-0000-000000000001", "5a0eebc9-9c0b-4ef8-bb6d-6bb9bd380a11"]),
                    ("kn", ["1.5", "10", "2", "-3.25"])):
        for v, k in enumerate(keys, 1):
            p = {"op": "c", "after": {"id": k, "v": v}, "source": {"lsn": 100 + v}}
            f.write(json.dumps({"topic": "shop.public." + t, "partition": 0, "offset": v,
                                "key": json.dumps({"id": k}), "payload": json.dumps(p)}) + "\n")
PY
    run apply --db "$T/keys" --quiet "$T/keys.jsonl"
    for t in ku kn; do
        run hash --db "$T/keys" --table public.$t --ranges 3
        cut -f1,4,5 "$T/out" | tr '\t' ' ' >"$T/hash-$t.want"
        run hash --db "$T/keys" --table public.$t --ranges 3 --sql
        { echo "SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC'; SET extra_float_digits = 1;"; cat "$T/out"; } |
            psql -qAt -F ' ' >"$T/hash-$t.got" 2>"$T/hash-$t.err"
        check "hash --sql --ranges 3, $t key: the query runs and gives cdcstore hash's ($(tr '\n' ' ' <"$T/hash-$t.err"; tr '\n' '|' <"$T/hash-$t.got"))" \
            bash -c "[ -s '$T/hash-$t.want' ] && [ \"\$(wc -l <'$T/hash-$t.want')\" -ge 2 ] && cmp -s '$T/hash-$t.want' '$T/hash-$t.got'"
    done
    # An unconstrained numeric key keeps its scale in the replica ("1.50",
    # as Debezium's string mode sends it): a row read back from the source
    # is keyed by the same text, so one changed row is one difference, not
    # also a missing and an extra row for each key with trailing zeros.
    psql -q -v ON_ERROR_STOP=1 -c "CREATE TABLE nku (n numeric PRIMARY KEY, v int)" \
        -c "INSERT INTO nku VALUES (1.50, 1), (10, 9), (2.0, 3), (3, 4)"
    python3 - "$T/nku.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i, (k, v) in enumerate([("1.50", 1), ("10", 2), ("2.0", 3), ("3", 4)]):
        p = {"op": "c", "after": {"n": k, "v": v}, "source": {"lsn": 200 + i}}
        f.write(json.dumps({"topic": "shop.public.nku", "partition": 0, "offset": i,
                            "key": json.dumps({"n": k}), "payload": json.dumps(p)}) + "\n")
PY
    run apply --db "$T/nku" --quiet "$T/nku.jsonl"
    run reconcile --db "$T/nku" --table public.nku --source "$SRC" --recheck-wait 10
    check "reconcile, numeric key with trailing zeros: the one changed row only (exit $rc: $(cut -f1,2 "$T/out" | tr '\n' ' '))" \
        test "$rc" = 1 -a "$(cut -f1,2 "$T/out")" = $'different\t{"n":"10"}'
    # A numeric(12,2) key in Debezium's default precise mode (base64 of the
    # unscaled integer, its scale declared with --decimal): keyed by its
    # text, so reconcile with key ranges pairs every row and finds the one
    # changed row only (keyed by the base64, every row was missing and extra).
    psql -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE kdec (k numeric(12,2) PRIMARY KEY, v text);
INSERT INTO kdec SELECT (i * 7919 % 200001 - 100000) / 100.0, 'v' || i FROM generate_series(1, 60) i;
INSERT INTO kdec VALUES (-9999999999.99, 'min'), (9999999999.99, 'max'), (0, 'zero');
SQL
    psql -qAt -F $'\t' -c "SELECT (k * 100)::bigint, v FROM kdec" >"$T/kdec.tsv"
    python3 - "$T/kdec.tsv" "$T/kdec.jsonl" <<'PY'
import base64, json, sys
out = open(sys.argv[2], "w")
for n, line in enumerate(open(sys.argv[1])):
    u, v = line.rstrip("\n").split("\t")
    u = int(u)
    k = base64.b64encode(u.to_bytes((u.bit_length() + 8) // 8, "big", signed=True)).decode()
    env = {"op": "r", "after": {"k": k, "v": v}, "source": {"lsn": 100, "schema": "public", "table": "kdec"}}
    out.write(json.dumps({"topic": "shop.public.kdec", "partition": 0, "offset": n, "key": json.dumps({"k": k}),
                          "payload": json.dumps(env)}) + "\n")
PY
    run apply --db "$T/kdec" --quiet --decimal public.kdec.k=2 "$T/kdec.jsonl"
    psql -q -c "UPDATE kdec SET v = 'changed' WHERE k = 0"
    run reconcile --db "$T/kdec" --table public.kdec --source "$SRC" --recheck-wait 10 --ranges 5
    check "reconcile, numeric(12,2) key in precise mode, 5 ranges: the one changed row only (exit $rc: $(cut -f1,2 "$T/out" | head -5 | tr '\n' ' '))" \
        test "$rc" = 1 -a "$(cut -f1,2 "$T/out")" = $'different\t{"k":"0.00"}'
    run get --db "$T/kdec" --table public.kdec '["-9999999999.99"]'
    check "get: a numeric key by its text (exit $rc: $(head -c 200 "$T/out"))" test "$rc" = 0
    # Temporal key columns, keyed as Debezium's keys carry them (adaptive
    # time precision): a date as its days, a timestamp as microseconds (or
    # milliseconds at precision 3), a timestamptz as its ZonedTimestamp text
    # in a key (id, ts) as partitioned tables have.  Equal tables compare
    # equal; one changed row is one difference.  'infinity' and '-infinity'
    # keys come as Debezium 3.6 sends them: a timestamp as the JDBC driver's
    # sentinels, a date in the snapshot's encoding and then updated in the
    # stream's (ingest/decode.c, date_infinity): one row each.
    psql -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE kd (d date PRIMARY KEY, v int);
CREATE TABLE kt (t timestamp PRIMARY KEY, v int);
CREATE TABLE kt3 (t timestamp(3) PRIMARY KEY, v int);
CREATE TABLE kz (id int, ts timestamptz, v int, PRIMARY KEY (id, ts));
INSERT INTO kd SELECT DATE '2024-01-01' + i * 37 - 20000, i FROM generate_series(1, 40) i;
INSERT INTO kt SELECT TIMESTAMP '2024-01-01' + i * interval '1 day 1.5 seconds' - interval '60 years', i FROM generate_series(1, 40) i;
INSERT INTO kt3 SELECT TIMESTAMP '2024-01-01' + i * interval '1.25 seconds', i FROM generate_series(1, 40) i;
INSERT INTO kd VALUES ('infinity', 41), ('-infinity', 42);
INSERT INTO kt VALUES ('infinity', 41), ('-infinity', 42);
INSERT INTO kt3 VALUES ('infinity', 41), ('-infinity', 42);
INSERT INTO kz SELECT i % 3, TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * interval '1 hour 0.5 seconds', i FROM generate_series(1, 40) i;
SQL
    psql -qAt -F $'\t' -c "SELECT 'kd', CASE WHEN isfinite(d) THEN (d - DATE '1970-01-01')::text ELSE d::text END, v FROM kd" \
        -c "SELECT 'kt', CASE WHEN isfinite(t) THEN (extract(epoch FROM t) * 1000000)::bigint END, v FROM kt WHERE isfinite(t)" \
        -c "SELECT 'kt', CASE WHEN t > 'epoch' THEN 9223372036825200000 ELSE -9223372036832400000 END, v FROM kt WHERE NOT isfinite(t)" \
        -c "SELECT 'kt3', (extract(epoch FROM t) * 1000)::bigint, v FROM kt3 WHERE isfinite(t)" \
        -c "SELECT 'kt3', CASE WHEN t > 'epoch' THEN 9223372036825200 ELSE -9223372036832400 END, v FROM kt3 WHERE NOT isfinite(t)" \
        -c "SELECT 'kz', id, to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), v FROM kz" >"$T/tkeys.tsv"
    python3 - "$T/tkeys.tsv" "$T/tkeys.jsonl" <<'PY'
import json, sys
F = {"kd": ("int32", "io.debezium.time.Date"), "kt": ("int64", "io.debezium.time.MicroTimestamp"),
     "kt3": ("int64", "io.debezium.time.Timestamp"), "kz": ("string", "io.debezium.time.ZonedTimestamp")}
out = open(sys.argv[2], "w")
lines = []
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if f[0] == "kd" and f[1] in ("infinity", "-infinity"):
        snap, stream = {"infinity": (-622191234, -2147472692), "-infinity": (-625821272, -2147472691)}[f[1]]
        lines.append(["kd", str(snap), "0", "r"])   # the snapshot's, with a value the update replaces
        lines.append(["kd", str(stream), f[2], "u"])
    else:
        lines.append(f + ["r"])
for n, f in enumerate(lines):
    t, typ, name = f[0], *F[f[0]]
    if t == "kz":
        kf = [{"type": "int32", "optional": False, "field": "id"},
              {"type": typ, "name": name, "optional": False, "field": "ts"}]
        key = {"id": int(f[1]), "ts": f[2]}
        v = int(f[3])
    else:
        col = "d" if t == "kd" else "t"
        kf = [{"type": typ, "name": name, "optional": False, "field": col}]
        key = {col: int(f[1])}
        v = int(f[2])
    vf = kf + [{"type": "int32", "optional": True, "field": "v"}]
    row = dict(key, v=v)
    source = {"lsn": 1000, "snapshot": "true", "schema": "public", "table": t}
    if f[-1] == "u":
        source = {"lsn": 2000, "schema": "public", "table": t}
    env = {"schema": {"type": "struct", "fields": [{"type": "struct", "optional": True, "field": "after",
                                                    "fields": vf}]},
           "payload": {"op": f[-1], "after": row, "source": source}}
    k = {"schema": {"type": "struct", "fields": kf}, "payload": key}
    out.write(json.dumps({"topic": "shop.public." + t, "partition": 0, "offset": n, "key": json.dumps(k),
                          "payload": json.dumps(env)}) + "\n")
PY
    run apply --db "$T/tkeys" --quiet "$T/tkeys.jsonl"
    check "temporal keys: applied (exit $rc: $(head -c 200 "$T/err"))" test "$rc" = 0
    for t in kd kt kt3 kz; do
        run reconcile --db "$T/tkeys" --table public.$t --source "$SRC" --recheck-wait 10
        check "reconcile, $t key (temporal): equal (exit $rc: $(head -c 300 "$T/out") $(grep -v '^cdcstore: info' "$T/err" | head -c 300))" \
            test "$rc" = 0
        run reconcile --db "$T/tkeys" --table public.$t --source "$SRC" --recheck-wait 10 --ranges 7
        check "reconcile, $t key (temporal), 7 ranges: equal (exit $rc: $(head -c 300 "$T/out") $(grep -v '^cdcstore: info' "$T/err" | head -c 300))" \
            test "$rc" = 0
        psql -q -c "UPDATE $t SET v = -1 WHERE v = 17"
        run reconcile --db "$T/tkeys" --table public.$t --source "$SRC" --recheck-wait 10
        check "reconcile, $t key (temporal): one changed row, one difference (exit $rc: $(cut -f1,2 "$T/out" | tr '\n' ' ') $(grep -v '^cdcstore: info' "$T/err" | head -c 300))" \
            test "$rc" = 1 -a "$(grep -c . "$T/out")" = 1 -a "$(cut -f1 "$T/out")" = different
    done
    run apply --db "$T/tzbad" --quiet "$T/tz-bad.jsonl"
    run reconcile --db "$T/tzbad" --table public.tz --source "$SRC" --recheck-wait 10
    check "reconcile timestamptz: NULL for infinity, AD for BC, 10000 unsigned differ (exit $rc: $(cut -f1,2 "$T/out" | tr '\n' ' '))" \
        test "$rc" = 1 -a "$(cut -f1,2 "$T/out" | tr '\n' ' ')" = 'different	{"id":2} different	{"id":3} different	{"id":4} '
    # Intervals: Debezium's MicroDuration (microseconds, a month 30.4375
    # days), declared without a schema (--column-type T.C=interval) and named
    # by one.  The replica stores PostgreSQL's text of that many microseconds:
    # COPY of the CSV export loads back the same epoch, reconcile finds the
    # tables equal, and one changed interval is one difference.  An
    # interval[] column (NULL here) is compared as text.
    psql -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE iv (id int PRIMARY KEY, a interval, b interval(3), c interval[]);
INSERT INTO iv VALUES (1, '1 year 2 mons 3 days 04:05:06.789', '-00:00:00.001'), (2, '-1 mon +2 days -00:00:00.000001', NULL),
  (3, '00:00:00', '7 days'), (4, '-3 years -11 mons', '23:59:59.999'), (5, NULL, '1 day -1 second'),
  (6, '100 years 0.5 seconds', '-5 hours');
SQL
    # An interval's microseconds as Debezium 3.6 computes them
    # (MicroDuration.durationMicros over the JDBC driver's PGInterval: doubles,
    # a month 30.4375 days, truncated); two values Debezium really sent
    # anchor it.
    psql -q -v ON_ERROR_STOP=1 -c "CREATE FUNCTION dbz_us(i interval) RETURNS float8 LANGUAGE sql IMMUTABLE AS
        \$\$ SELECT trunc((((((extract(year FROM i) * 12 + extract(month FROM i))::float8 * 30.4375
           + extract(day FROM i)::float8) * 24 + extract(hour FROM i)::float8) * 60 + extract(minute FROM i)::float8) * 60
           + (trunc(extract(second FROM i))::float8
              + ((extract(second FROM i) - trunc(extract(second FROM i))) * 1000000)::float8 / 1e6::float8)) * 1e6::float8) \$\$"
    check "interval: Debezium's microseconds of two intervals" \
        test "$(psql -qAt -c "SELECT dbz_us('1 year 2 mons 3 days 04:05:06.789')::bigint || ' ' || dbz_us('-00:00:00.000001')::bigint")" = '37091106789000 -1'
    psql -q -c "INSERT INTO iv VALUES (7, '1 day 12:47:35.004', '-00:00:35.004')"
    psql -qAt -F $'\t' -c "SELECT id, dbz_us(a)::bigint, dbz_us(b)::bigint FROM iv" >"$T/iv.tsv"
    python3 - "$T/iv.tsv" "$T/iv-plain.jsonl" "$T/iv-schema.jsonl" <<'PY'
import json, sys
from decimal import Decimal
plain, schema = open(sys.argv[2], "w"), open(sys.argv[3], "w")
f = [{"type": "int32", "optional": False, "field": "id"}] + [
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroDuration", "field": c} for c in ("a", "b")] + [
    {"type": "array", "optional": True, "field": "c",
     "items": {"type": "int64", "optional": True, "name": "io.debezium.time.MicroDuration"}}]
for n, line in enumerate(open(sys.argv[1])):
    i, a, b = line.rstrip("\n").split("\t")
    row = {"id": int(i), "a": int(Decimal(a)) if a else None, "b": int(Decimal(b)) if b else None, "c": None}
    env = {"op": "r", "after": row, "source": {"lsn": 100, "schema": "public", "table": "iv"}}
    plain.write(json.dumps({"topic": "shop.public.iv", "partition": 0, "offset": n, "key": json.dumps({"id": row["id"]}),
                            "payload": json.dumps(env)}) + "\n")
    schema.write(json.dumps({"topic": "shop.public.iv", "partition": 0, "offset": n, "key": json.dumps({"id": row["id"]}),
                             "payload": json.dumps({"schema": {"type": "struct", "fields": [
                                 {"type": "struct", "optional": True, "field": "after", "fields": f}]},
                                 "payload": env})}) + "\n")
PY
    for v in plain schema; do
        if [ $v = plain ]; then
            run apply --db "$T/iv-$v" --quiet --column-type public.iv.a=interval --column-type public.iv.b=interval "$T/iv-$v.jsonl"
        else
            run apply --db "$T/iv-$v" --quiet "$T/iv-$v.jsonl"
        fi
        check "interval ($v): applied (exit $rc: $(head -c 200 "$T/err"))" test "$rc" = 0
        run export --db "$T/iv-$v" --table public.iv --format csv
        cp "$T/out" "$T/iv-$v.csv"
        psql -q -c "DROP TABLE IF EXISTS iv_back" -c "CREATE TABLE iv_back (LIKE iv)" \
            -c "\\copy iv_back FROM '$T/iv-$v.csv' (FORMAT csv, HEADER)" 2>"$T/copy.err"
        check "interval ($v): COPY of the CSV export loads back the source's seconds ($(head -c 200 "$T/copy.err"))" \
            test "$(psql -qAt -c "SELECT count(*) FROM iv s JOIN iv_back c USING (id)
                WHERE dbz_us(s.a) IS NOT DISTINCT FROM (extract(epoch FROM c.a) * 1000000)::float8
                  AND dbz_us(s.b) IS NOT DISTINCT FROM (extract(epoch FROM c.b) * 1000000)::float8")" = 7
        check "interval ($v): exported text (first row: $(sed -n 2p "$T/iv-$v.csv"))" \
            test "$(sed -n 2p "$T/iv-$v.csv")" = '1,10303:05:06.789,-00:00:00.001,'
        run reconcile --db "$T/iv-$v" --table public.iv --source "$SRC" --recheck-wait 10
        check "interval ($v): reconcile equal (exit $rc: $(head -c 300 "$T/out") $(grep -v '^cdcstore: info' "$T/err" | head -c 300))" \
            test "$rc" = 0
    done
    # A real (float4) column without a schema: Debezium writes the float's
    # Float.toString (1000000.0, 1.4E-45, 9.9999999E14), stored as a
    # double's text; reconcile compares it as the float4 PostgreSQL prints
    # (1e+06, 1e-45, 1e+15).  Equal, with ranges too; one change found.
    psql -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE f4 (id int PRIMARY KEY, r real);
INSERT INTO f4 VALUES (1, 1e6), (2, 1.1), (3, 1e-45), (4, 3.4028235e38), (5, '-0'), (6, 'NaN'), (7, 1234567),
  (8, 0.1), (9, 1e15), (10, '-Infinity'), (11, NULL), (12, 100), (13, 1.5e-5);
SQL
    i=0
    for r in 1000000.0 1.1 1.4E-45 3.4028235E38 -0.0 '\"NaN\"' 1234567.0 0.1 9.9999999E14 '\"-Infinity\"' null 100.0 1.5E-5; do
        i=$((i + 1))
        printf '{"topic":"shop.public.f4","partition":0,"offset":%d,"key":"{\\"id\\":%d}","payload":"{\\"op\\":\\"r\\",\\"after\\":{\\"id\\":%d,\\"r\\":%s},\\"source\\":{\\"lsn\\":10}}"}\n' \
            $i $i $i "$r"
    done >"$T/f4.jsonl"
    run apply --db "$T/f4" --quiet "$T/f4.jsonl"
    check "real without a schema: applied (exit $rc: $(head -c 200 "$T/err"))" test "$rc" = 0
    for ranges in 1 4; do
        run reconcile --db "$T/f4" --table public.f4 --source "$SRC" --recheck-wait 10 --ranges $ranges
        check "reconcile, real without a schema, $ranges range(s): equal (exit $rc: $(cut -f1-4 "$T/out" | head -4 | tr '\n' ' '))" \
            test "$rc" = 0
    done
    psql -q -c "UPDATE f4 SET r = 1.2e6 WHERE id = 7"
    run reconcile --db "$T/f4" --table public.f4 --source "$SRC" --recheck-wait 10 --ranges 4
    check "reconcile, real without a schema: one changed value, one difference (exit $rc: $(cut -f1,2 "$T/out" | tr '\n' ' '))" \
        test "$rc" = 1 -a "$(cut -f1,2 "$T/out" | tr '\n' ' ')" = 'different	{"id":7} '
    # A generated column (GENERATED ALWAYS AS ... STORED): the snapshot's
    # reads carry it, streamed changes do not (logical replication does not
    # publish it).  Compared on neither side: equal whether the replica still
    # holds it (snapshot only) or not (after a streamed change).
    psql -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE gen (id int PRIMARY KEY, a int, b int, s int GENERATED ALWAYS AS (a + b) STORED);
INSERT INTO gen (id, a, b) VALUES (1, 1, 2), (2, 5, 5);
SQL
    cat >"$T/gen.jsonl" <<'JSON'
{"topic":"shop.public.gen","partition":0,"offset":1,"key":"{\"id\":1}","payload":"{\"op\":\"r\",\"after\":{\"id\":1,\"a\":1,\"b\":0,\"s\":1},\"source\":{\"lsn\":10,\"snapshot\":\"true\"}}"}
{"topic":"shop.public.gen","partition":0,"offset":2,"key":"{\"id\":2}","payload":"{\"op\":\"r\",\"after\":{\"id\":2,\"a\":5,\"b\":5,\"s\":10},\"source\":{\"lsn\":10,\"snapshot\":\"last\"}}"}
JSON
    head -n 2 "$T/gen.jsonl" >"$T/gen-snap.jsonl"
    echo '{"topic":"shop.public.gen","partition":0,"offset":3,"key":"{\"id\":1}","payload":"{\"op\":\"u\",\"after\":{\"id\":1,\"a\":1,\"b\":2},\"source\":{\"lsn\":20}}"}' >>"$T/gen.jsonl"
    sed 's/"b\\":0,/"b\\":2,/; s/"s\\":1}/"s\\":3}/' "$T/gen-snap.jsonl" >"$T/gen-snap2.jsonl"
    for v in gen gen-snap2; do
        run apply --db "$T/$v" --quiet "$T/$v.jsonl"
        run reconcile --db "$T/$v" --table public.gen --source "$SRC" --recheck-wait 10
        check "reconcile, a generated column ($v): equal (exit $rc: $(head -c 300 "$T/out"))" \
            test "$rc" = 0
    done
    psql -q -c "UPDATE iv SET a = a + interval '1 microsecond' WHERE id = 1"
    run reconcile --db "$T/iv-schema" --table public.iv --source "$SRC" --recheck-wait 10
    check "interval: one changed interval, one difference (exit $rc: $(cut -f1,2 "$T/out" | tr '\n' ' '))" \
        test "$rc" = 1 -a "$(cut -f1,2 "$T/out" | tr '\n' ' ')" = 'different	{"id":1} '
else
    echo "skip reconcile summary: no PostgreSQL 15 ($(head -c 200 "$T/pg.err"))"
fi

# ---- a table name a topic cannot hold ----
# Debezium's topic for "public.Order Items" is shop.public.Order_Items; the
# tombstone after a delete has no payload and names its table only by the
# topic: it counts in the table whose name reads so, and no empty table
# public.Order_Items appears beside it.
cat >"$T/spaced.jsonl" <<'JSON'
{"topic":"shop.public.Order_Items","partition":0,"offset":1,"key":"{\"id\":1}","payload":"{\"op\":\"c\",\"after\":{\"id\":1,\"v\":\"a\"},\"source\":{\"lsn\":10,\"schema\":\"public\",\"table\":\"Order Items\"}}"}
{"topic":"shop.public.Order_Items","partition":0,"offset":2,"key":"{\"id\":2}","payload":"{\"op\":\"c\",\"after\":{\"id\":2,\"v\":\"b\"},\"source\":{\"lsn\":11,\"schema\":\"public\",\"table\":\"Order Items\"}}"}
{"topic":"shop.public.Order_Items","partition":0,"offset":3,"key":"{\"id\":1}","payload":"{\"op\":\"d\",\"before\":{\"id\":1},\"source\":{\"lsn\":12,\"schema\":\"public\",\"table\":\"Order Items\"}}"}
{"topic":"shop.public.Order_Items","partition":0,"offset":4,"key":"{\"id\":1}","payload":null}
JSON
for bs in 1 1000; do
    run apply --db "$T/spaced-$bs" --quiet --batch-size $bs "$T/spaced.jsonl"
    run tables --db "$T/spaced-$bs"
    check "a tombstone on the topic of 'public.Order Items' (batches of $bs): one table, no public.Order_Items ($(tr '\n' ' ' <"$T/out"))" \
        test "$(grep -c 'Order' "$T/out")" = 1 -a "$(grep -c 'public.Order Items' "$T/out")" = 1
done

# ---- export: column names a format cannot hold ----
# PostgreSQL's quoted names "UPPER" and "upper" are two columns; a Delta
# table's names are case-insensitive.  A column named __lsn collides with
# --meta's.  Each is refused by name, before anything is written.
cat >"$T/names.jsonl" <<'JSON'
{"topic":"shop.public.names","partition":0,"offset":1,"key":"{\"id\":1}","payload":"{\"op\":\"c\",\"after\":{\"id\":1,\"UPPER\":1,\"upper\":2,\"__lsn\":3},\"source\":{\"lsn\":10}}"}
JSON
run apply --db "$T/names" --quiet "$T/names.jsonl"
check "names: applied (exit $rc)" test "$rc" = 0
run export --db "$T/names" --table public.names --format delta --output "$T/names.delta"
check "names: Delta export of UPPER and upper refused (exit $rc): $(head -c 200 "$T/err")" \
    bash -c "[ $rc = 1 ] && grep -q 'columns \"UPPER\" and \"upper\" differ only in case' '$T/err' && [ ! -e '$T/names.delta/_delta_log' ]"
for f in csv parquet; do
    run export --db "$T/names" --table public.names --format $f --meta --output "$T/names.$f"
    check "names: $f export with --meta of a table with a column __lsn refused (exit $rc): $(head -c 200 "$T/err")" \
        bash -c "[ $rc = 1 ] && grep -q 'has a column named __lsn, which --meta adds' '$T/err' && [ ! -e '$T/names.$f' ]"
    run export --db "$T/names" --table public.names --format $f --output "$T/names.$f"
    check "names: $f export without --meta (exit $rc)" test "$rc" = 0
done

# ---- export of every table: names with '/' and '%' ----
# PostgreSQL allows '/' in quoted names: each table gets its own file in the
# directory, '/' written %2F and '%' %25, none outside it.
cat >"$T/slash.jsonl" <<'JSON'
{"topic":"shop.public.a/b","partition":0,"offset":1,"key":"{\"id\":1}","payload":"{\"op\":\"c\",\"after\":{\"id\":1,\"v\":\"ab\"},\"source\":{\"lsn\":10,\"schema\":\"public\",\"table\":\"a/b\"}}"}
{"topic":"shop.x.y","partition":0,"offset":1,"key":"{\"id\":1}","payload":"{\"op\":\"c\",\"after\":{\"id\":1,\"v\":\"up\"},\"source\":{\"lsn\":11,\"schema\":\"x/..\",\"table\":\"y%\"}}"}
{"topic":"shop.public.zz","partition":0,"offset":1,"key":"{\"id\":1}","payload":"{\"op\":\"c\",\"after\":{\"id\":1,\"v\":\"zz\"},\"source\":{\"lsn\":12,\"schema\":\"public\",\"table\":\"zz\"}}"}
JSON
run apply --db "$T/slash" --quiet "$T/slash.jsonl"
mkdir -p "$T/slashout"
run export --db "$T/slash" --output "$T/slashout/all"
check "slash: export of every table (exit $rc): $(head -c 200 "$T/err")" test "$rc" = 0
check "slash: public.a/b in public.a%2Fb.csv" grep -q '^1,ab$' "$T/slashout/all/public.a%2Fb.csv"
check "slash: x/...y% in x%2F...y%25.csv" grep -q '^1,up$' "$T/slashout/all/x%2F...y%25.csv"
check "slash: public.zz in public.zz.csv" grep -q '^1,zz$' "$T/slashout/all/public.zz.csv"
check "slash: nothing written outside the directory ($(ls "$T/slashout" | tr '\n' ' '))" \
    test "$(ls "$T/slashout")" = all

# ---- export of every table: one table failing does not stop the others ----
# public.names has "UPPER" and "upper" (a Delta table cannot hold both),
# public.big a NUMERIC value past 38 digits (Parquet's DECIMAL cannot hold
# it), public.nul only a dead letter (a table without columns); public.good
# is fine.  Each failure is said by name, the other tables are written, the
# status is 1; a table without columns is skipped with a note; a failed
# first Delta export leaves no directory behind.
cat >"$T/mixed.jsonl" <<'JSON'
{"topic":"shop.public.names","partition":0,"offset":1,"key":"{\"id\":1}","payload":"{\"op\":\"c\",\"after\":{\"id\":1,\"UPPER\":1,\"upper\":2},\"source\":{\"lsn\":10}}"}
{"topic":"shop.public.nul","partition":0,"offset":1,"key":"{\"id\":1}","payload":"{\"op\":\"c\",\"after\":{\"id\":1,\"v\":\"a\\u0000b\"},\"source\":{\"lsn\":11}}"}
{"topic":"shop.public.good","partition":0,"offset":1,"key":"{\"id\":1}","payload":"{\"op\":\"c\",\"after\":{\"id\":1,\"v\":\"fine\"},\"source\":{\"lsn\":12}}"}
{"topic":"shop.public.big","partition":0,"offset":1,"key":"{\"id\": 1}","payload":"{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"optional\":true,\"field\":\"before\",\"fields\":[{\"type\":\"int64\",\"optional\":false,\"field\":\"id\"},{\"type\":\"bytes\",\"optional\":true,\"name\":\"org.apache.kafka.connect.data.Decimal\",\"parameters\":{\"scale\":\"2\"},\"field\":\"v\"}]},{\"type\":\"struct\",\"optional\":true,\"field\":\"after\",\"fields\":[{\"type\":\"int64\",\"optional\":false,\"field\":\"id\"},{\"type\":\"bytes\",\"optional\":true,\"name\":\"org.apache.kafka.connect.data.Decimal\",\"parameters\":{\"scale\":\"2\"},\"field\":\"v\"}]},{\"type\":\"struct\",\"optional\":false,\"field\":\"source\",\"fields\":[{\"type\":\"int64\",\"optional\":true,\"field\":\"lsn\"}]},{\"type\":\"string\",\"optional\":false,\"field\":\"op\"}]},\"payload\":{\"before\":null,\"after\":{\"id\":1,\"v\":\"HWMp8cNcpL+rufVhAAAAAAA=\"},\"source\":{\"lsn\":10},\"op\":\"c\"}}"}
JSON
run apply --db "$T/mixed" --quiet "$T/mixed.jsonl"
check "mixed: applied with one dead letter (exit $rc: $(head -c 300 "$T/err"))" test "$rc" = 3
run export --db "$T/mixed" --format delta --output "$T/mixed.delta"
check "mixed: Delta export of every table: exit 1 (got $rc)" test "$rc" = 1
check "mixed: Delta: the case clash named" has 'columns "UPPER" and "upper" differ only in case'
check "mixed: Delta: the value out of range named" has "column v: '100000000000000000000000000000000000000.00'"
check "mixed: Delta: the table without columns skipped" has "public.nul skipped: it has no columns"
check "mixed: Delta: the summary" has "2 of 3 tables failed"
check "mixed: Delta: public.good written despite the failures" test -s "$T/mixed.delta/public.good/_delta_log/00000000000000000000.json"
check "mixed: Delta: no directory left by the failed tables ($(ls "$T/mixed.delta" | tr '\n' ' '))" \
    test "$(ls "$T/mixed.delta")" = public.good
run export --db "$T/mixed" --format parquet --output "$T/mixed.pq"
check "mixed: Parquet export of every table: exit 1 (got $rc)" test "$rc" = 1
check "mixed: Parquet: 1 of 3 failed" has "1 of 3 tables failed"
check "mixed: Parquet: public.good and public.names written, nothing for public.big or public.nul ($(ls "$T/mixed.pq" | tr '\n' ' '))" \
    test "$(ls "$T/mixed.pq" | tr '\n' ' ')" = "public.good.parquet public.names.parquet "
run export --db "$T/mixed" --output "$T/mixed.csv"
check "mixed: CSV export of every table: exit 0, public.nul skipped (got $rc)" \
    bash -c "[ $rc = 0 ] && [ -s '$T/mixed.csv/public.big.csv' ] && [ ! -e '$T/mixed.csv/public.nul.csv' ]"
for f in parquet delta; do
    run export --db "$T/mixed" --table public.nul --format $f --output "$T/nul.$f"
    check "mixed: $f export of the table without columns: exit 1, said, nothing written (got $rc)" \
        bash -c "[ $rc = 1 ] && grep -q 'has no columns' '$T/err' && [ ! -e '$T/nul.$f' ]"
done

# ---- export into the replica's own directory: refused, the replica intact ----
for o in "$T/db" "$T/db/CURRENT" "$T/db/orders.csv" "$T/db/../db/x.parquet"; do
    run export --db "$T/db" --table public.orders --output "$o"
    check "export --output $o: refused, exit 2 (got $rc: $(head -c 200 "$T/err"))" test "$rc" = 2
    check "export --output $o: the message says why" has "is inside the replica's directory"
done
run export --db "$T/db" --output "$T/db"
check "export of every table into the replica's directory: refused (got $rc)" test "$rc" = 2
run stats --db "$T/db"
check "the replica still opens after the refused exports (exit $rc)" test "$rc" = 0
# ---- a stray file beside a replica's own: it still opens, for reading and writing ----
echo note > "$T/db/README.txt"
run stats --db "$T/db"
check "a stray file in the replica's directory: stats still opens it (exit $rc: $(head -c 200 "$T/err"))" test "$rc" = 0
run apply --db "$T/db" --quiet "$EVENTS"
check "a stray file in the replica's directory: apply still opens it (exit $rc)" test "$rc" = 0
rm -f "$T/db/README.txt"

# ---- stats of a table the replica does not hold: an error, as for get ----
run stats --db "$T/db" --table nosuch.table
check "stats --table of a missing table: exit 1 (got $rc)" test "$rc" = 1
check "stats --table of a missing table: says so" has "nosuch.table: not in the replica"

# ---- export --output - is standard output, as apply's - is standard input ----
(cd "$T" && timeout 10 "$BIN" export --db "$T/db" --table public.orders --output - > "$T/dash.out" 2>"$T/err")
rc=$?
check "export --output -: the rows on standard output, exit 0 (got $rc)" test "$rc" = 0 -a -s "$T/dash.out"
check "export --output -: no file named -" test ! -e "$T/-"

# ---- a usage error says what is wrong before the usage ----
run export --db "$T/db"
check "export without --table or --output: exit 2, says what to give (got $rc)" \
    test "$rc" = 2 -a "$(head -1 "$T/err")" = "cdcstore export: give --table SCHEMA.TABLE, or --output DIR for every table"
run apply --db "$T/db"
check "apply without FILE: exit 2, says so (got $rc)" test "$rc" = 2 -a "$(head -1 "$T/err")" = "cdcstore apply: no FILE to apply (- for stdin)"
run stats --db "$T/db" extra
check "stats with an extra argument: exit 2, names it (got $rc)" test "$rc" = 2 -a "$(head -1 "$T/err")" = "cdcstore stats: unexpected argument: extra"
run gc --db "$T/db"
check "gc without a horizon: exit 2, says what to give (got $rc)" test "$rc" = 2 && has "give --horizon-lsn LSN or --older-than DURATION"

# ---- output that cannot be written is an error ----
if [ -w /dev/full ]; then
    for c in "stats --db $T/db" "tables --db $T/db" "--help" "stats --db $T/db --json"; do
        # shellcheck disable=SC2086
        timeout 10 "$BIN" $c >/dev/full 2>"$T/err"
        rc=$?
        check "$c > /dev/full: exit 1 (got $rc)" test "$rc" = 1
        check "$c > /dev/full: says the output was not written" has "the output could not be written"
    done
fi

echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
