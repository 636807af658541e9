#!/usr/bin/env python3
"""Reads an exported table with an independent reader and prints it as CSV in PostgreSQL's text forms.

Usage: read_table.py --reader {pyarrow,duckdb,deltalake,spark} [--version N] [--sort col,col]
                     [--columns col,col] [--naive col,col] [--schema] PATH

PATH is a Parquet file (pyarrow, duckdb, spark) or a Delta table directory (deltalake, spark).
--version N reads version N of a Delta table (deltalake, spark); --columns prints only those columns,
in that order (the rows sorted first, so --sort may name others). Runs in the venv of
tests/lib/venv.sh (venv_ensure "${VENV_READERS[@]}"); spark needs Java 17 and, on its first use,
Maven Central (the Delta jars go to $ROOT/.cache/ivy, or $CDC_IVY_DIR).

The output is what `COPY (SELECT * FROM t ORDER BY key) TO STDOUT WITH (FORMAT csv, HEADER)` prints
for the source table in a session with TimeZone UTC, so a test compares the two texts:
  - a header line of the column names, then one line per row, sorted by the --sort columns (each
    by its value: numbers as numbers, text by code point as under the C collation, NULLs last);
    rows equal in those columns keep the reader's order
  - NULL is an empty field; a field is quoted ("" doubling a quote) when it holds a comma, a quote,
    CR or LF, is the empty string, or is \\. in a table of one column
  - integers as integers; booleans t/f
  - float8 and float4 in the shortest digits that read back as the same double or float32, as
    PostgreSQL 15's Ryu finds them: a decimal exactly halfway to the neighbouring value is not
    taken (Python's repr and numpy take it: 4.3328846914697264e+16 is repr's
    4.332884691469726e+16); laid out as PostgreSQL does: plain notation for decimal exponents
    -4..14 (float8) or -4..5 (float4), else d.ddde+XX; -0, NaN, Infinity, -Infinity
  - decimals with exactly the type's scale in digits (numeric(p,s)); -0.00 prints as 0.00
  - text and JSON as they are; bytes as \\x and lowercase hex; UUIDs in lowercase 8-4-4-4-12
  - date YYYY-MM-DD, time HH:MM:SS[.ffffff] (24:00:00 possible), timestamp without zone
    YYYY-MM-DD HH:MM:SS[.ffffff], timestamp with zone the same in UTC followed by +00; the
    fraction drops its trailing zeros; a year before 1 prints as PostgreSQL's "YYYY-MM-DD BC"
    (astronomical year 0 is 1 BC; timestamps end in "... BC" after the zone). Temporal values go
    through their integer form (days, microseconds) in every reader, not Python's datetime, so
    BC dates and 24:00:00 print too
  - arrays of scalars as PostgreSQL's {a,b,NULL} (one dimension)
  - a timestamp with zone that the source holds as timestamp without zone (a writer that keeps
    Delta's protocol 1/2, which has no timestamp_ntz, stores such a column as UTC instants): name
    it in --naive and it prints without +00

--schema prints instead one line per column: its name, a tab, and the reader's own type for it
(pyarrow: Arrow types; duckdb: DuckDB types; deltalake: the Delta schema's types; spark: Spark SQL
simple strings), so a test checks the logical types the writer chose.

What each reader makes of the Parquet logical types (pyarrow 26, duckdb 2.0, deltalake 1.6, Spark
4.2 with delta-spark 4.4): UUID is extension<arrow.uuid> / UUID, and Spark refuses the file
(PARQUET_TYPE_ILLEGAL); JSON is extension<arrow.json> / JSON / string; TIME(micros) is
time64[us] / TIME / time(6), the last only with spark.sql.timeType.enabled (set here); DECIMAL is
decimal128(p, s) / DECIMAL(p,s) / decimal(p,s); a timestamp not adjusted to UTC is timestamp[us] /
TIMESTAMP / timestamp_ntz, one adjusted timestamp[us, tz=UTC] / TIMESTAMP WITH TIME ZONE /
timestamp. Spark reads dates before 1582 of a Parquet file not written by Spark only with the
rebase mode CORRECTED (set here). DuckDB reads no Delta table here (its delta extension is not on
PyPI). deltalake and Spark read Delta protocol 1/2 without features, and 3/7 with timestampNtz.
"""

