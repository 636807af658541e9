#!/usr/bin/env python3
"""Test data for tests/query: the same rows as Debezium change records (the
`kcat -C -J` line format cdcstore apply reads) and as what the source table
is loaded from, so that the replica and the source start out equal.

  gen.py bulk N OUTDIR       bench-like table public.bench(id bigint pk, status text,
                             amount numeric(12,2), note text, paid boolean, qty int):
                             OUTDIR/bench.jsonl (bare envelopes, NUMERIC as strings,
                             decimal.handling.mode=string) and OUTDIR/bench.csv (COPY csv)
  gen.py roundtrip OUTDIR    public.rt with awkward values (commas, quotes, newlines,
                             non-ASCII, NULL and '', NUMERIC, timestamp, timestamptz,
                             booleans), as schemas.enable=true envelopes (typed
                             MicroTimestamp / ZonedTimestamp): OUTDIR/rt.jsonl, OUTDIR/rt.sql
  gen.py keys OUTDIR         tables keyed by text (ICU column collation, so that only
                             COLLATE "C" gives the replica's order), uuid, and (int, text):
                             OUTDIR/keys.jsonl, OUTDIR/keys.sql
  gen.py update TOPIC TABLE OFFSET LSN JSONROW   one kcat -J line: op u of JSONROW
  gen.py typed KIND N OFFSET LSN OUTFILE   updates of public.bench (of N rows) as
                             schemas.enable=true envelopes (id int64, status string,
                             amount Decimal scale 2 precision 12 as base64, note string,
                             paid boolean, qty int32), offsets and LSNs from OFFSET and
                             LSN up, as kcat -J lines.  KIND: schema (row 1 with the
                             values bulk gave it: types the table, changes no value),
                             clustered (N/100 consecutive ids from 0.42 N + 31337, note
                             'clustered ID', qty and amount changed) or scattered (N/100
                             ids drawn at random, seed 12; note 'scattered ID')
"""
import base64
import datetime as dt
import json
import random
import sys


def kcat_line(topic, offset, key, envelope):
    return json.dumps({"topic": topic, "partition": 0, "offset": offset,
                       "key": json.dumps(key, separators=(",", ":")),
                       "payload": json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)},
                      separators=(",", ":"), ensure_ascii=False)


STATUSES = ["new", "paid", "shipped", "cancelled", "returned"]


def bulk_row(i):
    h = (i * 2654435761) & 0xFFFFFFFF  # a cheap scramble; random.Random(i) is too slow for 10M rows
    amount = "%d.%02d" % (h % 100000, (h >> 7) % 100)
    note = None if i % 7 == 0 else ("" if i % 11 == 0 else "note %d" % (h ^ 0x5bd1e995))
    return (i, STATUSES[i % 5], amount, note, i % 3 == 0, (h >> 3) % 1050 - 50)


def bulk(n, outdir):
    # Written with plain string formatting: json.dumps per line is too slow for
    # ten million lines, and no value here needs escaping.
    with open(outdir + "/bench.jsonl", "w") as ev, open(outdir + "/bench.csv", "w") as csv:
        w_ev, w_csv = ev.write, csv.write
        for i in range(1, n + 1):
            _, status, amount, note, paid, qty = bulk_row(i)
            nj = "null" if note is None else '\\"%s\\"' % note
            w_ev('{"topic":"b.public.bench","partition":0,"offset":%d,"key":"{\\"id\\":%d}",'
                 '"payload":"{\\"op\\":\\"c\\",\\"after\\":{\\"id\\":%d,\\"status\\":\\"%s\\",'
                 '\\"amount\\":\\"%s\\",\\"note\\":%s,\\"paid\\":%s,\\"qty\\":%d},'
                 '\\"source\\":{\\"lsn\\":%d,\\"ts_ms\\":0}}"}\n'
                 % (i, i, i, status, amount, nj, "true" if paid else "false", qty, i))
            nc = "" if note is None else ('""' if note == "" else note)
            w_csv("%d,%s,%s,%s,%s,%d\n" % (i, status, amount, nc, "t" if paid else "f", qty))


RT_FIELDS = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "int32", "optional": True, "field": "i"},
    {"type": "string", "optional": True, "field": "t"},
    {"type": "string", "optional": True, "field": "n"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "version": 1, "field": "ts"},
    {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "version": 1, "field": "tz"},
    {"type": "boolean", "optional": True, "field": "b"},
]

