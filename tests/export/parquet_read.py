"""Reads Parquet files written by query/parquet.c back with pyarrow and DuckDB.

Run by tests/export/run_parquet.sh, which builds the writer's driver (pqgen)
and passes its path: parquet_read.py PQGEN WORKDIR.  Every value of every
type the writer maps is checked in both readers, and the column chunk
statistics pyarrow reads, and the Delta statistics JSON, against the true
min/max/null count.  Expected values are computed here, independently of the
writer's C parsers (Python's datetime, decimal and struct).  Exits 1 on any
mismatch, naming each.
"""
import datetime
import decimal
import json
import math
import os
import struct
import subprocess
import sys
import uuid

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

PQGEN, WORK = sys.argv[1], sys.argv[2]
decimal.getcontext().prec = 100
failures = []


def fail(msg):
    failures.append(msg)
    print("MISMATCH: " + msg)


# ---- Expected values, from the text (None: NULL) ----

EPOCH = datetime.date(1970, 1, 1).toordinal()


def days(y, m, d):
    """Days since 1970-01-01 of a proleptic Gregorian date, any year: moved
    by whole 400-year cycles (146097 days) into datetime's range."""
    k = 0
    while y + 400 * k < 1:
        k += 1
    while y + 400 * k > 9999:
        k -= 1
    return datetime.date(y + 400 * k, m, d).toordinal() - EPOCH - k * 146097


def date_days(t):
    bc = t.endswith(" BC")
    t = t[:-3] if bc else t
    y, m, d = t.split("-")
    y = int(y)
    return days(1 - y if bc else y, int(m), int(d))


def time_us(t):
    h, m, s = t.split(":")
    sec, _, frac = s.partition(".")
    return ((int(h) * 60 + int(m)) * 60 + int(sec)) * 1000000 + int((frac + "000000")[:6])


def ts_us(t):
    bc = t.endswith(" BC")
    t = t[:-3] if bc else t
    off = 0
    date, _, rest = t.replace("T", " ").partition(" ")
    if rest.endswith("Z"):
        rest = rest[:-1]
    elif "+" in rest or "-" in rest:
        sign = 1 if "+" in rest else -1
        rest, o = rest.split("+" if sign > 0 else "-")
        oh, _, om = o.partition(":")
        off = sign * (int(oh) * 3600 + int(om or 0) * 60) * 1000000
    y, m, d = date.split("-")
    y = int(y)
    return days(1 - y if bc else y, int(m), int(d)) * 86400000000 + time_us(rest) - off


def f32(t):
    return struct.unpack("<f", struct.pack("<f", f64(t)))[0]


def f64(t):
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(t) or float(t)


def dec(scale):
    q = decimal.Decimal(1).scaleb(-scale)
    return lambda t: decimal.Decimal(t).quantize(q)


def bytea(t):
    return bytes.fromhex(t[2:])