import argparse
import decimal
import math
import os
import struct
import sys
import tempfile
import uuid
from fractions import Fraction

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
US_PER_DAY = 86_400_000_000


# ---------------------------------------------------------------------------------------------
# Canonical text of one value. A column is (name, kind, arg, values); values are Python scalars:
# kinds bool, int, text, json, bytes, uuid (uuid.UUID, 16 bytes or text), float4, float8,
# decimal (arg = scale), date (days since 1970-01-01), time, ts, tstz (microseconds since
# midnight / since 1970-01-01 00:00 UTC), list (arg = the element kind, (kind, arg)).

def civil_from_days(z):
    """Proleptic Gregorian (year, month, day) of a day count from 1970-01-01 (any sign)."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


def fmt_date(days):
    y, m, d = civil_from_days(days)
    bc = y <= 0
    return f"{1 - y if bc else y:04d}-{m:02d}-{d:02d}", bc


def fmt_time(us):
    s, frac = divmod(us, 1_000_000)
    h, s = divmod(s, 3600)
    mi, s = divmod(s, 60)
    out = f"{h:02d}:{mi:02d}:{s:02d}"
    if frac:
        out += "." + f"{frac:06d}".rstrip("0")
    return out


def fmt_timestamp(us, zone):
    days, tod = divmod(us, US_PER_DAY)
    date, bc = fmt_date(days)
    return f"{date} {fmt_time(tod)}{'+00' if zone else ''}{' BC' if bc else ''}"


def float_digits(x, single):
    """(n, k): n * 10**k is the shortest decimal strictly inside the interval of reals that round
    to x (positive, finite), the nearest to x among those of its length, ties to even. This is
    Ryu as PostgreSQL builds it (acceptBounds false: a decimal on the boundary between x and its
    neighbour is not taken, where Python's repr and numpy take it when x's mantissa is even)."""
    if single:
        bits = struct.unpack("<I", struct.pack("<f", x))[0]
        mbits, ebits, bias = 23, 8, 127
    else:
        bits = struct.unpack("<Q", struct.pack("<d", x))[0]
        mbits, ebits, bias = 52, 11, 1023
    man = bits & ((1 << mbits) - 1)
    exp = (bits >> mbits) & ((1 << ebits) - 1)
    m2, e2 = (man, 1 - bias - mbits) if exp == 0 else (man | (1 << mbits), exp - bias - mbits)
    ulp = Fraction(2) ** e2
    v = m2 * ulp
    hi = v + ulp / 2
    lo = v - (ulp / 4 if man == 0 and exp > 1 else ulp / 2)
    # Start from the exponent of the shortest text that reads back as x (repr; numpy's str for a
    # float32): the interval here is no wider, so its shortest has no larger exponent.
    try:
        if single:
            import numpy
            text = str(numpy.float32(x))
        else:
            text = repr(x)
        k = decimal.Decimal(text).normalize().as_tuple().exponent + 1
    except ImportError:
        k = (hi.numerator.bit_length() - hi.denominator.bit_length()) * 30103 // 100000 + 2
    while True:
        p = Fraction(10) ** k
        if (math.floor(lo / p) + 1) * p < hi:
            break
        k -= 1
    q = v / p
    n = math.floor(q)
    rem = q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    if n * p <= lo:
        n += 1
    return n, k


def fmt_float(x, single):
    """PostgreSQL 15's float4out/float8out: the shortest digits (float_digits) in plain notation
    for decimal exponents -4..14 (float8) or -4..5 (float4), else as d.ddde+XX."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    neg = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return neg + "0"
    n, k = float_digits(abs(float(x)), single)
    ds = str(n).rstrip("0")
    k += len(str(n)) - len(ds)
    e = k + len(ds) - 1  # decimal exponent of the first digit
    if -4 <= e < (6 if single else 15):
        if e >= 0:
            whole, frac = ds[:e + 1].ljust(e + 1, "0"), ds[e + 1:]
            return neg + whole + ("." + frac if frac else "")
        return neg + "0." + "0" * (-e - 1) + ds
    return f"{neg}{ds[0]}{'.' + ds[1:] if len(ds) > 1 else ''}e{'-' if e < 0 else '+'}{abs(e):02d}"


