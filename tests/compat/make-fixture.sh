#!/usr/bin/env bash
# tests/compat/make-fixture.sh OLD_CDCSTORE: writes tests/compat/replica-v1.tar.gz,
# a replica directory made by an earlier build of the command (OLD_CDCSTORE)
# from the captured Debezium output in tests/data/debezium/ plus records that
# go to the dead-letter store, a declared NUMERIC scale and a tombstone purge,
# together with what that build printed for it (tables, stats, exports,
# dead letters, gets).  tests/compat/run.sh checks that the current build
# opens the replica and prints the same.  The fixture in the tree was made
# by the build of commit fe9a254 (value format 1).
set -euo pipefail
OLD=$(realpath "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/cdccompat.XXXXXX)
trap 'rm -rf "$T"' EXIT
DB=$T/replica
mkdir -p "$T/expected"
"$OLD" apply --db "$DB" --quiet --decimal public.prices.amount=2 "$ROOT"/tests/data/debezium/*.jsonl
printf '%s\n' '{"topic":"shop.public.orders","partition":0,"offset":900,"key":"{\"order_id\":1}","payload":"{not json"}' \
  '{"topic":"shop.public.orders","partition":0,"offset":901,"key":null,"payload":"{\"op\":\"x\"}"}' > "$T/bad.jsonl"
"$OLD" apply --db "$DB" --quiet "$T/bad.jsonl" 2>/dev/null || true  # exit 1: dead letters written
"$OLD" gc --db "$DB" --horizon-lsn 70000000
cd "$T"
"$OLD" tables --db replica > expected/tables.txt
"$OLD" stats --db replica --json > expected/stats.json
"$OLD" dlq list --db replica --json > expected/dlq.json
while read -r t; do
  "$OLD" export --db replica --table "$t" --meta --format csv --output "expected/$t.csv"
  "$OLD" export --db replica --table "$t" --format ndjson --output "expected/$t.ndjson"
  k=$(head -1 "expected/$t.ndjson" | python3 -c 'import sys,json
l=sys.stdin.readline().strip()
v=list(json.loads(l).values())[:1] if l else []
print(json.dumps([int(x) if isinstance(x, str) and x.lstrip("-").isdigit() else x for x in v]) if v else "")')
  [ -n "$k" ] && { "$OLD" get --db replica --table "$t" "$k" > "expected/$t.get.json" 2>&1 || true; }
done < <(awk '{print $1}' expected/tables.txt)
rm -f replica/LOG*
tar -czf "$ROOT/tests/compat/replica-v1.tar.gz" replica expected
echo "wrote tests/compat/replica-v1.tar.gz"