# Each column: name, type descriptor, expected(text) -> the value readers give
# (for dates and times: the integer a cast gives), the kind of comparison,
# and its values.
S_LONG = "x" * 5000 + "é"
COLUMNS = [
    ("i8", "int8", int, "int", ["-128", "127", "0", None, "5"]),
    ("i16", "int16", int, "int", ["-32768", "32767", "0", None, "-1"]),
    ("i32", "int32", int, "int", ["-2147483648", "2147483647", "0", None, "42"]),
    ("i64", "int64", int, "int",
     ["-9223372036854775808", "9223372036854775807", "9007199254740993", None, "-9007199254740993"]),
    ("year", "int32/io.debezium.time.Year", int, "int", ["2024", None, "1", "0", "-5"]),
    ("f32", "float32", f32, "float", ["NaN", "Infinity", "-Infinity", "-0", "1.5", "3.4028235e+38", "1e-45",
                                      "0.1", "-1.17549435e-38", "16777217", None, "123456.79"]),
    ("f64", "float64", f64, "float", ["NaN", "Infinity", "-Infinity", "-0", "0.1", "1.7976931348623157e+308",
                                      "5e-324", "123456789012345678", "-2.2250738585072014e-308", None,
                                      "1e+22", "1.2345678901234567e-05"]),
    ("f64n", "float64", f64, "float", ["1", "NaN", None, "-3"]),
    ("b", "boolean", lambda t: t == "t", "eq", ["t", "f", None, "t"]),
    ("s", "string", str, "str", ["héllo ✓ 日本", "", None, "tab\there\nnewline\\", S_LONG, "z", "A"]),
    ("j", "string/io.debezium.data.Json", str, "str", ['{"a": [1, 2.5, null]}', "[]", None, '"x"']),
    ("u", "string/io.debezium.data.Uuid", lambda t: uuid.UUID(t).bytes, "uuid",
     ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "00000000-0000-0000-0000-000000000000", None,
      "ffffffff-ffff-ffff-ffff-ffffffffffff", "7F000000-0000-0000-0000-000000000001"]),
    ("d52", "decimal:2:5", dec(2), "dec", ["-999.99", "999.99", "0.5", "0.00", None, "12", "-0.01"]),
    ("d38", "decimal:10:38", dec(10), "dec",
     ["9999999999999999999999999999.9999999999", "-9999999999999999999999999999.9999999999",
      "0.0000000001", None, "-0.0000000001", "123"]),
    ("d2", "decimal:2", dec(2), "dec", ["-123.45", "99999999999999999999999999999999999.99", None, "0"]),
    ("d0", "decimal:0:38", dec(0), "dec", ["99999999999999999999999999999999999999",
                                           "-99999999999999999999999999999999999999", "0", None]),
    ("d18", "decimal:4:18", dec(4), "dec", ["-99999999999999.9999", "1.5", None, "0.0001"]),
    ("dneg", "decimal:-3:3", dec(0), "dec", ["999000", "-1000", None, "0", "-999000"]),
    ("dv", "decimal", str, "str", ["NaN", "1.2345", None, "-0.000001"]),
    ("dbig", "decimal:2:40", str, "str", ["12345678901234567890123456789012345678.12", None]),
    ("dt", "int32/io.debezium.time.Date", date_days, "int",
     ["2024-02-29", "0044-03-15 BC", "9999-12-31", "0001-01-01", "4713-01-01 BC", "1970-01-01", None,
      "12345-06-07", "1969-12-31"]),
    ("ts", "int64/io.debezium.time.MicroTimestamp", ts_us, "int",
     ["2024-01-02 03:04:05.123456", "1970-01-01 00:00:00", "0001-01-01 00:00:00 BC",
      "9999-12-31 23:59:59.999999", "1900-06-01 12:00:00.5", None, "1969-12-31 23:59:59.999999"]),
    ("tsm", "int64/io.debezium.time.Timestamp", ts_us, "int", ["2024-01-02 03:04:05.123", None]),
    ("tz", "string/io.debezium.time.ZonedTimestamp", ts_us, "int",
     ["2024-01-02T03:04:05.123456Z", "2024-01-02T03:04:05+05:30", "1970-01-01T00:00:00Z", None,
      "1900-01-01T00:00:00.5-08:00"]),
    ("tm", "int64/io.debezium.time.MicroTime", time_us, "int",
     ["00:00:00", "23:59:59.999999", "24:00:00", "12:34:56.5", None]),
    ("tms", "int32/io.debezium.time.Time", time_us, "int", ["13:00:00.123", None, "00:00:00"]),
    ("ztime", "string/io.debezium.time.ZonedTime", str, "str", ["03:04:05Z", None]),
    ("by", "bytes", bytea, "eq", ["\\x", "\\x00ff00", "\\xdeadbeef", None, "\\x00"]),
    ("st", "struct", str, "str", ['{"x":1}', None]),
    ("ar", "array", str, "str", ["{1,NULL,3}", None]),
    ("un", None, str, "str", ["anything", None, ""]),
    ("allnull", "int64", int, "int", [None, None]),
]

