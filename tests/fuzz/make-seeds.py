#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Seeds come from the captured Debezium output (tests/data/debezium/*.jsonl),
the pipeline document's events (tests/data/doc/events.jsonl) and hostile
cases written out below.  The corpus is committed; run this again (from the
repository root) after changing it:

    python3 tests/fuzz/make-seeds.py

Every file is rewritten, and files the script no longer makes are removed
(the regressions in tests/fuzz/regressions/ are not touched).  Input formats
are described at the top of each tests/fuzz/fuzz_<target>.c.
"""
import glob
import json
import os
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")
DATA = os.path.join(ROOT, "tests", "data")

corpus = {"decode": {}, "kcat": {}, "key": {}, "apply": {}}


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    assert name not in corpus[target], (target, name)
    assert len(data) <= 65536, (target, name, len(data))
    corpus[target][name] = data


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# ---- decode: flags, [topic], [key], value ----

F_TOPIC, F_KEY, F_NULL, F_POS = 0x01, 0x02, 0x04, 0x08


def frame(topic=None, key=None, value=None, pos=True, mode=0):
    def b(x):
        return x if isinstance(x, bytes) else x.encode("utf-8", "surrogatepass")

    flags = (mode & 7) << 4
    out = b""
    if topic is not None:
        flags |= F_TOPIC
        out += struct.pack("<H", len(b(topic))) + b(topic)
    if key is not None:
        flags |= F_KEY
        out += struct.pack("<H", len(b(key))) + b(key)
    if value is None:
        flags |= F_NULL
    else:
        out += b(value)
    if pos:
        flags |= F_POS
    return bytes([flags]) + out


# ---- the captured output ----

def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return [l.rstrip("\n") for l in f if l.strip()]


SOURCE_NOISE = ("version", "connector", "name", "db", "sequence", "ts_us", "ts_ns", "txId", "xmin", "origin",
                "origin_lsn")


def slim(line, rename=None):
    """A kcat line without what the reader skips (headers, broker, ...) and
    a payload without the source fields the decoder does not read; rename
    = (topic, table) moves the record to another table."""
    r = json.loads(line)
    out = {k: r[k] for k in ("topic", "partition", "offset", "key", "payload") if k in r}
    if rename:
        out["topic"] = rename[0]
    if out.get("payload"):
        p = json.loads(out["payload"])
        env = p["payload"] if isinstance(p, dict) and set(p) == {"schema", "payload"} else p
        if isinstance(env, dict):
            for k in ("ts_us", "ts_ns", "transaction"):
                env.pop(k, None)
            src = env.get("source")
            if isinstance(src, dict):
                for k in SOURCE_NOISE:
                    src.pop(k, None)
                if rename:
                    src["table"] = rename[1]
        out["payload"] = dumps(p)
    return dumps(out)


PRECISE = ("shop.public.precise_orders", "precise_orders")

for path in sorted(glob.glob(os.path.join(DATA, "debezium", "*.jsonl"))) + [os.path.join(DATA, "doc", "events.jsonl")]:
    stem = os.path.splitext(os.path.basename(path))[0]
    if "doc" in path:
        stem = "doc_events"
    lines = lines_of(path)
    precise = stem == "precise_decimal"
    # decode: every record (the schemas.enable=true file: its first three,
    # its schema is the same on every line), as found
    for i, line in enumerate(lines[:3] if stem == "schemas_enabled" else lines):
        r = json.loads(line)
        mode = 1 if precise and i % 2 else 2 if stem == "snapshot_stream" and i % 3 == 0 else 0
        put("decode", "%s-%02d" % (stem, i), frame(r.get("topic"), r.get("key"), r.get("payload"), True, mode))
    # kcat: the first lines of each file as captured, headers and all
    put("kcat", stem, "\n".join(lines[: 2 if stem == "schemas_enabled" else 4]) + "\n")
    # apply: whole scenarios, slimmed (the schemas.enable=true one cut short)
    keep = lines[:3] if stem == "schemas_enabled" else lines
    put("apply", stem, "\n".join(slim(l, PRECISE if precise else None) for l in keep) + "\n")

# A kcat line with CRLF ends and blank lines, and bare envelopes.
doc = lines_of(os.path.join(DATA, "doc", "events.jsonl"))
put("kcat", "crlf_blank", "\r\n".join(doc[:3]) + "\r\n\r\n   \n\t\n" + doc[3] + "\r\n")
bare = [json.loads(l)["payload"] for l in doc[:4] if json.loads(l)["payload"]]
put("kcat", "bare_envelopes", "\n".join(bare) + "\n")
put("apply", "bare_envelopes", "\n".join(bare) + "\n")

# ---- hostile cases ----


def env(op="c", after=None, before=None, lsn=100, table="orders", schema="public", snapshot=None, extra=None):
    src = {"schema": schema, "table": table, "lsn": lsn, "ts_ms": 1700000000000}
    if snapshot is not None:
        src["snapshot"] = snapshot
    e = {"before": before, "after": after, "source": src, "op": op, "ts_ms": 1700000000001}
    if extra:
        e.update(extra)
    return e


def kline(payload, key='{"order_id":1}', topic="shop.public.orders", partition="0", offset="1"):
    """A kcat line; partition and offset are raw JSON tokens (or None: absent)."""
    parts = ['"topic":' + dumps(topic)]
    if partition is not None:
        parts.append('"partition":' + partition)
    if offset is not None:
        parts.append('"offset":' + offset)
    parts.append('"key":' + (dumps(key) if key is not None else "null"))
    parts.append('"payload":' + (dumps(payload) if payload is not None else "null"))
    return "{" + ",".join(parts) + "}"


ROW = {"order_id": 1, "status": "paid", "amount": "25.00"}
GOOD = dumps(env(after=ROW))

# Positions (kcat lines): huge, negative, fractional, strings, leading zeros.
positions = {
    "offset_2p63_plus_5": ("0", "9223372036854775813"),
    "offset_2p63_minus_1": ("0", "9223372036854775807"),
    "offset_2p63_minus_2": ("0", "9223372036854775806"),
    "offset_negative": ("0", "-4"),
    "offset_fraction": ("0", "1.5"),
    "offset_exponent": ("0", "1e3"),
    "offset_string": ("0", '"7"'),
    "offset_null": ("0", "null"),
    "offset_leading_zero": ("0", "007"),
    "offset_20_digits": ("0", "99999999999999999999"),
    "partition_2p31": ("2147483648", "1"),
    "partition_2p31_minus_1": ("2147483647", "1"),
    "partition_negative": ("-1", "1"),
    "partition_fraction": ("1.5", "1"),
    "partition_absent": (None, "1"),
    "offset_absent": ("0", None),
}
pos_lines = []
for name, (part, off) in positions.items():
    line = kline(GOOD, partition=part, offset=off)
    pos_lines.append(line)
    put("kcat", "pos_" + name, line + "\n")
    put("decode", "pos_" + name, frame("shop.public.orders", '{"order_id":1}', GOOD, pos=False))
put("apply", "positions", "\n".join(pos_lines) + "\n")

# Envelopes: one name, one envelope (key given), also used as kcat lines.
hostile = {}
hostile["nul_in_value"] = ('{"order_id":1}', dumps(env(after={"order_id": 1, "status": "a\u0000b"})))
hostile["nul_in_key"] = ('{"code":"a\\u0000b"}', dumps(env(after={"code": "a\u0000b", "v": 1})))
hostile["nul_in_table"] = ('{"order_id":1}', dumps(env(after=ROW, table="or\u0000ders")))
hostile["nul_in_column_name"] = ('{"order_id":1}', dumps(env(after={"order_id": 1, "st\u0000atus": "x"})))
hostile["invalid_utf8"] = ('{"order_id":1}', dumps(env(after={"order_id": 1, "status": "\udcff\udcfe"})).encode(
    "utf-8", "surrogateescape").replace(b"\xff\xfe", b"\xff\xfe\xc0\x80\xed\xa0\x80"))
hostile["lone_surrogates"] = ('{"order_id":1}',
                              dumps(env(after={"order_id": 1, "status": "x"})).replace('"x"', '"\\ud800\\udc00\\ud800x\\udfff"'))
hostile["bom_payload"] = ('{"order_id":1}', "\ufeff" + GOOD)
hostile["bom_key"] = ("\ufeff" + '{"order_id":1}', GOOD)
for name, lsn in {"lsn_1e999": "1e999", "lsn_minus_1e999": "-1e999", "lsn_negative": "-1", "lsn_fraction": "1.5",
                  "lsn_2p53_plus_1": "9007199254740993", "lsn_2p53": "9007199254740992", "lsn_string": '"123"',
                  "lsn_true": "true", "lsn_1e308": "1e308", "lsn_absent": None}.items():
    e = dumps(env(after=ROW, lsn=0))
    e = e.replace('"lsn":0', '"lsn":' + lsn) if lsn else e.replace('"lsn":0,', "")
    hostile[name] = ('{"order_id":1}', e)
deep_ok = "[" * 900 + "1" + "]" * 900
deep_bad = "[" * 3000 + "]" * 3000
hostile["nested_900"] = ('{"order_id":1}', dumps(env(after={"order_id": 1, "doc": 0})).replace('"doc":0', '"doc":' + deep_ok))
hostile["nested_3000"] = ('{"order_id":1}', dumps(env(after={"order_id": 1, "doc": 0})).replace('"doc":0', '"doc":' + deep_bad))
hostile["nested_key"] = ('{"order_id":' + "[" * 500 + "1" + "]" * 500 + "}", GOOD)
hostile["duplicate_after"] = ('{"order_id":1}', dumps(env(after={"order_id": 1})).replace(
    '"after":{"order_id":1}', '"after":{"order_id":1,"order_id":2,"status":"a","status":"b"}'))
hostile["duplicate_key"] = ('{"order_id":1,"order_id":2}', dumps(env(op="d", before=None, after=None)))
hostile["duplicate_key_row"] = ('{"order_id":1,"order_id":1}', GOOD)
hostile["table_1024"] = ('{"order_id":1}', dumps(env(after=ROW, schema="s" * 511, table="t" * 512)))
hostile["table_1025"] = ('{"order_id":1}', dumps(env(after=ROW, schema="s" * 512, table="t" * 512)))
hostile["table_5000"] = ('{"order_id":1}', dumps(env(after=ROW, table="t" * 5000)))
for name, v in {"bigint_2p53_plus_1": "9007199254740993", "bigint_min": "-9223372036854775808",
                "bigint_2p64": "18446744073709551616", "bigint_1e20": "1e20", "bigint_2p53": "9007199254740992",
                "integral_fraction": "1.0", "negative_zero": "-0", "float_tiny": "4.9e-324"}.items():
    hostile["row_" + name] = ('{"order_id":1}', dumps(env(after={"order_id": 1, "n": 0})).replace('"n":0', '"n":' + v))
    hostile["key_" + name] = ('{"order_id":%s}' % v, dumps(env(after={"order_id": 0})).replace('"order_id":0', '"order_id":' + v))
for name, op in {"op_truncate": "t", "op_message": "m", "op_unknown": "x", "op_empty": "", "op_long": "cu"}.items():
    hostile[name] = ('{"order_id":1}', dumps(env(op=op, after=ROW)))
hostile["op_missing"] = ('{"order_id":1}', dumps(env(after=ROW)).replace('"op":"c",', ""))
hostile["delete_before_null"] = ('{"order_id":1}', dumps(env(op="d", before=None, after=None)))
hostile["delete_with_before"] = ('{"order_id":1}', dumps(env(op="d", before=ROW, after=None)))
hostile["update_placeholder"] = ('{"order_id":1}', dumps(env(op="u", after={"order_id": 1, "note": "__debezium_unavailable_value",
                                                                            "b": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==",
                                                                            "arr": ["__debezium_unavailable_value"]})))
hostile["snapshot_last"] = ('{"order_id":1}', dumps(env(op="r", after=ROW, snapshot="last")))
hostile["snapshot_incremental"] = ('{"order_id":1}', dumps(env(op="r", after=ROW, snapshot="incremental")))
hostile["snapshot_unknown"] = ('{"order_id":1}', dumps(env(op="r", after=ROW, snapshot="maybe")))
hostile["wrapped_null_payload"] = ('{"order_id":1}', '{"schema":{"type":"struct"},"payload":null}')
hostile["null_literal"] = ('{"order_id":1}', "null")
hostile["no_key_first_column"] = (None, dumps(env(after={"code": "k1", "v": 2})))
hostile["key_array"] = ("[1]", GOOD)
hostile["key_mismatch"] = ('{"order_id":2}', GOOD)
hostile["declared_types"] = ('{"order_id":1}', dumps(env(after={"order_id": 1, "created_at": 9007199254740992, "ts": -9007199254740992,
                                                                   "d": 9007199254740992, "t": 86400000000, "n": "AQ=="})))
hostile["declared_types_bad"] = ('{"order_id":1}', dumps(env(after={"order_id": 1, "created_at": 1.5, "ts": "x", "d": -1e300,
                                                                       "t": -1, "n": "25.00"})))
hostile["varscale"] = ('{"order_id":1}', dumps(env(after={"order_id": 1, "w": {"scale": 16383, "value": "gA=="},
                                                             "x": {"scale": -16383, "value": "AQ=="},
                                                             "y": {"scale": 16384, "value": "AQ=="}})))
hostile["precise_amount"] = ('{"order_id":1}', dumps(env(after={"order_id": 1, "amount": "Bdw="}, table="precise_orders")))

# Schema-enabled envelope with the time, decimal and bytes types at their edges.
fields = [
    {"type": "int32", "field": "order_id"},
    {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "99999"}, "field": "big_scale"},
    {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}, "field": "amount"},
    {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "field": "mts"},
    {"type": "int64", "name": "io.debezium.time.Timestamp", "field": "ts"},
    {"type": "int32", "name": "io.debezium.time.Date", "field": "d"},
    {"type": "int64", "name": "io.debezium.time.MicroTime", "field": "mt"},
    {"type": "int32", "name": "io.debezium.time.Time", "field": "t"},
    {"type": "bytes", "field": "raw"},
    {"type": "int16", "field": "small"},
    {"type": "float64", "field": "f"},
    {"type": "boolean", "field": "flag"},
    {"type": "struct", "name": "io.debezium.data.VariableScaleDecimal", "field": "vs"},
]
after = {"order_id": 1, "big_scale": "AQ==", "amount": "////", "mts": 9007199254740992, "ts": -9007199254740992,
         "d": 9007199254740992, "mt": 86400000000, "t": -1, "raw": "@@@", "small": 40000, "f": "NaN", "flag": 1,
         "vs": {"scale": 2, "value": "AQ=="}}
schema = {"type": "struct", "fields": [{"type": "struct", "fields": fields, "field": "before"},
                                       {"type": "struct", "fields": fields, "field": "after"}]}
hostile["schema_edges"] = ('{"order_id":1}', dumps({"schema": schema, "payload": env(after=after)}))
after_ok = dict(after, big_scale="AQ==", amount="Bdw=", t=1000, raw="AAEC/w==", small=3, f=1.5, flag=True)
hostile["schema_ok"] = ('{"schema":{"type":"struct"},"payload":{"order_id":1}}',
                        dumps({"schema": schema, "payload": env(after=after_ok)}).replace('"big_scale":"AQ==",', ""))

# Wide rows: 1,600 columns (PostgreSQL's most) and 1,601 (dead-lettered).
def wide(n):
    cols = {"order_id": 1}
    for i in range(1, n):
        cols["c%x" % i] = i % 10
    return dumps(env(after=cols))


wide1600, wide1601 = wide(1600), wide(1601)

for name, (key, value) in hostile.items():
    vb = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
    put("decode", name, frame("shop.public.orders", key, vb, True, 6 if name.startswith("declared") else 0))
for name in ("nul_in_value", "invalid_utf8", "lone_surrogates", "bom_payload", "lsn_1e999", "nested_900",
             "duplicate_after", "table_1024", "table_1025", "row_bigint_2p53_plus_1", "key_bigint_min", "op_truncate",
             "wrapped_null_payload", "no_key_first_column", "update_placeholder", "schema_edges"):
    key, value = hostile[name]
    vb = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
    # kcat lines: the payload as a JSON string (raw bytes kept raw)
    line = b'{"topic":"shop.public.orders","partition":0,"offset":3,"key":' + (
        json.dumps(key).encode() if key is not None else b"null") + b',"payload":' + \
        b'"' + vb.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"}\n'
    put("kcat", name, line)
put("decode", "wide_1600", frame("shop.public.orders", '{"order_id":1}', wide1600))
put("decode", "wide_1601", frame("shop.public.orders", '{"order_id":1}', wide1601))
put("decode", "tombstone", frame("shop.public.orders", '{"order_id":1}', None))
put("decode", "empty_value", frame("shop.public.orders", '{"order_id":1}', b""))
put("decode", "value_with_nul_byte", frame("shop.public.orders", '{"order_id":1}', GOOD.encode()[:40] + b"\0" + GOOD.encode()[40:]))
put("decode", "trailing_nuls", frame("shop.public.orders", '{"order_id":1}', GOOD.encode() + b"\0\0\n"))
put("decode", "trailing_garbage", frame("shop.public.orders", '{"order_id":1}', GOOD + " x"))
put("decode", "topic_two_parts", frame("public.orders", '{"order_id":1}', dumps(env(after=ROW, table="", schema=""))))
put("decode", "topic_long", frame("p." + "s" * 600 + "." + "t" * 600, '{"order_id":1}', dumps(env(after=ROW, table="", schema=""))))
put("decode", "no_topic_no_source", frame(None, '{"order_id":1}', '{"op":"c","after":{"order_id":1},"source":{"lsn":5}}', False))

# Lines that are not what they seem (kcat).
put("kcat", "raw_nul_and_ctl", b'{"topic":"shop.public.orders","partition":0,"offset":1,"key":"{\\"order_id\\":1}","payload":"{\\"op\\":\\"c\\",\\"after\\":{\\"order_id\\":1,\\"s\\":\\"a\x00b\x01\\"},\\"source\\":{\\"lsn\\":5}}"}\n')
put("kcat", "bom_line", "\ufeff" + doc[0] + "\n")
put("kcat", "unterminated", doc[0][:-20] + "\n" + '{"topic":"a.b.c","payload":"\\' + "\n" + '{"a":"\\u12' + "\n")
put("kcat", "not_objects", '[1,2]\n"str"\n42\nnull\n{}\n{"payload":null}\n{"payload":{"op":"c"},"topic":"x.y.z"}\n')
put("kcat", "escapes", '{"topic":"shop.p\\u0075blic.\\ud83d\\ude00","partition":0,"offset":2,"key":"{\\"id\\":\\"\\\\u0000\\"}","payload":"{\\"op\\":\\"c\\",\\"after\\":{\\"id\\":\\"\\\\ud800\\"},\\"source\\":{\\"lsn\\":7}}"}\n')
put("kcat", "deep_headers", '{"topic":"shop.public.orders","headers":' + "[" * 3000 + "]" * 3000 + ',"offset":1,"payload":null}\n')
put("kcat", "duplicate_fields", '{"topic":"a.b.c","topic":"shop.public.orders","offset":1,"offset":2,"payload":null,"payload":' + dumps(GOOD) + "}\n")

# apply: the hostile envelopes as kcat lines, a few to a file, then wide rows.
names = list(hostile)
for k in range(0, len(names), 8):
    group = names[k:k + 8]
    out = b""
    for j, name in enumerate(group):
        key, value = hostile[name]
        vb = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
        if len(vb) > 8000:
            continue
        out += b'{"topic":"shop.public.orders","partition":0,"offset":' + str(k + j).encode() + b',"key":' + (
            json.dumps(key).encode() if key is not None else b"null") + b',"payload":' + \
            b'"' + vb.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"}\n'
    put("apply", "hostile_%02d" % (k // 8), out)
put("apply", "wide_1600_1601", (wide1600 + "\n" + wide1601 + "\n").encode())
put("apply", "truncate_and_snapshot", "\n".join([
    dumps(env(op="r", after={"order_id": i, "s": "x"}, lsn=50, snapshot="true" if i < 3 else "last")) for i in range(1, 4)] + [
    dumps(env(op="c", after={"order_id": 9, "s": "y"}, lsn=60)),
    dumps(env(op="t", lsn=70)),
    dumps(env(op="c", after={"order_id": 2, "s": "z,\"q\"\nline"}, lsn=80)),
    dumps(env(op="d", before={"order_id": 9}, lsn=90)),
]) + "\n")

# ---- key: key JSON text, and a few encoded keys ----
keys = {
    "int_one": "[1]", "int_negative": "[-1]", "int_max": "[9223372036854775807]", "int_min": "[-9223372036854775808]",
    "int_2p63": "[9223372036854775808]", "int_fraction_zero": "[1.0]", "int_exponent": "[1e3]", "fraction": "[1.5]",
    "int_2p53_float": "[9007199254740992.0]", "int_2p53_plus_1_float": "[9007199254740993e0]", "huge_exponent": "[1e999]",
    "leading_zero": "[01]", "negative_zero": "[-0]", "text": '["a"]', "text_empty": '[""]', "text_nul": '["a\\u0000b"]',
    "text_pair": '["\\ud83d\\ude00"]', "text_lone_surrogate": '["\\ud800"]', "text_escapes": '["\\"\\\\\\/\\b\\f\\n\\r\\t"]',
    "mixed": '["\\u00e9", 2, -3]', "object": '{"order_id": 2}', "object_two": '{"a":1,"b":"x"}',
    "object_duplicate": '{"a":1,"a":2}', "object_quoted_name": '{"a\\"b":"c"}', "spaces": " [ 1 , 2 ] ",
    "order_pair": "[2,1]", "order_negative": "[-5,3]", "bool": "[true]", "null": "[null]", "nested": "[[1]]",
    "empty_object": "{}", "empty_array": "[]", "trailing_comma": "[1,]", "unterminated": '["abc', "bom": "\ufeff[1]",
    "long_number": "[" + "1" * 70 + "]", "many": "[" + ",".join(str(i) for i in range(40)) + "]",
}
for name, text in keys.items():
    put("key", name, text)
put("key", "enc_int", b"\x20\x80\x00\x00\x00\x00\x00\x00\x01")
put("key", "enc_text_nul", b"\x30a\x00\xffb\x00\x00")
put("key", "enc_composite", b"\x30\x00\x00\x20\x7f\xff\xff\xff\xff\xff\xff\xff")
put("key", "enc_truncated", b"\x30abc\x00")

# ---- write ----
for target, files in corpus.items():
    d = os.path.join(OUT, target)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    print("%-7s %4d files %7d bytes" % (target, len(files), sum(len(v) for v in files.values())))