def fmt_decimal(d, scale):
    if scale is None:
        scale = max(0, -d.as_tuple().exponent)
    if d == 0:
        d = abs(d)
    return f"{d:.{scale}f}"


def fmt_uuid(v):
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return str(uuid.UUID(bytes=bytes(v)))
    return str(uuid.UUID(v))


def fmt_value(v, kind, arg):
    """Text of a non-NULL value."""
    if kind == "bool":
        return "t" if v else "f"
    if kind == "int":
        return str(int(v))
    if kind in ("text", "json"):
        return v
    if kind == "bytes":
        return "\\x" + bytes(v).hex()
    if kind == "uuid":
        return fmt_uuid(v)
    if kind in ("float4", "float8"):
        return fmt_float(v, kind == "float4")
    if kind == "decimal":
        return fmt_decimal(v, arg)
    if kind == "date":
        text, bc = fmt_date(v)
        return text + (" BC" if bc else "")
    if kind == "time":
        return fmt_time(v)
    if kind in ("ts", "tstz"):
        return fmt_timestamp(v, kind == "tstz")
    if kind == "list":
        return fmt_array(v, *arg)
    raise SystemExit(f"read_table: no text form for kind {kind}")


def fmt_array(items, kind, arg):
    out = []
    for it in items:
        if it is None:
            out.append("NULL")
            continue
        s = fmt_value(it, kind, arg)
        if s == "" or s.upper() == "NULL" or any(c in s for c in '{},"\\ \t\n\r\v\f'):
            s = '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out.append(s)
    return "{" + ",".join(out) + "}"


def csv_field(s, single):
    """A field as COPY ... (FORMAT csv) writes it (NULL is None)."""
    if s is None:
        return ""
    if s == "" or any(c in s for c in ',"\r\n') or (single and s == "\\."):
        return '"' + s.replace('"', '""') + '"'
    return s


def sort_key(v, kind):
    if v is None:
        return (1, 0)
    if kind in ("float4", "float8"):
        return (0, (1, 0.0) if v != v else (0, float(v)))
    if kind == "uuid":
        return (0, fmt_uuid(v))
    if kind == "bytes":
        return (0, bytes(v))
    return (0, v)


def print_table(cols, sort_cols, naive, only, out):
    names = [c[0] for c in cols]
    for n in sort_cols + naive + only:
        if n not in names:
            raise SystemExit(f"read_table: no column {n} (columns: {', '.join(names)})")
    kinds = []
    for name, kind, arg, _ in cols:
        if name in naive:
            if kind != "tstz":
                raise SystemExit(f"read_table: --naive {name}: the column is {kind}, not a timestamp with zone")
            kind = "ts"
        kinds.append((kind, arg))
    nrows = len(cols[0][3]) if cols else 0
    order = list(range(nrows))
    if sort_cols:
        idx = [names.index(n) for n in sort_cols]
        order.sort(key=lambda r: tuple(sort_key(cols[i][3][r], kinds[i][0]) for i in idx))
    shown = [names.index(n) for n in only] if only else range(len(cols))
    single = len(shown) == 1
    lines = [",".join(csv_field(names[i], single) for i in shown)]
    for r in order:
        fields = []
        for i in shown:
            values, (kind, arg) = cols[i][3], kinds[i]
            v = values[r]
            fields.append(csv_field(None if v is None else fmt_value(v, kind, arg), single))
        lines.append(",".join(fields))
    out.write("\n".join(lines) + "\n")
    out.flush()