# The types the readers give each column (pyarrow 26 reads JSON and UUID as
# its canonical extension types; earlier versions as string and
# fixed_size_binary(16)).
ARROW_TYPES = "i8 int8|i16 int16|i32 int32|i64 int64|year int32|f32 float|f64 double|f64n double|b bool|" \
    "s string|j extension<arrow.json>|u extension<arrow.uuid>|d52 decimal128(5, 2)|d38 decimal128(38, 10)|" \
    "d2 decimal128(38, 2)|d0 decimal128(38, 0)|d18 decimal128(18, 4)|dneg decimal128(6, 0)|dv string|dbig string|dt date32[day]|" \
    "ts timestamp[us]|tsm timestamp[us]|tz timestamp[us, tz=UTC]|tm time64[us]|tms time64[us]|ztime string|" \
    "by binary|st string|ar string|un string|allnull int64|id int64|v string|f double|flag bool|" \
    "seq int64|wrap int64|desc32 int32|wrap32 int32|sm16 int16|nullseq int64|tsa timestamp[us]|dta date32[day]|" \
    "rnd int64|spike int64|spike32 int32|late string"
DUCK_TYPES = "i8 TINYINT|i16 SMALLINT|i32 INTEGER|i64 BIGINT|year INTEGER|f32 FLOAT|f64 DOUBLE|f64n DOUBLE|" \
    "b BOOLEAN|s VARCHAR|j JSON|u UUID|d52 DECIMAL(5,2)|d38 DECIMAL(38,10)|d2 DECIMAL(38,2)|d0 DECIMAL(38,0)|" \
    "d18 DECIMAL(18,4)|dneg DECIMAL(6,0)|dv VARCHAR|dbig VARCHAR|dt DATE|ts TIMESTAMP|tsm TIMESTAMP|tz TIMESTAMP WITH TIME ZONE|" \
    "tm TIME|tms TIME|ztime VARCHAR|by BLOB|st VARCHAR|ar VARCHAR|un VARCHAR|allnull BIGINT|id BIGINT|" \
    "v VARCHAR|f DOUBLE|flag BOOLEAN|seq BIGINT|wrap BIGINT|desc32 INTEGER|wrap32 INTEGER|sm16 SMALLINT|" \
    "nullseq BIGINT|tsa TIMESTAMP|dta DATE|rnd BIGINT|spike BIGINT|spike32 INTEGER|late VARCHAR"
ARROW_TYPES = dict(x.split(" ", 1) for x in ARROW_TYPES.split("|"))
DUCK_TYPES = dict(x.split(" ", 1) for x in DUCK_TYPES.split("|"))

# How each type's integer form is read from DuckDB (dates, times).
DUCK_INT = {
    "int32/io.debezium.time.Date": "date_diff('day', DATE '1970-01-01', \"{c}\")",
    "int64/io.debezium.time.MicroTimestamp": "epoch_us(\"{c}\")",
    "int64/io.debezium.time.Timestamp": "epoch_us(\"{c}\")",
    "string/io.debezium.time.ZonedTimestamp": "epoch_us(\"{c}\")",
    "int64/io.debezium.time.MicroTime":
        "hour(\"{c}\")::BIGINT * 3600000000 + minute(\"{c}\")::BIGINT * 60000000 + microsecond(\"{c}\")",
    "int32/io.debezium.time.Time":
        "hour(\"{c}\")::BIGINT * 3600000000 + minute(\"{c}\")::BIGINT * 60000000 + microsecond(\"{c}\")",
    "string/io.debezium.data.Uuid": "CAST(\"{c}\" AS VARCHAR)",
}
ARROW_INT = {"int32/io.debezium.time.Date": pa.int32(), "int64/io.debezium.time.MicroTimestamp": pa.int64(),
             "int64/io.debezium.time.Timestamp": pa.int64(),
             "string/io.debezium.time.ZonedTimestamp": pa.int64(),
             "int64/io.debezium.time.MicroTime": pa.int64(), "int32/io.debezium.time.Time": pa.int64()}


