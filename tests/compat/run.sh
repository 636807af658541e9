#!/usr/bin/env bash
# tests/compat/run.sh (make test-compat): a replica written by an earlier
# build (tests/compat/replica-v1.tar.gz, made by make-fixture.sh) opens with
# this build and reads the same: tables, counters, dead letters, gets and
# exports (CSV byte for byte; JSON outputs as parsed values, since JSON
# allows more than one escaping of a character).  Then the same input is
# applied again to it: a replay changes no row; and 30 new tables go in
# beside the old ones (prefixed tables in "rows", old tables in their own
# families): the old tables read the same.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${CDCSTORE:-$ROOT/build/cdcstore}
T=$(mktemp -d /tmp/cdccompat.XXXXXX)
trap 'rm -rf "$T"' EXIT
tar -xzf "$ROOT/tests/compat/replica-v1.tar.gz" -C "$T"
cd "$T"
pass=0 fail=0
check() { # name, command...: prints ok/FAIL with the reason
  local name=$1; shift
  local out
  if out=$("$@" 2>&1); then pass=$((pass + 1)); echo "ok   $name"
  else fail=$((fail + 1)); echo "FAIL $name: $(tail -5 <<<"$out")"; fi
}
same_json() { python3 - "$1" "$2" <<'PY'
import json, sys
def load(p):
    s = open(p).read()
    try:
        return json.loads(s)
    except ValueError:
        return [json.loads(l) for l in s.splitlines() if l.strip()]
try:
    a, b = load(sys.argv[1]), load(sys.argv[2])
except ValueError:  # an error message, not JSON: the text must match
    a, b = open(sys.argv[1]).read(), open(sys.argv[2]).read()
if a != b:
    sys.exit("differ: %s vs %s" % (json.dumps(a)[:300], json.dumps(b)[:300]))
PY
}
mkdir got
"$BIN" tables --db replica > got/tables.txt
check "tables" cmp expected/tables.txt got/tables.txt
"$BIN" stats --db replica --json > got/stats.json
# Every counter the old build printed reads the same; counters added since
# read 0 on a replica that predates them.
same_counters() { python3 - "$1" "$2" <<'PY'
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:3])
def walk(o, n, path):
    if isinstance(o, dict):
        for k, v in o.items():
            if k not in n: sys.exit("%s/%s is gone" % (path, k))
            walk(v, n[k], path + "/" + k)
        for k in set(n) - set(o):  # a counter added since, or something new
            if n[k] != 0: sys.exit("%s/%s is %s on an old replica" % (path, k, json.dumps(n[k])[:100]))
    elif o != n:
        sys.exit("%s: %s became %s" % (path, o, n))