# ---------------------------------------------------------------------------------------------
# Arrow (pyarrow and deltalake)

def arrow_kind(t):
    import pyarrow as pa
    if isinstance(t, pa.BaseExtensionType):
        ext = t.extension_name
        if ext == "arrow.uuid":
            return "uuid", None
        if ext == "arrow.json":
            return "json", None
        return arrow_kind(t.storage_type)
    if pa.types.is_dictionary(t):
        return arrow_kind(t.value_type)
    if pa.types.is_boolean(t):
        return "bool", None
    if pa.types.is_integer(t):
        return "int", None
    if pa.types.is_float32(t) or pa.types.is_float16(t):
        return "float4", None
    if pa.types.is_float64(t):
        return "float8", None
    if pa.types.is_decimal(t):
        return "decimal", t.scale
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "text", None
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
            or pa.types.is_fixed_size_binary(t)):
        return "bytes", None
    if pa.types.is_date(t):
        return "date", None
    if pa.types.is_time(t):
        return "time", None
    if pa.types.is_timestamp(t):
        return ("tstz" if t.tz is not None else "ts"), None
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return "list", arrow_kind(t.value_type)
    raise SystemExit(f"read_table: no text form for the Arrow type {t}")


def arrow_values(arr, kind):
    """Python values of an Arrow (chunked) array, temporal ones as integers."""
    import pyarrow as pa
    import pyarrow.compute as pc
    t = arr.type
    if isinstance(t, pa.BaseExtensionType) and kind not in ("uuid", "json"):
        arr = arr.cast(t.storage_type) if isinstance(arr, pa.ChunkedArray) else arr.storage
        t = arr.type
    if pa.types.is_dictionary(t):
        arr = pc.cast(arr, t.value_type)
        t = arr.type
    if kind == "date":
        if pa.types.is_date64(t):
            return [None if v is None else v // 86_400_000 for v in pc.cast(arr, pa.int64()).to_pylist()]
        return pc.cast(arr, pa.int32()).to_pylist()
    if kind in ("time", "ts", "tstz"):
        unit = t.unit
        mul = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": None}[unit]
        ints = pc.cast(arr, pa.int64()).to_pylist()
        if mul is None:
            return [None if v is None else v // 1000 for v in ints]
        return [None if v is None else v * mul for v in ints]
    if kind == "list":
        ek = arrow_kind(t.value_type)[0]
        if ek in ("date", "time", "ts", "tstz", "uuid"):
            chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
            out = []
            for ch in chunks:
                flat = arrow_values(ch.values, ek)
                offs = ch.offsets.to_pylist()
                for i in range(len(ch)):
                    out.append(None if not ch[i].is_valid else flat[offs[i]:offs[i + 1]])
            return out
        return arr.to_pylist()
    if kind == "uuid" and isinstance(t, pa.BaseExtensionType):
        return [None if v is None else v for v in arr.to_pylist()]
    return arr.to_pylist()


def arrow_columns(table):
    cols = []
    for name, col in zip(table.column_names, table.columns):
        kind, arg = arrow_kind(col.type)
        cols.append((name, kind, arg, arrow_values(col, kind)))
    return cols


def is_delta(path):
    return os.path.isdir(os.path.join(path, "_delta_log"))


def read_pyarrow(a):
    import pyarrow.parquet as pq
    if is_delta(a.path):
        raise SystemExit("read_table: pyarrow reads Parquet files; a Delta table needs --reader deltalake or spark")
    table = pq.read_table(a.path)
    if a.schema:
        return [(f.name, str(f.type)) for f in table.schema]
    return arrow_columns(table)


def read_deltalake(a):
    from deltalake import DeltaTable
    if not is_delta(a.path):
        raise SystemExit("read_table: deltalake reads Delta tables (a directory with _delta_log)")
    dt = DeltaTable(a.path, version=a.version)
    if a.schema:
        return [(f.name, delta_type_text(f.type)) for f in dt.schema().fields]
    if "deletionVectors" in (dt.protocol().reader_features or []):
        # to_pyarrow_table() refuses deletion vectors (deltalake 1.6.6); its
        # DataFusion engine reads them (view types cast to the plain ones)
        import pyarrow as pa
        from deltalake import QueryBuilder
        tab = pa.table(QueryBuilder().register("t", dt).execute("select * from t").read_all())
        plain = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}
        return arrow_columns(tab.cast(pa.schema([pa.field(f.name, plain.get(f.type, f.type), f.nullable)
                                                 for f in tab.schema])))
    return arrow_columns(dt.to_pyarrow_table())


def delta_type_text(t):
    """The Delta schema's name of a type: long, decimal(38,2), timestamp_ntz, array<long>..."""
    name = type(t).__name__
    if name == "PrimitiveType":
        return t.type
    if name == "ArrayType":
        return f"array<{delta_type_text(t.element_type)}>"
    if name == "MapType":
        return f"map<{delta_type_text(t.key_type)},{delta_type_text(t.value_type)}>"
    if name == "StructType":
        return "struct<" + ",".join(f"{f.name}:{delta_type_text(f.type)}" for f in t.fields) + ">"
    return str(t)


# ---------------------------------------------------------------------------------------------
# DuckDB: its own Parquet reader and its own Python values; temporal values as integers in SQL.

def duck_kind(t):
    s = str(t).upper()
    if s == "BOOLEAN":
        return "bool", None
    if s in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
             "UINTEGER", "UBIGINT", "UHUGEINT"):
        return "int", None
    if s == "FLOAT":
        return "float4", None
    if s == "DOUBLE":
        return "float8", None
    if s.startswith("DECIMAL"):
        return "decimal", int(s[s.index(",") + 1:s.index(")")])
    if s == "VARCHAR":
        return "text", None
    if s == "JSON":
        return "json", None
    if s == "BLOB":
        return "bytes", None
    if s == "UUID":
        return "uuid", None
    if s == "DATE":
        return "date", None
    if s in ("TIME", "TIME_NS"):
        return "time", None
    if s in ("TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS"):
        return "ts", None
    if s == "TIMESTAMP WITH TIME ZONE":
        return "tstz", None
    if s.endswith("[]"):
        return "list", duck_kind(s[:-2])
    raise SystemExit(f"read_table: no text form for the DuckDB type {s}")