def same(kind, got, want):
    if want is None or got is None:
        return got is None and want is None
    if kind == "float":
        if math.isnan(want):
            return isinstance(got, float) and math.isnan(got)
        return got == want and math.copysign(1, got) == math.copysign(1, want)
    if kind == "dec":
        return isinstance(got, decimal.Decimal) and str(got) == str(want)
    return got == want and type(got) is type(want)


def escape(t):
    if t is None:
        return "\\N"
    return t.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def write_file(name, cols, rows, args):
    tsv = os.path.join(WORK, name + ".tsv")
    out = os.path.join(WORK, name + ".parquet")
    stats = os.path.join(WORK, name + ".stats.json")
    with open(tsv, "w", encoding="utf-8", newline="\n") as f:
        f.write("\t".join(c[0] for c in cols) + "\n")
        f.write("\t".join(c[1] or "-" for c in cols) + "\n")
        for r in rows:
            f.write("\t".join(escape(v) for v in r) + "\n")
    p = subprocess.run([PQGEN, *args, "-s", stats, tsv, out], capture_output=True, text=True)
    if p.returncode:
        fail(f"{name}: pqgen exited {p.returncode}: {p.stderr.strip()}")
        return None, None
    with open(stats) as f:
        return out, json.load(f, parse_float=decimal.Decimal)


