#!/usr/bin/env bash
# export_halves.sh: `cdcstore export --format parquet` of a replica, encoded
# by one thread and by two (CDC_EXPORT_THREADS=2: the upper half's row
# groups written by a second writer and adopted into the first's footer,
# query/export.c), read back by pyarrow and DuckDB: both files give the same
# rows, which equal the replica's CSV export, with the row groups and
# statistics a reader trusts (pyarrow validates the footer's offsets).
# Applies 20,000 generated envelopes with schemas (bigint key, text, numeric,
# boolean, date, timestamp, NULLs).  Exits non-zero on any mismatch.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. tests/lib/venv.sh
venv_ensure duckdb pyarrow
CDC=${CDCSTORE:-$ROOT/${BUILD:-build}/cdcstore}
WORK=$(mktemp -d /tmp/cdchalves.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
python3 - "$WORK/in.jsonl" <<'PY'
import base64, json, sys
fields = [{"type": "int64", "optional": False, "field": "id"},
          {"type": "string", "optional": True, "field": "s"},
          {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
           "parameters": {"scale": "2", "connect.decimal.precision": "12"}, "field": "amt"},
          {"type": "boolean", "optional": True, "field": "ok"},
          {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "field": "d"},
          {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "field": "ts"}]
schema = {"type": "struct", "fields": [{"type": "struct", "fields": fields, "optional": True, "field": "after"}]}
def dec(v):
    return base64.b64encode(v.to_bytes((v.bit_length() + 8) // 8 or 1, "big", signed=True)).decode()
with open(sys.argv[1], "w") as f:
    for i in range(20000):
        k = i * 7919 - 50000
        after = {"id": k, "s": None if i % 11 == 0 else f"row {i} ü,\"q\"", "amt": None if i % 13 == 0 else dec(i * 37 - 9000),
                 "ok": None if i % 5 == 0 else i % 2 == 0, "d": i - 10000, "ts": (i - 5000) * 86400000123}
        payload = {"schema": schema, "payload": {"before": None, "after": after, "op": "c",
                   "source": {"schema": "public", "table": "t", "lsn": 1000 + i, "snapshot": "false", "ts_ms": 1}}}
        f.write(json.dumps({"topic": "x.public.t", "partition": 0, "offset": i, "key": json.dumps({"id": k}),
                            "payload": json.dumps(payload)}) + "\n")
PY
"$CDC" apply --db "$WORK/db" --batch-size 1000 "$WORK/in.jsonl" >/dev/null
"$CDC" export --db "$WORK/db" --table public.t --output "$WORK/t.csv"
fail=0
for threads in 1 2; do
    CDC_EXPORT_THREADS=$threads "$CDC" export --db "$WORK/db" --table public.t --format parquet --row-group-rows 700 \
        --output "$WORK/t$threads.parquet"
    for r in pyarrow duckdb; do
        "$VENV_PY" tests/export/read_table.py --reader "$r" --sort id "$WORK/t$threads.parquet" >"$WORK/t$threads.$r.csv"
        if cmp -s "$WORK/t$threads.$r.csv" "$WORK/t.csv"; then
            echo "ok $threads thread(s), $r: equal to the CSV export"
        else
            echo "FAIL $threads thread(s), $r: differs from the CSV export:"
            diff "$WORK/t$threads.$r.csv" "$WORK/t.csv" | head -5
            fail=1
        fi
    done
done
"$VENV_PY" - "$WORK/t1.parquet" "$WORK/t2.parquet" <<'PY' || fail=1
import sys
import pyarrow.parquet as pq
one, two = (pq.ParquetFile(p).metadata for p in sys.argv[1:3])
def groups(m):
    return [m.row_group(i).num_rows for i in range(m.num_row_groups)]
assert one.num_rows == two.num_rows == 20000, (one.num_rows, two.num_rows)
assert sum(groups(two)) == 20000 and two.num_row_groups > groups(one).count(700), groups(two)
for c in range(two.num_columns):
    lo = min(two.row_group(i).column(c).statistics.min for i in range(two.num_row_groups)
             if two.row_group(i).column(c).statistics.has_min_max)
    hi = max(two.row_group(i).column(c).statistics.max for i in range(two.num_row_groups)
             if two.row_group(i).column(c).statistics.has_min_max)
    nulls = sum(two.row_group(i).column(c).statistics.null_count for i in range(two.num_row_groups))
    t = pq.read_table(sys.argv[2]).column(c)
    import pyarrow.compute as pc
    mm = pc.min_max(t)
    assert (lo, hi, nulls) == (mm["min"].as_py(), mm["max"].as_py(), t.null_count), (c, lo, hi, nulls)
print(f"ok two threads: {two.num_row_groups} row groups {groups(two)[:3]}..., statistics equal to the data")
PY
exit $fail