def read_duckdb(a):
    import duckdb
    if is_delta(a.path):
        raise SystemExit("read_table: duckdb reads Parquet files here (its delta extension is not "
                         "installed); a Delta table needs --reader deltalake or spark")
    con = duckdb.connect()
    rel = con.read_parquet(a.path)
    if a.schema:
        return [(n, str(t)) for n, t in zip(rel.columns, rel.types)]
    kinds, exprs = [], []
    for n, t in zip(rel.columns, rel.types):
        kind, arg = duck_kind(t)
        q = '"' + n.replace('"', '""') + '"'
        if kind == "date":
            q = f"date_diff('day', DATE '1970-01-01', {q})"
        elif kind == "time":
            q = f"epoch_us({q})"
        elif kind == "ts":
            q = f"epoch_us(CAST({q} AS TIMESTAMP))"
        elif kind == "tstz":
            q = f"epoch_us({q})"
        elif kind == "list" and arg[0] in ("date", "time", "ts", "tstz"):
            raise SystemExit(f"read_table: duckdb: arrays of {arg[0]} not handled")
        kinds.append((n, kind, arg))
        exprs.append(q)
    rows = rel.project(", ".join(exprs)).fetchall()
    return [(n, kind, arg, [r[i] for r in rows]) for i, (n, kind, arg) in enumerate(kinds)]