def check_file(label, cols, rows, args, rg_rows=None):
    out, stats = write_file(label, cols, rows, args)
    if not out:
        return
    want = [[c[2](r[i]) if r[i] is not None else None for i, c in enumerate(cols)] for r in rows]
    # pyarrow
    t = pq.read_table(out)
    if t.num_rows != len(rows):
        fail(f"{label}: pyarrow reads {t.num_rows} rows, wrote {len(rows)}")
        return
    for c in cols:
        if str(t.schema.field(c[0]).type) != ARROW_TYPES[c[0]]:
            fail(f"{label}: pyarrow type of {c[0]}: {t.schema.field(c[0]).type}, want {ARROW_TYPES[c[0]]}")
    for i, c in enumerate(cols):
        arr = t.column(c[0])
        if c[1] in ARROW_INT:
            arr = arr.cast(ARROW_INT[c[1]])
        got = [v.bytes if isinstance(v, uuid.UUID) else v for v in arr.to_pylist()]
        for r in range(len(rows)):
            if not same(c[3], got[r], want[r][i]):
                fail(f"{label}: pyarrow column {c[0]} row {r}: got {got[r]!r}, want {want[r][i]!r} "
                     f"(text {rows[r][i]!r})")
    # DuckDB
    sel = ", ".join((DUCK_INT.get(c[1]) or '"{c}"').format(c=c[0]) for c in cols)
    con = duckdb.connect()
    for name, ty, *_ in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{out}')").fetchall():
        if ty != DUCK_TYPES[name]:
            fail(f"{label}: duckdb type of {name}: {ty}, want {DUCK_TYPES[name]}")
    got = con.execute(f"SELECT {sel} FROM read_parquet('{out}')").fetchall()
    if len(got) != len(rows):
        fail(f"{label}: duckdb reads {len(got)} rows, wrote {len(rows)}")
        return
    for r in range(len(rows)):
        for i, c in enumerate(cols):
            w = want[r][i]
            if c[3] == "uuid" and w is not None:
                w = str(uuid.UUID(bytes=w))
            if not same(c[3] if c[3] != "uuid" else "eq", got[r][i], w):
                fail(f"{label}: duckdb column {c[0]} row {r}: got {got[r][i]!r}, want {w!r} "
                     f"(text {rows[r][i]!r})")
    # A filter through DuckDB's row group skipping finds every row a scan
    # would: DuckDB orders NaN above every number, so a NaN row is > any
    # bound (a chunk whose min/max left NaN out was skipped).
    for i, c in enumerate(cols):
        if c[3] != "float":
            continue
        for bound in (0.0, 5.0, 1e300):
            expect = sum(1 for r in want if r[i] is not None and (math.isnan(r[i]) or r[i] > bound))
            n = con.execute(f'SELECT count(*) FROM read_parquet(\'{out}\') WHERE "{c[0]}" > {bound!r}').fetchone()[0]
            if n != expect:
                fail(f"{label}: duckdb: {c[0]} > {bound!r} finds {n} rows, a scan {expect} (statistics skip NaN?)")
    # Column chunk statistics (pyarrow), per row group.
    md = pq.ParquetFile(out).metadata
    at = 0
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        n = rg.num_rows
        if rg_rows and g < md.num_row_groups - 1 and n != rg_rows:
            fail(f"{label}: row group {g} has {n} rows, want {rg_rows}")
        for i, c in enumerate(cols):
            st = rg.column(i).statistics
            vals = [want[r][i] for r in range(at, at + n)]
            nn = [v for v in vals if v is not None and not (c[3] == "float" and math.isnan(v))]
            nulls = sum(v is None for v in vals)
            if st is None or st.null_count != nulls:
                fail(f"{label}: rg {g} column {c[0]}: null_count {st and st.null_count}, want {nulls}")
                continue
            nan = c[3] == "float" and any(v is not None and math.isnan(v) for v in vals)
            if not nn or nan:
                if st.has_min_max:
                    fail(f"{label}: rg {g} column {c[0]}: min/max set, want none"
                         + (" (a NaN in the chunk)" if nan else ""))
                continue
            lo, hi = min(nn), max(nn)
            if c[3] == "str":
                lo, hi = min(nn, key=str.encode), max(nn, key=str.encode)
            if c[3] == "str" and max(len(lo.encode()), len(hi.encode())) > 4096:
                if st.has_min_max:
                    fail(f"{label}: rg {g} column {c[0]}: min/max of a value over 4 KiB kept")
                continue
            if not st.has_min_max:
                fail(f"{label}: rg {g} column {c[0]}: no min/max, want {lo!r}..{hi!r}")
                continue
            gmin, gmax = st.min_raw, st.max_raw
            if c[1] in ARROW_INT or c[3] in ("int",):
                pass
            elif c[3] == "dec":
                sc = max(0, int(c[1].split(":")[1]))  # a negative scale is written as 0
                gmin = decimal.Decimal(int.from_bytes(gmin, "big", signed=True)).scaleb(-sc)
                gmax = decimal.Decimal(int.from_bytes(gmax, "big", signed=True)).scaleb(-sc)
                lo, hi = decimal.Decimal(lo), decimal.Decimal(hi)
            elif c[3] == "str":
                gmin = gmin.decode() if isinstance(gmin, bytes) else gmin
                gmax = gmax.decode() if isinstance(gmax, bytes) else gmax
            elif c[3] == "float":
                if lo == 0:
                    lo = -0.0
                if hi == 0:
                    hi = 0.0
            ok = (gmin == lo and gmax == hi) if c[3] != "float" else (
                same("float", gmin, lo) and same("float", gmax, hi))
            if not ok:
                fail(f"{label}: rg {g} column {c[0]}: stats {gmin!r}..{gmax!r}, want {lo!r}..{hi!r}")
        at += n
    # The Delta statistics JSON.
    if stats["numRecords"] != len(rows):
        fail(f"{label}: delta numRecords {stats['numRecords']}")
    for i, c in enumerate(cols):
        vals = [want[r][i] for r in range(len(rows))]
        nulls = sum(v is None for v in vals)
        if stats["nullCount"].get(c[0]) != nulls:
            fail(f"{label}: delta nullCount {c[0]} {stats['nullCount'].get(c[0])}, want {nulls}")
        nn = [v for v in vals if v is not None]
        if c[3] == "int" and c[1] in ("int8", "int16", "int32", "int64", "int32/io.debezium.time.Year") and nn:
            if stats["minValues"].get(c[0]) != min(nn) or stats["maxValues"].get(c[0]) != max(nn):
                fail(f"{label}: delta min/max {c[0]}: {stats['minValues'].get(c[0])}..{stats['maxValues'].get(c[0])}")
        if c[3] == "dec" and nn:
            gmin = stats["minValues"].get(c[0])
            if gmin is None or decimal.Decimal(str(gmin)) != min(nn):
                fail(f"{label}: delta min {c[0]}: {gmin}, want {min(nn)}")
        if c[1] == "int32/io.debezium.time.Date" and nn:
            g = stats["minValues"].get(c[0])
            lo = min(nn)
            y = (datetime.date(1970, 1, 1) + datetime.timedelta(days=lo)).isoformat() \
                if -719162 <= lo <= 2932896 else None
            if g != y:
                fail(f"{label}: delta min {c[0]}: {g!r}, want {y!r}")
    print(f"ok {label}: {len(rows)} rows, {md.num_row_groups} row groups ({' '.join(args)})")