TEXTS = ["plain", "with, comma", 'with "quotes"', "line\nbreak", "cr\r\nlf", "tab\there",
         "back\\slash", "\\.", "é à ü ß", "日本語テキスト", "emoji 🎉", "", None, " lead and trail ",
         "'single'", ",", '"', "a,\"b\"\nc", "NULL", "\\N"]
NUMS = ["0.000", "1.500", "-42.125", "123456789.001", None, "0.001", "-0.500"]
STAMPS = [dt.datetime(2024, 1, 1, 12, 0, 0), dt.datetime(2024, 2, 29, 23, 59, 59, 999999),
          dt.datetime(1999, 12, 31, 0, 0, 0, 500000), dt.datetime(1970, 1, 1), None,
          dt.datetime(2038, 1, 19, 3, 14, 8, 120)]
EPOCH = dt.datetime(1970, 1, 1)


def sql_lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, dt.datetime):
        return "'%s'" % v.isoformat(sep=" ")
    return "'%s'" % v.replace("'", "''")


def roundtrip(outdir):
    rows = []
    for k in range(1, 201):
        ts = STAMPS[k % len(STAMPS)]
        tz = STAMPS[(k + 1) % len(STAMPS)]
        rows.append({
            "id": k * 37 - 3000,                       # negative keys too
            "i": None if k % 13 == 0 else (k * 7919) % 200001 - 100000,
            "t": TEXTS[k % len(TEXTS)],
            "n": NUMS[k % len(NUMS)],
            "ts": ts, "tz": tz,
            "b": None if k % 5 == 0 else k % 2 == 0,
        })
    schema = {"type": "struct", "optional": False, "name": "rt.public.rt.Envelope", "fields": [
        {"type": "struct", "optional": True, "name": "rt.public.rt.Value", "field": "before", "fields": RT_FIELDS},
        {"type": "struct", "optional": True, "name": "rt.public.rt.Value", "field": "after", "fields": RT_FIELDS},
        {"type": "struct", "optional": False, "field": "source", "fields": [
            {"type": "int64", "optional": True, "field": "lsn"}]},
        {"type": "string", "optional": False, "field": "op"}]}
    with open(outdir + "/rt.jsonl", "w") as ev:
        for off, r in enumerate(rows):
            after = dict(r)
            after["ts"] = None if r["ts"] is None else int((r["ts"] - EPOCH).total_seconds()) * 1000000 + r["ts"].microsecond
            after["tz"] = None if r["tz"] is None else r["tz"].strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            env = {"schema": schema, "payload": {"op": "c", "after": after, "source": {"lsn": 100 + off}}}
            ev.write(kcat_line("rt.public.rt", off, {"id": r["id"]}, env) + "\n")
    with open(outdir + "/rt.sql", "w") as sql:
        sql.write("SET TimeZone = 'UTC';\n")
        sql.write("CREATE TABLE public.rt (id bigint PRIMARY KEY, i int, t text, n numeric(15,3), "
                  "ts timestamp, tz timestamptz, b boolean);\n")
        for r in rows:
            tz = None if r["tz"] is None else r["tz"].isoformat(sep=" ") + "+00"
            sql.write("INSERT INTO public.rt VALUES (%s);\n" % ", ".join(
                [sql_lit(r["id"]), sql_lit(r["i"]), sql_lit(r["t"]), sql_lit(r["n"]),
                 sql_lit(r["ts"]), "NULL" if tz is None else "'%s'" % tz, sql_lit(r["b"])]))


TEXT_KEYS = ["apple", "Banana", "banana", "Zebra", "\u00e9clair", "a b", "a", "ab", "_x", "10", "9", "2",
             "\u65e5\u672c", "A", "aB", "Ab", "z", "~", " lead", "\U0001f389", "quote'", 'dq"', "comma,"]