# ---------------------------------------------------------------------------------------------
# Spark: local[2] with delta-spark; temporal values as integers in Spark SQL (collect() would turn
# timestamps into naive datetimes of the local zone and fails before year 1).

LOG4J2 = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def spark_session(tmp):
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession
    ivy = os.environ.get("CDC_IVY_DIR") or os.path.join(ROOT, ".cache", "ivy")
    os.makedirs(ivy, exist_ok=True)
    log4j = os.path.join(tmp, "log4j2.properties")
    with open(log4j, "w") as f:
        f.write(LOG4J2)
    builder = (SparkSession.builder.appName("cdcstore-read-table").master("local[2]")
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
               .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
               .config("spark.jars.ivy", ivy)
               .config("spark.driver.memory", "2g")
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}"
                       # a short run: the C1 compiler alone and the serial GC start sooner
                       # (a read of a small Delta table: 17 s against 26 s on 2 cores)
                       " -XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.databricks.delta.snapshotPartitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               # Parquet files not written by Spark hold proleptic Gregorian dates and times:
               # read them as they are (the default EXCEPTION refuses dates before 1582).
               .config("spark.sql.parquet.datetimeRebaseModeInRead", "CORRECTED")
               .config("spark.sql.parquet.int96RebaseModeInRead", "CORRECTED")
               # Spark 4.2 has a TIME type but keeps it behind this switch (else TIME columns fail)
               .config("spark.sql.timeType.enabled", "true")
               .config("spark.sql.warehouse.dir", os.path.join(tmp, "warehouse"))
               .config("spark.local.dir", tmp))
    spark = configure_spark_with_delta_pip(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_kind(dt):
    from pyspark.sql import types as T
    if isinstance(dt, T.BooleanType):
        return "bool", None
    if isinstance(dt, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return "int", None
    if isinstance(dt, T.FloatType):
        return "float4", None
    if isinstance(dt, T.DoubleType):
        return "float8", None
    if isinstance(dt, T.DecimalType):
        return "decimal", dt.scale
    if isinstance(dt, (T.StringType, T.VarcharType, T.CharType)):
        return "text", None
    if isinstance(dt, T.BinaryType):
        return "bytes", None
    if isinstance(dt, T.DateType):
        return "date", None
    if isinstance(dt, T.TimestampNTZType):
        return "ts", None
    if isinstance(dt, T.TimestampType):
        return "tstz", None
    if type(dt).__name__ == "TimeType":
        return "time", None
    if isinstance(dt, T.ArrayType):
        return "list", spark_kind(dt.elementType)
    raise SystemExit(f"read_table: no text form for the Spark type {dt.simpleString()}")


def spark_columns(df):
    """A Spark DataFrame's columns as (name, kind, arg, values): dates as days and
    timestamps as microseconds since 1970, times as microseconds of the day."""
    kinds, exprs = [], []
    for f in df.schema.fields:
        kind, arg = spark_kind(f.dataType)
        q = "`" + f.name.replace("`", "``") + "`"
        if kind == "date":
            q = f"unix_date({q})"
        elif kind == "ts":
            q = f"unix_micros(CAST({q} AS TIMESTAMP))"  # the session's zone is UTC
        elif kind == "tstz":
            q = f"unix_micros({q})"
        elif kind == "time":
            q = f"time_diff('MICROSECOND', TIME'00:00:00', {q})"
        elif kind == "list" and arg[0] in ("date", "time", "ts", "tstz"):
            raise SystemExit(f"read_table: spark: arrays of {arg[0]} not handled")
        kinds.append((f.name, kind, arg))
        exprs.append(f"{q} AS `c{len(exprs)}`")
    rows = df.selectExpr(*exprs).collect()
    return [(n, kind, arg, [r[i] for r in rows]) for i, (n, kind, arg) in enumerate(kinds)]


def read_spark(a, tmp):
    delta = is_delta(a.path)
    if a.version is not None and not delta:
        raise SystemExit("read_table: --version needs a Delta table")
    spark = spark_session(tmp)
    try:
        if delta:
            r = spark.read.format("delta")
            if a.version is not None:
                r = r.option("versionAsOf", a.version)
            df = r.load(os.path.abspath(a.path))
        else:
            df = spark.read.parquet(os.path.abspath(a.path))
        if a.schema:
            return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
        return spark_columns(df)
    finally:
        spark.stop()


# ---------------------------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reader", required=True, choices=["pyarrow", "duckdb", "deltalake", "spark"])
    p.add_argument("--version", type=int, help="version of a Delta table (deltalake, spark)")
    p.add_argument("--sort", default="", help="key columns to sort the rows by, comma-separated")
    p.add_argument("--columns", default="", help="the columns to print, comma-separated (default all)")
    p.add_argument("--naive", default="", help="timestamp-with-zone columns to print without zone")
    p.add_argument("--schema", action="store_true", help="print the columns and the reader's types")
    p.add_argument("path")
    a = p.parse_args()
    if not os.path.exists(a.path):
        raise SystemExit(f"read_table: {a.path}: no such file or directory")
    if a.version is not None and a.reader in ("pyarrow", "duckdb"):
        raise SystemExit(f"read_table: --version is for Delta tables (--reader deltalake or spark)")
    sort_cols = [c for c in a.sort.split(",") if c]
    naive = [c for c in a.naive.split(",") if c]
    only = [c for c in a.columns.split(",") if c]

    if a.reader != "spark":
        cols = {"pyarrow": read_pyarrow, "duckdb": read_duckdb, "deltalake": read_deltalake}[a.reader](a)
        out = sys.stdout
    else:
        # The JVM inherits this process's descriptors: its output (Ivy's resolution report, log
        # lines) goes to a log file, printed only when the read fails; the CSV to the real stdout.
        out = os.fdopen(os.dup(1), "w")
        err = os.dup(2)
        with tempfile.TemporaryDirectory(prefix="read_table-spark-") as tmp:
            log = os.path.join(tmp, "jvm.log")
            fd = os.open(log, os.O_WRONLY | os.O_CREAT, 0o644)
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
            try:
                cols = read_spark(a, tmp)
            except SystemExit:
                raise
            except Exception as e:
                os.dup2(err, 2)
                if type(e).__module__.startswith("pyspark.errors"):
                    # Spark refused the read (an unknown Parquet type, a protocol it lacks...)
                    msg = str(e).strip().splitlines()
                    raise SystemExit(f"read_table: spark: {type(e).__name__}: {msg[0] if msg else ''}")
                with open(log, errors="replace") as f:
                    tail = f.read()[-4000:]
                if tail:
                    sys.stderr.write("read_table: spark's output (JVM, Ivy):\n" + tail)
                raise
            finally:
                os.dup2(err, 2)
                os.dup2(err, 1)  # stray prints of the JVM's last moments go to stderr
    if a.schema:
        types = dict(cols)
        for name in only or types:
            if name not in types:
                raise SystemExit(f"read_table: no column {name} (columns: {', '.join(types)})")
            out.write(f"{name}\t{types[name]}\n")
        out.flush()
        return
    print_table(cols, sort_cols, naive, only, out)


if __name__ == "__main__":
    main()
    # Leave without the interpreter's teardown: deltalake's and Arrow's worker threads can
    # still be alive then, and the native runtime they use aborts the process ("terminate
    # called without an active exception", exit 134) once in a few runs, after the table
    # was read and printed. The output is complete and flushed here; errors above still
    # exit through SystemExit with their message and status.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