walk(old, new, "")
PY
}
check "stats --json" same_counters expected/stats.json got/stats.json
"$BIN" dlq list --db replica --json > got/dlq.json
check "dlq list --json" same_json expected/dlq.json got/dlq.json
while read -r t; do
  "$BIN" export --db replica --table "$t" --meta --format csv --output "got/$t.csv"
  check "export --meta csv $t" cmp "expected/$t.csv" "got/$t.csv"
  "$BIN" export --db replica --table "$t" --format ndjson --output "got/$t.ndjson"
  check "export ndjson $t" same_json "expected/$t.ndjson" "got/$t.ndjson"
  if [ -f "expected/$t.get.json" ]; then
    k=$(head -1 "expected/$t.ndjson" | python3 -c 'import sys,json
v=list(json.loads(sys.stdin.readline()).values())[:1]
print(json.dumps([int(x) if isinstance(x, str) and x.lstrip("-").isdigit() else x for x in v]))')
    "$BIN" get --db replica --table "$t" "$k" > "got/$t.get.json" 2>&1 || true
    check "get $t $k" same_json "expected/$t.get.json" "got/$t.get.json"
  fi
done < <(awk '{print $1}' expected/tables.txt)
# A replay of the input the replica was made from changes nothing.
# The files the replica was made from (tests/compat/make-fixture.sh at fe9a254):
# fixtures added since then hold other changes.
FILES=""
for f in composite_key inflight_handover inflight_single_tx precise_decimal resnapshot schemas_enabled \
         snapshot_stream text_uuid_keys toast_unchanged; do
  FILES="$FILES $ROOT/tests/data/debezium/$f.jsonl"
done
# shellcheck disable=SC2086
"$BIN" apply --db replica --quiet --decimal public.prices.amount=2 $FILES
while read -r t; do
  "$BIN" export --db replica --table "$t" --meta --format csv --output "got/$t.replay.csv"
  check "replay changes nothing: $t" cmp "expected/$t.csv" "got/$t.replay.csv"
done < <(awk '{print $1}' expected/tables.txt)
# New tables go into the old replica as prefixed tables (family "rows"),
# beside the old tables' own families: both kinds read right, the old
# tables unchanged, also after a reopen.
python3 "$ROOT/bench/gen_tables.py" --tables 30 --out new_tables.jsonl --summary > got/new_tables.json
"$BIN" apply --db replica --quiet new_tables.jsonl
"$BIN" tables --db replica > got/tables.mixed.txt
check "tables: the old ones and 30 new" test "$(wc -l < got/tables.mixed.txt)" = "$(( $(wc -l < expected/tables.txt) + 30 ))"
while read -r t; do
  "$BIN" export --db replica --table "$t" --meta --format csv --output "got/$t.mixed.csv"
  check "old table beside new ones: $t" cmp "expected/$t.csv" "got/$t.mixed.csv"
done < <(awk '{print $1}' expected/tables.txt)
"$BIN" stats --db replica --json > got/stats.mixed.json
new_live() { python3 - "$1" "$2" <<'PY'
import json, sys
want = json.load(open(sys.argv[1]))["rows"]
tables = json.load(open(sys.argv[2]))["tables"]
got = sum(v["rows_live"] for k, v in tables.items() if k.startswith("public.t0"))
if got != want: sys.exit("new tables hold %d live rows, expected %d" % (got, want))
PY
}
check "new tables' live rows" new_live got/new_tables.json got/stats.mixed.json
"$BIN" export --db replica --table public.t0030 --format csv --output got/t0030.csv
check "a new table exports its own rows" test "$(tail -n +2 got/t0030.csv | cut -d, -f2 | sort -u | sed 's/-.*//' | sort -u)" = "t0030"
# The purge by compaction works on both kinds of table: an old table's own
# family has its filter as "rows" has; the view is unchanged, the
# tombstones are gone and counted.
"$BIN" export --db replica --table public.orders --format csv --output got/orders.before_gc.csv
"$BIN" stats --db replica --json > got/stats.before_gc.json
"$BIN" gc --db replica --horizon-lsn 99999999999 2> got/gc.txt
"$BIN" export --db replica --table public.orders --format csv --output got/orders.after_gc.csv
check "gc: an old table's view is unchanged" cmp got/orders.before_gc.csv got/orders.after_gc.csv
"$BIN" stats --db replica --json > got/stats.after_gc.json
purged() { python3 - "$1" "$2" "$3" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
gc = open(sys.argv[3]).read()
for t, v in a["tables"].items():
    w = b["tables"][t]
    if w["rows_deleted"] != 0 or w["tombstones_purged"] - v["tombstones_purged"] != v["rows_deleted"]:
        sys.exit("%s: %d tombstones before, after %s; gc said %s" % (t, v["rows_deleted"], w, gc))
n = a["total"]["rows_deleted"]
if n < 2 or (": %d tombstones removed" % n) not in gc:
    sys.exit("gc said %r, %d tombstones were kept" % (gc, n))
PY
}
check "gc: every tombstone of old and new tables removed and counted" purged got/stats.before_gc.json got/stats.after_gc.json got/gc.txt
"$BIN" export --db replica --table public.orders --meta --format csv --output got/orders.meta_after_gc.csv
check "gc: the old table's tombstone is gone from its rows (--meta lists none deleted)" \
  bash -c "test \"\$(grep -c ',t\$' got/orders.meta_after_gc.csv)\" = 0 && grep -q ',t\$' expected/public.orders.csv"
echo "compat: $pass passed, $fail failed"
[ "$fail" = 0 ]