def check_infinity():
    """PostgreSQL's 'infinity' and '-infinity' of date, timestamp and
    timestamptz: DuckDB's isinf() is true of each, with the sign kept, and
    pyarrow reads the stored integers as the largest value and its negation
    (the most negative integer is an ordinary value to DuckDB)."""
    cols = [("dt", "int32/io.debezium.time.Date"), ("ts", "int64/io.debezium.time.MicroTimestamp"),
            ("tz", "string/io.debezium.time.ZonedTimestamp")]
    rows = [["infinity"] * 3, ["-infinity"] * 3, ["1970-01-02", "1970-01-01 00:00:01", "1970-01-01T00:00:01Z"]]
    out, _ = write_file("infinity", [(c[0], c[1], str, "str", None) for c in cols], rows, [])
    if not out:
        return
    t = pq.read_table(out)
    raw = {c: t.column(c).cast(ARROW_INT[k] if k in ARROW_INT else pa.int64()).to_pylist() for c, k in cols}
    lim = {"dt": 2**31 - 1, "ts": 2**63 - 1, "tz": 2**63 - 1}
    for c, _ in cols:
        if raw[c][:2] != [lim[c], -lim[c]]:
            fail(f"infinity: pyarrow column {c}: {raw[c][:2]}, want {[lim[c], -lim[c]]}")
    got = duckdb.connect().execute(
        f"SELECT isinf(dt), isinf(ts), isinf(tz), dt > DATE '1970-01-01', ts > TIMESTAMP '1970-01-01', "
        f"tz > TIMESTAMPTZ '1970-01-01 00:00:00+00' FROM read_parquet('{out}')").fetchall()
    want = [(True, True, True, True, True, True), (True, True, True, False, False, False),
            (False, False, False, True, True, True)]
    if got != want:
        fail(f"infinity: duckdb isinf and sign {got}, want {want}")


