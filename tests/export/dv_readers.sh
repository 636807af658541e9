#!/usr/bin/env bash
# dv_readers.sh: the deletion vector codec (query/dv.c, through
# tests/export/dv_write.c) against readers we did not write, in one Spark
# session (about a minute and a half on 2 cores):
#  1. Spark's vectors: Spark writes a table of ids 0..99999 in one file and
#     deletes id % 100 = 7, then id = 3; our reader must return exactly those
#     row indexes from Spark's vector file, and our writer must produce the
#     same bytes (the serialized vector, and the whole one-vector file).
#  2. Our vectors: a Delta table written by hand (protocol 3/7 with the
#     deletionVectors feature) of 5 Parquet files (pyarrow, several row
#     groups each); version 1 removes each file and adds it back with a
#     vector: four in one file written by dv_write (offsets 1 and beyond:
#     sparse rows, a dense bitmap container, rows past 65536 only, 4096 and
#     4097 values in two containers) and one inline ("i").  Spark and
#     deltalake (QueryBuilder: its to_pyarrow_table refuses deletion vectors)
#     must both return exactly the surviving ids, version 0 all of them.
#  3. Spark deletes one more row of ours (it must read our vector and merge
#     into its own); both readers read that version too.
# Uses build/libcdcstore.a (BUILD=dir to choose); KEEP=1 keeps the work dir.
# Exits non-zero on any mismatch.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. tests/lib/venv.sh
venv_ensure pyarrow deltalake pyspark delta-spark

BUILD=${BUILD:-build}
[ -f "$BUILD/libcdcstore.a" ] || make --no-print-directory BUILD="$BUILD" lib
WORK=$(mktemp -d /tmp/cdcdv.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT; echo "work dir $WORK"
PKGS="rocksdb rdkafka libcjson liburing libpq"
cc -O2 -g -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -Iinclude -Istore -o "$WORK/dv_write" tests/export/dv_write.c \
    "$BUILD/libcdcstore.a" $(pkg-config --libs $PKGS) -lzstd -lsnappy -lpthread -lm

DV_WRITE="$WORK/dv_write" WORK="$WORK" ROOT="$ROOT" nice "$VENV_PY" - <<'EOF'
import glob, json, os, subprocess, sys, time
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "export"))
import pyarrow as pa, pyarrow.parquet as pq
from read_table import spark_session

W, DVW = os.environ["WORK"], os.environ["DV_WRITE"]
fails = []

def check(what, got, want):
    ok = got == want
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": got {len(got)} values, want {len(want)}"
          f"; first differences {sorted(set(got) ^ set(want))[:10]}"), flush=True)
    if not ok:
        fails.append(what)

def dvw(*args, stdin=""):
    return subprocess.run([DVW, *args], input=stdin.encode() if isinstance(stdin, str) else stdin,
                          capture_output=True, check=True).stdout

def log_actions(p, v):
    with open(f"{p}/_delta_log/{v:020d}.json") as f:
        return [json.loads(l) for l in f if l.strip()]

spark = spark_session(W)

# ---- 1. Spark's vectors read by us, and our bytes against Spark's ----
sp = f"{W}/spark"
spark.range(0, 100000).selectExpr("id", "cast(id * 2 as string) s").coalesce(1).write.format("delta") \
    .option("delta.enableDeletionVectors", "true").save(sp)
spark.sql(f"DELETE FROM delta.`{sp}` WHERE id % 100 = 7")
spark.sql(f"DELETE FROM delta.`{sp}` WHERE id = 3")
want1 = [i for i in range(100000) if i % 100 == 7]
want2 = sorted(want1 + [3])
for v, want in ((1, want1), (2, want2)):
    dv = [a["add"]["deletionVector"] for a in log_actions(sp, v) if "add" in a][0]
    print(f"Spark's vector of version {v}: {dv}")
    rows = [int(x) for x in dvw("read", sp, dv["pathOrInlineDv"], str(dv.get("offset", 0)), str(dv["sizeInBytes"]),
                                str(dv["cardinality"])).split()]
    check(f"our reader on Spark's vector v{v}", rows, want)
    ours = dvw("serialize", stdin=" ".join(map(str, want)) + "\n")
    # the file holding Spark's vector: the one with our bytes at the descriptor's offset
    theirs_file = None
    for f in glob.glob(f"{sp}/deletion_vector_*.bin"):
        b = open(f, "rb").read()
        if len(b) >= dv["offset"] + 4 + dv["sizeInBytes"] + 4 and \
           int.from_bytes(b[dv["offset"]:dv["offset"] + 4], "big") == dv["sizeInBytes"] and \
           b[dv["offset"] + 4:dv["offset"] + 4 + dv["sizeInBytes"]] == ours:
            theirs_file = b
    check(f"our serialized bytes equal Spark's v{v}", [theirs_file is not None], [True])
    if theirs_file is not None:
        d = f"{W}/ours{v}"
        os.makedirs(d)
        dvw("file", d, stdin=" ".join(map(str, want)) + "\n")
        mine = open(glob.glob(f"{d}/deletion_vector_*.bin")[0], "rb").read()
        check(f"our whole vector file equals Spark's v{v} (version, size, bytes, CRC)", [mine == theirs_file], [True])