def keys(outdir):
    lines, sql, off = [], [], 0

    def ev(table, key, after):
        nonlocal off
        off += 1
        env = {"op": "c", "after": after, "source": {"lsn": 1000 + off}}
        lines.append(kcat_line("k.public." + table, off, key, env))

    sql.append('CREATE TABLE public.tk (k text COLLATE "und-x-icu" PRIMARY KEY, v int);')
    for i, k in enumerate(TEXT_KEYS):
        ev("tk", {"k": k}, {"k": k, "v": i})
        sql.append("INSERT INTO public.tk VALUES (%s, %d);" % (sql_lit(k), i))
    sql.append("CREATE TABLE public.uk (id uuid PRIMARY KEY, v text);")
    for i in range(40):
        u = "%08x-%04x-4%03x-8%03x-%012x" % ((i * 2654435761) & 0xFFFFFFFF, i, i, i, i * 7)
        ev("uk", {"id": u}, {"id": u, "v": "v%d" % i})
        sql.append("INSERT INTO public.uk VALUES ('%s', 'v%d');" % (u, i))
    sql.append("CREATE TABLE public.ck (a int, b text, v text, PRIMARY KEY (a, b));")
    for a in range(-3, 4):
        for b in ["", "x", "X", "xy", "\u00e9"]:
            ev("ck", {"a": a, "b": b}, {"a": a, "b": b, "v": "%d/%s" % (a, b)})
            sql.append("INSERT INTO public.ck VALUES (%d, %s, %s);" % (a, sql_lit(b), sql_lit("%d/%s" % (a, b))))
    with open(outdir + "/keys.jsonl", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(outdir + "/keys.sql", "w") as f:
        f.write("\n".join(sql) + "\n")


BENCH_FIELDS = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "status"},
    {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
     "parameters": {"scale": "2", "connect.decimal.precision": "12"}, "field": "amount"},
    {"type": "string", "optional": True, "field": "note"},
    {"type": "boolean", "optional": True, "field": "paid"},
    {"type": "int32", "optional": True, "field": "qty"},
]
BENCH_SCHEMA = {"type": "struct", "optional": False, "name": "b.public.bench.Envelope", "fields": [
    {"type": "struct", "optional": True, "name": "b.public.bench.Value", "field": "before", "fields": BENCH_FIELDS},
    {"type": "struct", "optional": True, "name": "b.public.bench.Value", "field": "after", "fields": BENCH_FIELDS},
    {"type": "struct", "optional": False, "field": "source", "fields": [
        {"type": "int64", "optional": True, "field": "lsn"}, {"type": "int64", "optional": False, "field": "ts_ms"}]},
    {"type": "string", "optional": False, "field": "op"}]}


def decimal_b64(text):
    """Debezium's precise NUMERIC: the big-endian two's complement unscaled integer, base64."""
    unscaled = int(text.replace(".", ""))
    return base64.b64encode(unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True)).decode()


def typed(kind, n, offset, lsn, out):
    n, offset, lsn = int(n), int(offset), int(lsn)
    if kind == "schema":
        ids = [1]
    elif kind == "clustered":
        k = max(1, n // 100)
        first = max(1, min(n - k + 1, int(0.42 * n) + 31337))
        ids = range(first, first + k)
    elif kind == "scattered":
        ids = random.Random(12).sample(range(1, n + 1), max(1, n // 100))
    else:
        sys.exit("gen.py typed: KIND is schema, clustered or scattered")
    # The schema is the same in every record: encoded once, spliced in.
    head = '{"schema":' + json.dumps(BENCH_SCHEMA, separators=(",", ":")) + ',"payload":'
    with open(out, "w") as f:
        for j, i in enumerate(ids):
            _, status, amount, note, paid, qty = bulk_row(i)
            if kind != "schema":
                h = (i * 40503 + lsn) & 0xFFFF
                note = "%s %d" % (kind, i)
                qty = qty + 1 + h % 7
                amount = "%d.%02d" % (h % 100000, h % 100)
            after = {"id": i, "status": status, "amount": decimal_b64(amount), "note": note, "paid": paid,
                     "qty": qty}
            payload = json.dumps({"op": "u", "before": None, "after": after,
                                  "source": {"lsn": lsn + j, "ts_ms": 0}}, separators=(",", ":"))
            f.write(json.dumps({"topic": "b.public.bench", "partition": 0, "offset": offset + j,
                                "key": '{"id":%d}' % i, "payload": head + payload + "}"},
                               separators=(",", ":")) + "\n")


def update(topic, table, offset, lsn, row):
    after = json.loads(row)
    env = {"op": "u", "after": after, "source": {"lsn": int(lsn), "ts_ms": 0}}
    print(kcat_line(topic, int(offset), {"id": after["id"]}, env))


if __name__ == "__main__":
    if sys.argv[1] == "bulk":
        bulk(int(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "roundtrip":
        roundtrip(sys.argv[2])
    elif sys.argv[1] == "keys":
        keys(sys.argv[2])
    elif sys.argv[1] == "update":
        update(*sys.argv[2:7])
    elif sys.argv[1] == "typed":
        typed(*sys.argv[2:7])
    else:
        sys.exit(__doc__)