def check_delta():
    """Integers the writer encodes as DELTA_BINARY_PACKED (ordered or slowly
    changing ones): ascending, descending, a step of 1 that wraps around
    the type (INT64_MAX then INT64_MIN), one step from INT64_MIN to
    INT64_MAX (a miniblock 64 bits wide among narrow ones), NULLs between
    values, dates and timestamps, in pages whose value counts end anywhere in a block of 128
    (row groups of 33, 129, 161 and 20,000 rows, and 1 value after them).
    Both readers must read them back, and the footer must name the encoding
    (else this test would pass on PLAIN pages alone); an unordered column
    beside them stays PLAIN."""
    cols = [("seq", "int64", int, "int", None), ("wrap", "int64", int, "int", None),
            ("desc32", "int32", int, "int", None), ("wrap32", "int32", int, "int", None),
            ("sm16", "int16", int, "int", None), ("nullseq", "int64", int, "int", None),
            ("tsa", "int64/io.debezium.time.MicroTimestamp", ts_us, "int", None),
            ("dta", "int32/io.debezium.time.Date", date_days, "int", None),
            ("rnd", "int64", int, "int", None), ("spike", "int64", int, "int", None),
            ("spike32", "int32", int, "int", None)]

    def wrapped(v, bits):
        return (v + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))

    t0 = datetime.datetime(2024, 1, 1)
    rows = []
    for r in range(20001):
        wrap = str(wrapped((1 << 63) - 10000 + r, 64))
        wrap32 = str(wrapped((1 << 31) - 10000 + r, 32))
        spike = "-9223372036854775808" if r == 10000 else "9223372036854775807" if r == 10001 else str(r * 3)
        spike32 = "-2147483648" if r == 10000 else "2147483647" if r == 10001 else str(r * 3)
        rows.append([str(r), wrap, str(1000000 - 7 * r), wrap32, str(r % 30000 - 15000),
                     None if r % 5 == 0 else str(r),
                     (t0 + datetime.timedelta(seconds=r, microseconds=r % 7)).strftime("%Y-%m-%d %H:%M:%S.%f"),
                     (datetime.date(1900, 1, 1) + datetime.timedelta(days=r)).isoformat(),
                     str(r * 2654435761 % 1000003 * 9223372036), spike, spike32])
    delta = {c[0] for c in cols} - {"rnd"}
    for label, args, rg in (("delta", [], None), ("delta-rg33", ["-r", "33"], 33),
                            ("delta-rg129", ["-r", "129", "-c", "snappy"], 129),
                            ("delta-rg161", ["-r", "161", "-c", "none"], 161)):
        check_file(label, cols, rows, args, rg_rows=rg)
        md = pq.ParquetFile(os.path.join(WORK, label + ".parquet")).metadata
        for i, c in enumerate(cols):
            encs = set()
            for g in range(md.num_row_groups):
                encs.update(md.row_group(g).column(i).encodings)
            if (c[0] in delta) != ("DELTA_BINARY_PACKED" in encs):
                fail(f"{label}: column {c[0]}: encodings {sorted(encs)}, want DELTA_BINARY_PACKED "
                     f"{'among them' if c[0] in delta else 'not among them'}")


def main():
    check_infinity()
    n = max(len(c[4]) for c in COLUMNS)
    rows = [[c[4][r % len(c[4])] for c in COLUMNS] for r in range(n)]
    for codec in ("zstd", "snappy", "none"):
        check_file(f"types-{codec}", COLUMNS, rows, ["-c", codec])
    check_file("types-rg3", COLUMNS, rows, ["-r", "3"], rg_rows=3)
    check_file("types-rg1", COLUMNS, rows, ["-r", "1", "-c", "snappy"], rg_rows=1)
    check_file("types-empty", COLUMNS, [], [])
    check_file("types-one", COLUMNS, rows[:1], [])
    check_file("types-one-null", COLUMNS, [[None] * len(COLUMNS)], [])
    # Many rows: pages of 1 MiB, NULL patterns for the level encoder, row groups;
    # "late" has its row group's first NULL after two pages of values (the
    # writer buffers levels only from a row group's first NULL on).
    big_cols = [("id", "int64", int, "int", None), ("v", "string", str, "str", None),
                ("f", "float64", f64, "float", None), ("flag", "boolean", lambda t: t == "t", "eq", None),
                ("late", "string", str, "str", None)]
    big = []
    for r in range(300000):
        nul = (r % 7 == 0) or (r // 1000) % 5 == 0 or (r % 50000) < 20
        big.append([str(r * 2654435761 % 1000003 - 500000), None if nul else f"value {r}",
                    None if r % 3 == 0 else repr(r / 7), None if r % 11 == 0 else "tf"[r % 2],
                    None if r % 120000 in (100000, 119999) else f"late value {r:012d}"])
    check_file("big", big_cols, big, ["-r", "120000"], rg_rows=120000)
    check_file("big-snappy", big_cols, big, ["-c", "snappy"])
    check_delta()
    if failures:
        print(f"{len(failures)} mismatches")
        sys.exit(1)
    print("all Parquet reader checks passed")


main()
# As in read_table.py: no interpreter teardown, where the readers' native worker threads can
# abort the process after every check passed.
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