# ---- 2. our vectors in a table written by hand ----
N = 100000
t = f"{W}/t"
os.makedirs(f"{t}/_delta_log")
sets = {
    "sparse": sorted(set([0, 3, 7, 99, 65535, 65536, N - 1] + list(range(11, N, 1013)))),
    "dense": list(range(1000, 9000)) + [70000],          # 8000 in container 0: a bitmap
    "past65536": list(range(65536, N, 3)),                 # container 1 only
    "edges": list(range(0, 8192, 2)) + list(range(65536, 65536 + 8194, 2)),  # 4096 (array), 4097 (bitmap)
    "inline": [5, 6, N - 2],
}
names = list(sets)
schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                       {"name": "s", "type": "string", "nullable": True, "metadata": {}}]}
now = int(time.time() * 1000)
files, v0 = [], []
v0.append({"commitInfo": {"timestamp": now, "operation": "WRITE", "operationParameters": {"mode": "Append"}}})
v0.append({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                        "writerFeatures": ["deletionVectors"]}})
v0.append({"metaData": {"id": "5f1e2d3c-0000-4000-8000-000000000001", "format": {"provider": "parquet", "options": {}},
                        "schemaString": json.dumps(schema), "partitionColumns": [],
                        "configuration": {"delta.enableDeletionVectors": "true"}, "createdTime": now}})
def stats(lo, hi, tight):
    return json.dumps({"numRecords": N, "minValues": {"id": lo}, "maxValues": {"id": hi},
                       "nullCount": {"id": 0, "s": 0}, "tightBounds": tight})
for k, name in enumerate(names):
    base = k * N
    path = f"part-{k:05d}-{name}.parquet"
    ids = list(range(base, base + N))
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "s": pa.array([str(i) for i in ids])}),
                   f"{t}/{path}", row_group_size=30000)
    size = os.path.getsize(f"{t}/{path}")
    files.append((path, size, base))
    v0.append({"add": {"path": path, "partitionValues": {}, "size": size, "modificationTime": now,
                       "dataChange": True, "stats": stats(base, base + N - 1, True)}})
with open(f"{t}/_delta_log/{0:020d}.json", "w") as f:
    f.write("".join(json.dumps(a) + "\n" for a in v0))

out = dvw("file", t, stdin="".join(" ".join(map(str, sets[n])) + "\n" for n in names[:4])).decode().split("\n")
descs = [json.loads(l) for l in out if l.strip()]
descs.append(json.loads(dvw("inline", stdin=" ".join(map(str, sets["inline"])) + "\n")))
print("our descriptors:", *[json.dumps(d)[:160] for d in descs], sep="\n  ")
v1 = [{"commitInfo": {"timestamp": now + 1000, "operation": "DELETE", "operationParameters": {}, "readVersion": 0}}]
for (path, size, base), d in zip(files, descs):
    v1.append({"remove": {"path": path, "deletionTimestamp": now + 1000, "dataChange": True,
                          "extendedFileMetadata": True, "partitionValues": {}, "size": size,
                          "stats": json.dumps({"numRecords": N})}})
    v1.append({"add": {"path": path, "partitionValues": {}, "size": size, "modificationTime": now,
                       "dataChange": True, "stats": stats(base, base + N - 1, False), "deletionVector": d}})
with open(f"{t}/_delta_log/{1:020d}.json", "w") as f:
    f.write("".join(json.dumps(a) + "\n" for a in v1))

all_ids = list(range(len(names) * N))
deleted = set()
for k, n in enumerate(names):
    deleted |= {k * N + r for r in sets[n]}
want_v1 = [i for i in all_ids if i not in deleted]

def spark_ids(p, version=None):
    r = spark.read.format("delta")
    if version is not None:
        r = r.option("versionAsOf", version)
    return sorted(x.id for x in r.load(p).select("id").collect())

def dl_ids(p, version=None):
    from deltalake import DeltaTable, QueryBuilder
    dt = DeltaTable(p) if version is None else DeltaTable(p, version=version)
    tab = QueryBuilder().register("t", dt).execute("select id from t").read_all()
    return sorted(tab.column("id").to_pylist())

for reader, fn in (("Spark", spark_ids), ("deltalake", dl_ids)):
    check(f"{reader} reads version 1 (our vectors)", fn(t), want_v1)
    check(f"{reader} reads version 0 (time travel: every row)", fn(t, 0), all_ids)

# ---- 3. Spark adds to one of our vectors ----
more = {1 * N + 12, 2 * N + 70001}
spark.sql(f"DELETE FROM delta.`{t}` WHERE id IN ({', '.join(map(str, sorted(more)))})")
want_v2 = [i for i in want_v1 if i not in more]
for reader, fn in (("Spark", spark_ids), ("deltalake", dl_ids)):
    check(f"{reader} reads version 2 (Spark's vectors merged from ours)", fn(t), want_v2)
for a in log_actions(t, 2):
    if "add" in a:
        dv = a["add"]["deletionVector"]
        k = [i for i, (p, s, b) in enumerate(files) if p == a["add"]["path"]][0]
        if dv["storageType"] != "u":
            continue
        rows = [int(x) for x in dvw("read", t, dv["pathOrInlineDv"], str(dv.get("offset", 0)),
                                    str(dv["sizeInBytes"]), str(dv["cardinality"])).split()]
        check(f"our reader on Spark's merged vector of {a['add']['path']}", rows,
              sorted(set(sets[names[k]]) | {i - k * N for i in more if k * N <= i < (k + 1) * N}))
spark.stop()
print("all readers agree" if not fails else f"{len(fails)} check(s) failed: {fails}")
sys.exit(1 if fails else 0)
EOF
